"""A model's own limits (issue #48 item 5): ``max_length`` beyond a model's position table is lowered to it (RoBERTa's
padding offset included) and said once per model, for frozen features and fine-tuning alike, through the CLI on tiny
random models whose tokenizers set no ``model_max_length`` (as many Hub snapshots) and texts of 1,000 words."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from modelseek.retrieval.features.limits import position_limit, token_limit

WORDS = "the market rallied while the team lost a game and the movie was long but fine".split()


def _long_text(i: int, n_words: int = 1000) -> str:
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(n_words))


def _write_task(folder: Path, n: dict[str, int]) -> Path:
    folder.mkdir(parents=True)
    for split, count in n.items():
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as fh:
            for i in range(count):
                label = "pos" if i % 2 else "neg"
                fh.write(json.dumps({"text": (label + " ") * 3 + _long_text(i), "labels": label}) + "\n")
    return folder


def _bert_128(folder: Path) -> Path:
    """A BERT with 128 positions whose tokenizer sets no model_max_length."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from modelseek.retrieval.features.text import offline_minilm_path

    cfg = BertConfig(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=32, max_position_embeddings=128)
    BertModel(cfg).save_pretrained(folder)
    tok = BertTokenizerFast(vocab_file=str(offline_minilm_path() / "vocab.txt"))
    tok.save_pretrained(folder)
    return folder


def _roberta_128(folder: Path) -> Path:
    """A RoBERTa with a 128-row position table (126 tokens: positions start at padding_idx + 1 = 2)."""
    from modelseek.testing.tiny_models import make_tiny_roberta

    make_tiny_roberta(folder, hidden_size=16, num_layers=1)
    cfg = json.loads((folder / "config.json").read_text())
    from transformers import RobertaConfig, RobertaModel

    cfg.update(max_position_embeddings=128)
    RobertaModel(RobertaConfig(**{k: v for k, v in cfg.items() if k not in ("architectures", "transformers_version",
                                                                             "dtype", "torch_dtype")})
                 ).save_pretrained(folder)
    tc = json.loads((folder / "tokenizer_config.json").read_text())
    tc.pop("model_max_length", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(tc))
    return folder


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits")
    bert, roberta = _bert_128(root / "bert128"), _roberta_128(root / "roberta128")
    pool = root / "pool.yaml"
    pool.write_text(yaml.safe_dump({"name": "limited", "candidates": [{"id": "b", "path": str(bert)},
                                                                      {"id": "r", "path": str(roberta)}]}))
    task = _write_task(root / "tasks" / "long", {"train": 8, "val": 4, "test": 4})
    return root, pool, task


def test_position_limit_reads_the_table_and_the_offset():
    from transformers import AlbertConfig, BertConfig, DebertaConfig, DistilBertConfig, RobertaConfig, XLMRobertaConfig

    assert position_limit(BertConfig(max_position_embeddings=512)) == 512
    assert position_limit(RobertaConfig(max_position_embeddings=514, pad_token_id=1)) == 512  # roberta-base
    assert position_limit(XLMRobertaConfig(max_position_embeddings=514, pad_token_id=1)) == 512
    assert position_limit(DistilBertConfig(max_position_embeddings=512)) == 512
    assert position_limit(AlbertConfig(max_position_embeddings=512)) == 512
    assert position_limit(DebertaConfig(position_biased_input=False)) is None  # relative positions only
    assert position_limit(DebertaConfig(position_biased_input=True, max_position_embeddings=512)) == 512

    class Tok:
        model_max_length = int(1e30)  # unset

    assert token_limit(RobertaConfig(max_position_embeddings=514), Tok(), 1024, "x") == 512
    Tok.model_max_length = 256
    assert token_limit(BertConfig(max_position_embeddings=512), Tok(), 1024, "x") == 256


@pytest.mark.slow(reason="about 10 s on 2 busy cores: a grid of 2 tiny models fine-tuned on 1,000-word texts")
def test_features_and_finetuning_succeed_with_the_length_said(cli, limited, tmp_path, caplog):
    root, pool, task = limited
    caplog.set_level(logging.WARNING, logger="modelseek.retrieval.features.limits")
    r = cli("rank", task, "--pool", pool, "-m", "logme", "--param", "max_length=512",
            "--param", f"cache_dir={tmp_path / 'cache'}", "--json")
    assert r.code == 0, r.err
    assert sorted(row["doc"] for row in json.loads(r.out)["logme"]["long"]) == ["b", "r"]
    said = [rec.getMessage() for rec in caplog.records if rec.name == "modelseek.retrieval.features.limits"]
    assert any("bert128 takes at most 128 tokens: max_length 512 lowered to 128" in m for m in said), said
    assert any("roberta128 takes at most 126 tokens" in m and "padding offset" in m for m in said), said
    assert len(said) == 2  # once per model, though the model encodes train, val and test

    caplog.clear()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"max_epochs": 1, "patience": 1, "lr": 1e-3, "max_length": 1024,
                                      "cpu_threads": 1}))
    out = tmp_path / "gt.csv"
    r = cli("finetune", "--pool", pool, "--tasks", task.parent, "--out", out, "--recipe", recipe,
            "--seeds", "0", "1")
    assert r.code == 0, r.err
    assert "4 done, 0 failed" in r.out
    said = [rec.getMessage() for rec in caplog.records if rec.name == "modelseek.retrieval.features.limits"]
    assert sorted(m.split(" takes")[0] for m in said) == ["model b", "model r"], said  # once each, 2 seeds
    assert any("max_length 1024 lowered to 126" in m for m in said)
