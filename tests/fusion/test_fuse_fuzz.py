"""Fuzzing ``modelseek fuse`` (issue #14's property): a damaged run file, ground truth or saved fusion ends in
exit 0 with a valid run, or exit 1 with one located error naming the damaged file -- never a traceback."""

from __future__ import annotations


import pytest
from hypothesis import given
from hypothesis import strategies as st

import modelseek as ms
from modelseek.testing.cli import run_cli
from modelseek.testing.fusion_zoo import write_fusion_zoo
from modelseek.testing.fuzz import assert_clean_exit, damaged, fuzz_settings

FUZZ = fuzz_settings(25)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    root = tmp_path_factory.mktemp("fusefuzz")
    truth, runs, paths, gt = write_fusion_zoo(root, n_tasks=8, n_models=5, seed=0)
    saved = root / "fusion.json"
    r = run_cli("fuse", *paths.values(), "-o", root / "o.txt", "--optimize", "-g", gt, "--folds", "2",
                "--step", "0.5", "--save", saved, "--json")
    assert r.code == 0, r.err
    return {"root": root, "paths": paths, "gt": gt, "saved": saved}


def _victim(case, src):
    dst = case["root"] / "victims" / src.name
    dst.parent.mkdir(exist_ok=True)
    return dst, src.read_bytes()


def _check_output(r, out):
    if r.code == 0:
        fused = ms.read_run(out)
        for t in fused:
            ranks = [e.rank for e in fused[t]]
            assert ranks == list(range(1, len(ranks) + 1))


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data(), method=st.sampled_from(["rrf", "combsum", "combmnz", "wsum"]))
def test_fuse_survives_a_damaged_run(case, data, method):
    path, valid = _victim(case, case["paths"]["est_a"])
    path.write_bytes(data.draw(damaged(valid)))
    out = case["root"] / "out.txt"
    r = run_cli("fuse", case["paths"]["prior"], path, "-o", out, "--method", method)
    assert_clean_exit(r, path)
    _check_output(r, out)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_optimize_survives_a_damaged_run_or_truth(case, data):
    which = data.draw(st.sampled_from(["run", "gt"]))
    src = case["paths"]["est_b"] if which == "run" else case["gt"]
    path, valid = _victim(case, src)
    path.write_bytes(data.draw(damaged(valid)))
    runs = [case["paths"]["prior"], path if which == "run" else case["paths"]["est_b"]]
    gt = path if which == "gt" else case["gt"]
    out = case["root"] / "out.txt"
    r = run_cli("fuse", *runs, "-o", out, "--optimize", "-g", gt, "--folds", "2", "--step", "0.5", "--json")
    assert_clean_exit(r, path)
    _check_output(r, out)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@FUZZ
@given(data=st.data())
def test_apply_survives_a_damaged_fusion_file(case, data):
    path, valid = _victim(case, case["saved"])
    path.write_bytes(data.draw(damaged(valid)))
    out = case["root"] / "out.txt"
    r = run_cli("fuse", *case["paths"].values(), "-o", out, "--apply", path)
    assert_clean_exit(r, path)
    _check_output(r, out)
