"""Pool files (YAML through the config layer, models.csv): shorthand forms and located errors."""

from __future__ import annotations

import pytest

from modelseek.retrieval.data.pool import load_pool
from modelseek.core.errors import InputError


def test_yaml_pool_forms(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: mine\ncandidates:\n  - bert-base-uncased\n  - hf_id: roberta-base\n    params_m: 125\n"
                 "    pretraining_data: wiki\n    finetuning_data:\n  - id: 7\n    path: models/m\n", encoding="utf-8")
    pool = load_pool(p)
    assert pool.name == "mine" and pool.ids == ["bert-base-uncased", "roberta-base", "7"]
    assert pool["roberta-base"].params_m == 125.0 and pool["roberta-base"].pretraining_data == ("wiki",)
    assert pool["roberta-base"].finetuning_data == ()
    assert pool["7"].path == str((tmp_path / "models" / "m").resolve())
    bare = tmp_path / "bare.yaml"
    bare.write_text("- a\n- b\n", encoding="utf-8")
    assert load_pool(bare).ids == ["a", "b"] and load_pool(bare).name == "bare"


@pytest.mark.parametrize("text, line, field, words", [
    ("candidates:\n  - id: a\n    hf_idd: x\n", 3, "candidates[0].hf_idd", "did you mean 'hf_id'"),
    ("candidates:\n  - id: a\n  - id: b\n    params_m: .nan\n", 4, "candidates[1].params_m", "finite"),
    ("candidates:\n  - id: a\n    params_m: -3\n", 3, "candidates[0].params_m", ">= 0"),
    ("candidates:\n  - family: x\n", 2, "candidates[0]", "needs 'id' or 'hf_id'"),
    ("name: x\ncandidate: []\n", 1, "candidates", "needs a 'candidates' list"),
    ("candidates:\n  - a\n  - a\n", 3, "candidates[1]", "duplicate candidate id 'a'"),
    ("candidates: []\n", 1, "candidates", "at least one candidate"),
    ("candidates: [a]\nextra: 1\n", 2, "extra", "valid keys: candidates, name, description"),
    ("candidates:\n  - id: [1, 2]\n", 2, "candidates[0].id", "must be a string"),
])
def test_yaml_pool_errors_are_located(tmp_path, text, line, field, words):
    p = tmp_path / "p.yaml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as ei:
        load_pool(p)
    e = ei.value
    assert (e.path, e.line, e.field) == (str(p), line, field) and words in e.message


def test_pool_file_encoding_and_directory(tmp_path):
    p = tmp_path / "models.csv"
    p.write_bytes(b"model_id,model_name\n1,caf\xe9\n")
    with pytest.raises(InputError, match=r"models.csv:2: not UTF-8 text \(byte 0xe9 at offset 25\)"):
        load_pool(p)
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        load_pool(tmp_path / "dir.yaml")
