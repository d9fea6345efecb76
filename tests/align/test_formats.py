"""Registry, catalog and submission formats; `modelseek align validate`."""

from __future__ import annotations

import json

import pytest

from modelseek.align import ModelEntry, ModelRegistry, StimulusCatalog, validate_align_submission
from modelseek.core.errors import InputError, ValidationError


def test_entry_roundtrip_and_defaults():
    e = ModelEntry.from_dict({"model_name": "a", "source": "timm", "layer": "blocks.11", "embedding": "cls",
                              "input_size": [3, 224, 224], "preprocess": {"resize": 256}, "output_dim": 768,
                              "notes": "x"})
    # preprocessing the registry leaves out stays None here: resolve_entry fills it from the model's config
    assert e.input_size == (224, 224) and e.preprocess.resize == 256 and e.preprocess.interpolation is None
    assert ModelEntry.from_dict(e.to_dict()) == e
    other = ModelEntry.from_dict(dict(e.to_dict(), notes="changed"))
    assert other.fingerprint() == e.fingerprint()  # notes do not change embeddings
    assert ModelEntry.from_dict(dict(e.to_dict(), layer="blocks.10")).fingerprint() != e.fingerprint()


@pytest.mark.parametrize("bad, match", [
    ({"model_name": "a", "source": "keras"}, "source.*valid values: custom, open_clip, timm, torchvision, transformers"),
    ({"model_name": "a", "source": "timm", "embedding": "max"}, "embedding.*valid values: pool, cls, flatten, mean"),
    ({"model_name": "a", "source": "timm", "colour": 1}, "unknown key 'colour'"),
    ({"model_name": "", "source": "timm"}, "model_name"),
    ({"model_name": "a", "source": "timm", "output_dim": 0}, "output_dim"),
    ({"model_name": "a", "source": "timm", "input_size": [0, 3]}, "input_size"),
    ({"model_name": "a", "source": "timm", "preprocess": {"std": [0, 1, 1]}}, "preprocess.std"),
    ({"model_name": "a", "source": "timm", "preprocess": {"crop": 224, "colour": 1}}, "unknown key"),
    ({"model_name": "a", "source": "timm", "preprocess": {"crop_pct": 2}}, "crop_pct"),
    ({"model_name": "a", "source": "timm", "input_size": 100_000}, "larger than the limit 2048x2048"),
    ({"model_name": "a", "source": "timm", "input_size": [3, 224, 99_999]}, "larger than the limit"),
    ({"model_name": "a", "source": "timm", "preprocess": {"resize": 10**9}}, "preprocess.resize"),
    ({"model_name": "a", "source": "timm", "layer": "x", "layer_name": "y"}, "differ"),
])
def test_entry_errors(bad, match):
    with pytest.raises(InputError, match=match):
        ModelEntry.from_dict(bad)


def test_registry_file_errors_located(tmp_path):
    p = tmp_path / "r.json"
    p.write_text('[{"model_name": "a", "source": "timm"},\n {"model_name": "b", "source": "timm",}]')
    with pytest.raises(InputError) as ei:
        ModelRegistry.load(p)
    assert "malformed JSON" in str(ei.value) and f"{p}:2" in str(ei.value)
    p.write_text('[{"model_name": "a", "source": "timm"},\n {"model_name": "a", "source": "timm"}]')
    with pytest.raises(InputError, match="duplicate model_name 'a'"):
        ModelRegistry.load(p)
    p.write_text('[{"model_name": "a", "source": "timm"},\n\n {"model_name": "b", "source": "tf"}]')
    with pytest.raises(InputError) as ei:
        ModelRegistry.load(p)
    assert str(ei.value).startswith(f"{p}:3: field 'source'")
    with pytest.raises(InputError, match="unknown model 'aa'.*Did you mean 'a'"):
        ModelRegistry([{"model_name": "a", "source": "timm"}]).get("aa")


def test_paths_from_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("MODELSEEK_MODEL_REGISTRY", raising=False)
    with pytest.raises(InputError, match="MODELSEEK_MODEL_REGISTRY"):
        ModelRegistry.load()
    reg = tmp_path / "r.json"
    ModelRegistry([{"model_name": "a", "source": "custom"}]).save(reg)
    monkeypatch.setenv("MODELSEEK_MODEL_REGISTRY", str(reg))
    assert ModelRegistry.load().names() == ["a"]
    cat = tmp_path / "c.jsonl"
    cat.write_text('{"dataset_name": "My-Set", "image_identifier": "x/1.png"}\n')
    monkeypatch.setenv("MODELSEEK_STIMULI_CATALOG", str(cat))
    c = StimulusCatalog.load()
    monkeypatch.delenv("MODELSEEK_DATASETS_ROOT", raising=False)
    with pytest.raises(InputError, match="MODELSEEK_DATASET_MY_SET"):
        c.resolve(c[0])
    monkeypatch.setenv("MODELSEEK_DATASETS_ROOT", str(tmp_path / "all"))
    assert c.resolve(c[0]) == tmp_path / "all" / "My-Set" / "x/1.png"
    monkeypatch.setenv("MODELSEEK_DATASET_MY_SET", str(tmp_path / "mine"))
    assert c.resolve(c[0]) == tmp_path / "mine" / "x/1.png"


def test_catalog_errors(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"dataset_name": "d", "image_identifier": "1"}\n{"dataset_name": "d", "image_identifier": "1"}\n')
    with pytest.raises(InputError, match="duplicate stimulus d/1"):
        StimulusCatalog.load(p)
    p.write_text('{"dataset_name": "d", "image_identifier": "1"}\n{"dataset_name": "d"\n')
    with pytest.raises(InputError, match=f"{p}:2: malformed JSON"):
        StimulusCatalog.load(p)
    p.write_text('{"dataset_name": "d", "image_id": "1"}\n')
    with pytest.raises(InputError, match="unknown field"):
        StimulusCatalog.load(p)


def test_catalog_version_changes_with_content(tmp_path):
    a = StimulusCatalog.load(_write(tmp_path / "a.jsonl", ["1", "2"]))
    b = StimulusCatalog.load(_write(tmp_path / "b.jsonl", ["1", "3"]))
    assert a.version() != b.version() and a.version() == StimulusCatalog.load(tmp_path / "a.jsonl").version()


def _write(p, ids):
    p.write_text("".join(json.dumps({"dataset_name": "d", "image_identifier": i}) + "\n" for i in ids))
    return p


def test_validate_lists_every_problem(align_setup, tmp_path):
    reg = ModelRegistry.load(align_setup["registry"])
    cat = StimulusCatalog.load(align_setup["catalog"])
    sub = tmp_path / "red.json"
    sub.write_text(json.dumps({"team": "red", "stimuli": [
        {"dataset_name": "synth", "image_identifier": "img_000.png"},
        {"dataset_name": "synth", "image_identifier": "img_000.png"},
        {"dataset_name": "synth", "image_identifier": "nope.png"}]}))
    with pytest.raises(ValidationError) as ei:
        validate_align_submission(sub, reg, cat, min_stimuli=3)
    msgs = [str(p) for p in ei.value.problems]
    assert any("duplicate stimulus" in m for m in msgs)
    assert any("nope.png: not in the stimuli catalog" in m for m in msgs)
    assert any("2 distinct stimuli, at least 3 needed" in m for m in msgs)
    blue = tmp_path / "blue.json"
    blue.write_text(json.dumps({"team": "blue", "models": ["cnn0", "cnn9", "cnn0"]}))
    with pytest.raises(ValidationError) as ei:
        validate_align_submission(blue, reg, cat, max_models=1)
    msgs = " | ".join(str(p) for p in ei.value.problems)
    assert "duplicate model 'cnn0'" in msgs and "unknown model 'cnn9'" in msgs and "at most 1 allowed" in msgs


def test_validate_needs_a_catalog_for_red_only(align_setup, tmp_path):
    """A Blue submission is checked without a catalog; a Red one without a catalog is a one-line error naming the
    file (it used to be an AttributeError on None)."""
    reg = ModelRegistry.load(align_setup["registry"])
    blue = tmp_path / "blue.json"
    blue.write_text(json.dumps({"team": "blue", "models": ["cnn0", "vit0"]}))
    assert validate_align_submission(blue, reg, None).models == ("cnn0", "vit0")
    red = tmp_path / "red.json"
    stimuli = [{"dataset_name": "synth", "image_identifier": f"img_00{i}.png"} for i in (0, 1)]
    red.write_text(json.dumps({"team": "red", "stimuli": stimuli}))
    with pytest.raises(InputError, match="stimuli catalog; none was given") as ei:
        validate_align_submission(red, reg, None)
    assert ei.value.path == str(red)


def test_validate_missing_file(align_setup, tmp_path):
    cat_path = tmp_path / "cat2.jsonl"
    cat_path.write_text(align_setup["catalog"].read_text()
                        + json.dumps({"dataset_name": "synth", "image_identifier": "gone.png"}) + "\n")
    sub = tmp_path / "red.json"
    sub.write_text(json.dumps({"stimuli": [{"dataset_name": "synth", "image_identifier": n}
                                           for n in ("img_001.png", "gone.png")]}))
    reg, cat = ModelRegistry.load(align_setup["registry"]), StimulusCatalog.load(cat_path)
    with pytest.raises(ValidationError, match="gone.png: file .* does not exist"):
        validate_align_submission(sub, reg, cat)
    assert validate_align_submission(sub, reg, cat, check_files=False).team.value == "red"


def test_cli_validate(cli, align_setup, tmp_path):
    good = tmp_path / "blue.json"
    good.write_text(json.dumps({"team": "blue", "models": ["cnn0", "vit0"]}))
    r = cli("align", "validate", good)
    assert r.code == 0 and "valid blue submission (2 models)" in r.out
    r = cli("align", "validate", good, "--min-models", "3", "--json")
    assert r.code == 1 and "2 distinct models, at least 3 needed" in r.err
    bad = tmp_path / "bad.json"
    bad.write_text('{"team": "blue", "models": ["cnn0",]}')
    r = cli("align", "validate", bad)
    assert r.code == 1 and "malformed JSON" in r.err and str(bad) in r.err
    bad.write_text('{"team": "green", "models": []}')
    r = cli("align", "validate", bad)
    assert r.code == 1 and "unknown team 'green'; valid values: blue, red" in r.err
