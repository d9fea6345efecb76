"""Errors that name the file the user must edit (issue #25): a typo in a submission's ``layer_name`` is the
submission's (not the registry's) error, an unset data-set folder is reported once with its count, and the
"use --deep" note appears only where layers exist (Blue submissions, the registry)."""

from __future__ import annotations

import json


def _blue(tmp_path, layer="featurs.3"):
    p = tmp_path / "blue.json"
    p.write_text(json.dumps({"models": [{"model_name": "cnn0", "layer_name": "features.3"},
                                        {"model_name": "cnn1", "layer_name": layer}]}))
    return p


def test_a_typo_in_a_submissions_layer_name_names_the_submission(cli, align_setup, tmp_path):
    sub = _blue(tmp_path)
    want = (f"error: {sub}: field 'models[1].layer_name': model 'cnn1': unknown layer 'featurs.3'. "
            f"Did you mean 'features.3'?")
    r = cli("align", "validate", sub, "--deep")
    assert r.code == 1 and want in r.err and str(align_setup["registry"]) not in r.err, r.err
    r = cli("align", "score", sub, "--json")
    assert r.code == 1 and r.err.startswith(want) and len(r.err.strip().splitlines()) == 1, r.err


def test_a_wrong_layer_in_the_registry_names_the_registry(cli, align_setup, tmp_path):
    reg = json.loads(align_setup["registry"].read_text())
    reg[1]["layer"] = "featurs.3"
    bad = tmp_path / "registry-bad.json"
    bad.write_text(json.dumps(reg))
    sub = tmp_path / "plain.json"
    sub.write_text(json.dumps({"models": [{"model_name": "cnn0"}, {"model_name": "cnn1"}]}))
    r = cli("align", "score", sub, "--registry", bad, "--json")
    assert r.code == 1 and r.err.startswith(f"error: {bad}: field 'layer': model 'cnn1': unknown layer"), r.err


def test_an_unset_data_set_folder_is_reported_once_with_its_count(cli, align_setup, tmp_path, monkeypatch):
    monkeypatch.delenv("MODELSEEK_DATASET_SYNTH")
    monkeypatch.delenv("MODELSEEK_DATASETS_ROOT", raising=False)
    names = sorted(p.name for p in align_setup["images"].glob("*.png"))[:6]
    red = tmp_path / "red.json"
    red.write_text(json.dumps({"images": [{"dataset_name": "synth", "image_identifier": n} for n in names]}))
    r = cli("align", "validate", red)
    errors = [ln for ln in r.err.splitlines() if ln.startswith("error: ")]
    assert r.code == 1 and len(errors) == 1, r.err
    assert errors[0] == (f"error: {red}: field 'stimuli': stimuli[0] synth/{names[0]}: no root for data set 'synth': "
                         f"set MODELSEEK_DATASET_SYNTH or MODELSEEK_DATASETS_ROOT (6 stimuli of data set 'synth'; "
                         f"the first shown)")
    assert f"{red}: 1 problem(s)" in r.err
    r = cli("align", "validate", red, "--dataset-root", f"synth={align_setup['images']}")  # set: valid
    assert r.code == 0, r.err


def test_the_deep_note_only_where_layers_exist(cli, align_setup, tmp_path):
    names = sorted(p.name for p in align_setup["images"].glob("*.png"))[:3]
    red = tmp_path / "red.json"
    red.write_text(json.dumps({"images": [{"dataset_name": "synth", "image_identifier": n} for n in names]}))
    r = cli("align", "validate", red)
    assert r.code == 0 and r.out == f"{red}: valid red submission (3 stimuli), live form\n", r.out
    r = cli("align", "validate", _blue(tmp_path, "features.3"))
    assert r.code == 0 and "layers and output_dim not checked (they need the models): use --deep" in r.out
    r = cli("align", "validate")                                    # the registry alone: its layers
    assert r.code == 0 and "use --deep" in r.out
