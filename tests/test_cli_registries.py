"""Option choices that name registry entries come from the registries, not from lists beside them."""

from __future__ import annotations

import pytest

from modelseek.retrieval.executors import EXECUTORS


@pytest.mark.parametrize("command", [("finetune",), ("rank",)])
def test_executor_choices_are_the_registry(cli, monkeypatch, command):
    monkeypatch.setitem(EXECUTORS._items, "throwaway-executor", object)  # removed again after the test
    r = cli(*command, "--help")
    assert r.code == 0, r.err
    assert "{" + ",".join(EXECUTORS.names()) + "}" in r.out.replace("\n", "").replace(" ", "")
    assert "throwaway-executor" in r.out


def test_unknown_executor_lists_the_registered_ones(cli):
    r = cli("finetune", "--pool", "p", "--tasks", "t", "--out", "o.csv", "--executor", "nope")
    assert r.code == 2
    assert "invalid choice: 'nope'" in r.err and all(repr(n) in r.err for n in EXECUTORS.names())
