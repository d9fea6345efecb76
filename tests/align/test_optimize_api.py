"""``align.optimize_submission``: the library assembles Re-Align's optimisation inputs, and ``modelseek align
optimize`` gives the same answer as the API on the same inputs (matrix file, stored embeddings, registry models)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from modelseek.align import (ModelRegistry, OptimizeOptions, StimulusCatalog, near_duplicates,
                             optimize_submission)
from modelseek.align.formats import SubmissionForm, Team
from modelseek.align.testing import planted_cka
from modelseek.core.errors import InputError


def _solver_part(d: dict) -> dict:
    """What must agree between two runs: everything but the wall-clock seconds and the written submission."""
    return {k: v for k, v in d.items() if k not in ("seconds", "submission")}


def test_blue_from_a_matrix_file_api_equals_cli(cli, tmp_path, monkeypatch, planted_matrix):
    monkeypatch.delenv("MODELSEEK_MODEL_REGISTRY", raising=False)
    m, C, best, names = planted_matrix()
    cmp_ = tmp_path / "cmp.json"
    cmp_.write_text(json.dumps({"team": "blue", "models": names[:8]}))
    out = tmp_path / "blue.json"
    r = cli("align", "optimize", "--team", "blue", "--size", "8", "--cka-matrix", m, "--compare", cmp_,
            "--seed", "3", "--steps", "500", "-o", out, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)

    found = optimize_submission(Team.BLUE, OptimizeOptions(size=8, seed=3, steps=500), cka_matrix=m, compare=cmp_)
    assert sorted(names.index(n) for n in found.result.selection) == best  # the planted subset
    assert _solver_part(found.result.to_dict()) == _solver_part(d)
    assert found.result.baselines["compare"] == pytest.approx(C[:8, :8][np.triu_indices(8, 1)].mean(), abs=1e-12)
    live = found.submission.to_dict(SubmissionForm.LIVE, found.registry)
    assert live == d["submission"] == json.loads(out.read_text())
    assert [x["layer_name"] for x in live["models"]] == [f"blocks.{names.index(n) % 3}" for n in found.result.selection]
    # the draft form never names a layer, and the restriction to some models is applied to the matrix
    draft = optimize_submission("blue", OptimizeOptions(size=4, form=SubmissionForm.DRAFT, steps=50),
                                cka_matrix=m, models=names[:10])
    assert draft.submission.layers == () and set(draft.submission.models) <= set(names[:10])


@pytest.fixture
def stored(cli, align_setup, tmp_path):
    pytest.importorskip("torch")
    emb = tmp_path / "emb"
    assert cli("align", "embed", "-o", emb, "--cache-dir", tmp_path / "cache").code == 0
    cmp_ = tmp_path / "cmp.json"
    cmp_.write_text(json.dumps({"images": [{"dataset_name": "synth", "image_identifier": f"img_{i:03d}.png"}
                                           for i in range(6)]}))
    return {"emb": emb, "compare": cmp_, "cache": tmp_path / "cache", **align_setup}


def test_red_from_stored_embeddings_api_equals_cli(cli, stored):
    r = cli("align", "optimize", "--team", "red", "--size", "6", "--embeddings", stored["emb"], "--steps", "200",
            "--seed", "5", "--compare", stored["compare"], "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    found = optimize_submission(Team.RED, OptimizeOptions(size=6, steps=200, seed=5), embeddings=stored["emb"],
                                compare=stored["compare"])
    assert _solver_part(found.result.to_dict()) == _solver_part(d)
    assert found.submission.to_dict(SubmissionForm.LIVE) == d["submission"]
    assert [s.image_identifier for s in found.submission.stimuli] == [f"img_{i:03d}.png"
                                                                      for i in found.result.selection]


@pytest.mark.parametrize("team, size", [("blue", 3), ("red", 5)])
def test_from_the_registry_models_api_equals_cli(cli, stored, team, size):
    r = cli("align", "optimize", "--team", team, "--size", str(size), "--steps", "100", "--cache-dir",
            stored["cache"], "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    registry, catalog = ModelRegistry.load(stored["registry"]), StimulusCatalog.load(stored["catalog"])
    found = optimize_submission(team, OptimizeOptions(size=size, steps=100, cache_dir=stored["cache"]),
                                registry=registry, catalog=catalog)
    assert _solver_part(found.result.to_dict()) == _solver_part(d)
    assert found.submission.to_dict(SubmissionForm.LIVE, found.registry) == d["submission"]
    assert found.registry is registry


def test_inputs_that_cannot_be_optimised_are_errors(tmp_path):
    C, _ = planted_cka()
    m = tmp_path / "M.npz"
    np.savez(m, names=np.array([f"n{i}" for i in range(len(C))]), matrix=C)
    with pytest.raises(InputError, match="biased HSIC"):
        optimize_submission(Team.RED, OptimizeOptions(size=4, unbiased=True), embeddings=tmp_path)
    with pytest.raises(InputError, match="CKA matrix is for the Blue team"):
        optimize_submission(Team.RED, OptimizeOptions(size=4), cka_matrix=m)
    with pytest.raises(InputError, match="needs the registry and the catalog"):
        optimize_submission(Team.BLUE, OptimizeOptions(size=4))
    red = tmp_path / "red.json"
    red.write_text(json.dumps({"team": "red", "images": [{"dataset_name": "d", "image_identifier": "a.png"}]}))
    with pytest.raises(InputError, match="is a red submission, not blue") as exc:
        optimize_submission(Team.BLUE, OptimizeOptions(size=4), cka_matrix=m, compare=red)
    assert exc.value.path is not None and str(red) in str(exc.value.path)
    with pytest.raises(InputError, match="'n99' is not in the CKA matrix"):
        optimize_submission(Team.BLUE, OptimizeOptions(size=2), cka_matrix=m, models=["n1", "n99"])


def test_near_duplicates_lists_pairs_at_or_above_the_threshold():
    C = np.array([[1.0, 0.97, 0.2], [0.97, 1.0, 0.95], [0.2, 0.95, 1.0]])
    assert near_duplicates(["a", "b", "c"], C, 0.95) == [("a", "b", 0.97), ("b", "c", 0.95)]
    assert near_duplicates(["a", "b", "c"], C, 0.98) == []


# ---------------------------------------------------------------- deep validation: library and CLI agree

def test_deep_check_blames_the_file_to_edit_as_the_cli_does(cli, align_setup, tmp_path):
    """A typo in a submission's layer_name is the submission's to fix; a wrong registry layer the registry's."""
    pytest.importorskip("torch")
    from modelseek.align import deep_check, load_align_submission, raise_for_checks
    from modelseek.core.errors import ValidationError

    registry = ModelRegistry.load(align_setup["registry"])
    sub_path = tmp_path / "blue.json"
    sub_path.write_text(json.dumps({"models": [{"model_name": "cnn0", "layer_name": "features.3"},
                                              {"model_name": "cnn1", "layer_name": "featurs.3"}]}))
    sub = load_align_submission(sub_path)
    checks = deep_check(registry, sub)
    assert [c.ok for c in checks] == [True, False] and checks[0].layer == "features.3"
    with pytest.raises(ValidationError) as exc:
        raise_for_checks(checks, registry, sub, source=sub_path)
    assert exc.value.path == str(sub_path) and [p.field for p in exc.value.problems] == ["models[1].layer_name"]
    r = cli("align", "validate", sub_path, "--deep")
    assert r.code == 1 and [ln for ln in r.err.splitlines() if ln.startswith("error")] == \
        [f"error: {exc.value.problems[0]}"], r.err

    reg = json.loads(align_setup["registry"].read_text())
    reg[2]["layer"] = "featurs.3"
    bad = tmp_path / "registry-bad.json"
    bad.write_text(json.dumps(reg))
    bad_registry = ModelRegistry.load(bad)
    checks = deep_check(bad_registry)
    assert [c.model_name for c in checks if not c.ok] == ["cnn2"]
    with pytest.raises(ValidationError) as exc:
        raise_for_checks(checks, bad_registry)
    assert exc.value.path == str(bad) and [p.field for p in exc.value.problems] == ["layer"]
    r = cli("align", "validate", "--registry", bad, "--deep", "--json")
    assert r.code == 1 and [ln for ln in r.err.splitlines() if ln.startswith("error")] == \
        [f"error: {exc.value.problems[0]}"], r.err
    assert [c["ok"] for c in json.loads(r.out)["checks"]] == [c.ok for c in checks]
    raise_for_checks(deep_check(registry), registry)  # all good: nothing raised
