"""The recipe (defaults = the protocol, YAML, validation), the early stopper on given loss sequences, and
macro-F1 against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score

from modelseek.core.errors import InputError
from modelseek.retrieval.finetune import PROTOCOL, EarlyStopper, Recipe, macro_f1
from modelseek.retrieval.finetune.metrics import accuracy_from_confusion, confusion, macro_f1_from_confusion


# ------------------------------------------------------------------------------------------ recipe
def test_defaults_are_the_protocol():
    r = Recipe()
    assert (r.lr, r.weight_decay, r.batch_size, r.max_epochs, r.patience) == (2e-5, 0.01, 16, 1000, 10)
    assert r.grad_accum == 1 and r.micro_batch_size == 16
    assert r.precision.value == "auto" and r.device.value == "auto"
    assert PROTOCOL == r and PROTOCOL.digest == Recipe().digest


def test_yaml_roundtrip_and_digest(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("lr: 1.0e-4\nbatch_size: 32\ngrad_accum: 4\nprecision: bf16\n", encoding="utf-8")
    r = Recipe.from_yaml(p)
    assert (r.lr, r.batch_size, r.grad_accum, r.micro_batch_size, r.precision.value) == (1e-4, 32, 4, 8, "bf16")
    assert r.max_epochs == 1000  # unspecified keys keep the protocol's values
    assert r.digest != PROTOCOL.digest
    assert Recipe.from_dict(r.to_dict()) == r and Recipe.from_dict(r.to_dict()).digest == r.digest
    assert r.with_overrides(["max_epochs=5", "lr=0.001"]).to_dict() == {**r.to_dict(), "max_epochs": 5, "lr": 0.001}


def test_unknown_key_rejected_with_path_and_hint(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("lr: 1.0e-4\npatients: 3\n", encoding="utf-8")
    with pytest.raises(InputError) as ei:
        Recipe.from_yaml(p)
    msg = str(ei.value)
    assert str(p) in msg and "'patients'" in msg and "did you mean 'patience'" in msg


@pytest.mark.parametrize("changes, field", [
    ({"lr": 0}, "lr"), ({"lr": "fast"}, "lr"), ({"batch_size": 0}, "batch_size"), ({"batch_size": 2.5}, "batch_size"),
    ({"batch_size": 16, "grad_accum": 3}, "grad_accum"), ({"precision": "fp8"}, "precision"),
    ({"device": "tpu"}, "device"), ({"deterministic": "yes"}, "deterministic"), ({"cpu_threads": 0}, "cpu_threads"),
])
def test_bad_values(changes, field):
    with pytest.raises(InputError) as ei:
        Recipe.from_dict(changes)
    assert ei.value.field == field


def test_enum_error_lists_values():
    with pytest.raises(InputError, match="auto, bf16, fp32"):
        Recipe(precision="fp16")


def test_recipe_yaml_not_a_mapping(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("- lr\n", encoding="utf-8")
    with pytest.raises(InputError, match="mapping"):
        Recipe.from_yaml(p)


# ------------------------------------------------------------------------------------------ stopper
def test_stopper_on_given_sequence():
    s = EarlyStopper(patience=3)
    losses = [1.0, 0.9, 0.95, 0.8, 0.85, 0.81, 0.82, 0.7]
    stops = [s.step(x) for x in losses[:7]]
    assert stops == [False] * 6 + [True]  # best at epoch 4; epochs 5, 6, 7 did not improve
    assert (s.best_epoch, s.best_loss, s.epoch) == (4, 0.8, 7)


def test_stopper_min_delta_and_nan():
    s = EarlyStopper(patience=2, min_delta=0.05)
    assert [s.step(x) for x in [float("nan"), 1.0, 0.97, 0.96]] == [False, False, False, True]
    assert s.best_epoch == 2  # 0.97 and 0.96 are within min_delta of 1.0; NaN never improves
    with pytest.raises(ValueError):
        EarlyStopper(patience=0)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=40), st.integers(1, 6))
def test_stopper_property(losses, patience):
    s = EarlyStopper(patience=patience)
    stopped_at = next((i + 1 for i, x in enumerate(losses) if s.step(x)), None)
    seen = losses[: stopped_at or len(losses)]
    best = int(np.argmin(seen)) + 1  # first minimum: later equal losses do not improve
    assert s.best_epoch == best and s.best_loss == min(seen)
    if stopped_at is not None:
        assert stopped_at == best + patience
    else:
        assert len(losses) - best < patience


# ------------------------------------------------------------------------------------------ metrics
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
@settings(max_examples=300, deadline=None)
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(
    st.just(k), st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=1, max_size=60))))
def test_macro_f1_equals_sklearn(data):
    k, pairs = data
    y, p = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
    ours = macro_f1(y, p, n_classes=k)
    ref = f1_score(y, p, average="macro", zero_division=0)
    assert math.isclose(ours, ref, rel_tol=0, abs_tol=1e-12)
    assert math.isclose(accuracy_from_confusion(confusion(y, p, k)), accuracy_score(y, p), abs_tol=1e-12)


def test_macro_f1_known_value():
    # class 0: P=1/2 R=1/1 F1=2/3; class 1: P=1/1 R=1/2 F1=2/3; class 2 absent everywhere -> not averaged
    y, p = [0, 1, 1], [0, 0, 1]
    assert macro_f1(y, p, n_classes=3) == pytest.approx(2 / 3)
    assert macro_f1_from_confusion(np.zeros((3, 3))) == 0.0
