"""The lean BERT backend computes what transformers computes, refuses what it cannot run, and keeps
``transformers`` out of a cold ``modelseek rank``."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from modelseek.core.errors import ModelseekError
from modelseek.retrieval.features import extract_features, offline_minilm_path
from modelseek.retrieval.features import lean_bert

# accents, CJK, emoji, control whitespace, an empty text, punctuation runs, and texts past 128 tokens
HOSTILE = ["", "Hello, World!!", "Ünïcödé naïve café résumé", "中文字符测试 and 日本語", "emoji 😀👍🏽 test",
           "  spaces \t and\ttabs\n\nnewlines  ", "don't-stop... (really?) #hashtag @user http://x.y/z?q=1",
           "word " * 300, "ÀÉÎÕÜ ÇÑ ß Œ æ", "1234567890 3.14159 -42 1e10", "[CLS] [SEP] [PAD] [MASK]"]
LAYERS = [("mean", "last"), ("cls", "last"), ("mean", "mean"), ("cls", 1), ("mean", -2), ("mean", 0)]


def _both(texts, model, **kw):
    kw = {"cache_dir": False, "progress": False, "device": "cpu", **kw}
    return (extract_features(texts, model, backend="lean", **kw),
            extract_features(texts, model, backend="transformers", **kw))


@pytest.mark.parametrize("pooling,layer", LAYERS)
def test_tiny_bert_matches_transformers(tiny_bert, pooling, layer):
    lean, ref = _both(HOSTILE, tiny_bert, pooling=pooling, layer=layer, batch_size=3, max_length=64)
    assert lean.shape == ref.shape == (len(HOSTILE), 32)
    np.testing.assert_allclose(lean, ref, atol=2e-5, rtol=1e-4)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_shipped_minilm_tokens_and_features_match_transformers():
    from transformers import AutoTokenizer

    path = offline_minilm_path()
    assert lean_bert.unsupported_reason(path) is None
    _, tok = lean_bert.load(path)
    ref = AutoTokenizer.from_pretrained(str(path))
    for ml in (8, 128, 512):
        assert tok(HOSTILE, truncation=True, max_length=ml)["input_ids"] == \
            ref(HOSTILE, truncation=True, max_length=ml)["input_ids"]
    assert (tok.pad_token_id, tok.model_max_length) == (ref.pad_token_id, ref.model_max_length) == (0, 512)
    lean, want = _both(HOSTILE, path, max_length=128, batch_size=4)
    np.testing.assert_allclose(lean, want, atol=1e-5)
    assert np.abs(lean).max() > 0.1  # real features, not zeros


@pytest.mark.parametrize("variant", ["relu", "task-model-prefix", "wide-heads"])
def test_random_configurations_match_transformers(tmp_path, variant):
    """Other shapes of a plain BERT: relu activation, a checkpoint saved from a task model (weights under
    ``bert.``), 8 heads over 64 dimensions."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizerFast

    kw = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=48, max_position_embeddings=64)
    if variant == "relu":
        kw["hidden_act"] = "relu"
    if variant == "wide-heads":
        kw.update(hidden_size=64, num_attention_heads=8, layer_norm_eps=1e-6)
    torch.manual_seed(3)
    cls = BertForSequenceClassification if variant == "task-model-prefix" else BertModel
    cls(BertConfig(**kw)).save_pretrained(tmp_path)
    vocab = str(offline_minilm_path() / "vocab.txt")
    BertTokenizerFast(vocab_file=vocab, model_max_length=64).save_pretrained(tmp_path)
    assert lean_bert.unsupported_reason(tmp_path) is None
    lean, ref = _both(HOSTILE, tmp_path, layer="mean", batch_size=5)
    np.testing.assert_allclose(lean, ref, atol=2e-5, rtol=1e-4)


def test_unsupported_models_are_refused_by_lean_and_run_by_auto(tiny_roberta):
    why = lean_bert.unsupported_reason(tiny_roberta)
    assert why is not None and "roberta" in why
    with pytest.raises(ModelseekError, match="lean backend cannot run it.*roberta"):
        extract_features(["hello"], tiny_roberta, backend="lean", cache_dir=False, progress=False)
    auto = extract_features(HOSTILE, tiny_roberta, backend="auto", cache_dir=False, progress=False, max_length=60)
    ref = extract_features(HOSTILE, tiny_roberta, cache_dir=False, progress=False, max_length=60)
    np.testing.assert_array_equal(auto, ref)
    with pytest.raises(ModelseekError, match="some-org/some-model is not a local folder"):
        extract_features(["hello"], "some-org/some-model", backend="lean", cache_dir=False, progress=False)


def test_lean_backend_refuses_a_revision_and_unknown_backends(tiny_bert):
    from modelseek.core.errors import InputError

    with pytest.raises(ModelseekError, match="without a revision"):
        extract_features(["hello"], tiny_bert, backend="lean", revision="main", cache_dir=False, progress=False)
    with pytest.raises(InputError, match="unknown backend 'onnx'; valid values: transformers, lean, auto"):
        extract_features(["hello"], tiny_bert, backend="onnx", cache_dir=False, progress=False)


@pytest.mark.parametrize("change,expected", [
    ({"position_embedding_type": "relative_key"}, "relative position"),
    ({"hidden_act": "gelu_new"}, "activation 'gelu_new'"),
    ({"is_decoder": True}, "decoder"),
    ({"model_type": "roberta"}, "not bert"),
    ({"num_attention_heads": 5}, "not a multiple"),
])
def test_config_variants_outside_the_lean_path(tiny_bert, tmp_path, change, expected):
    import shutil

    folder = tmp_path / "m"
    shutil.copytree(tiny_bert, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(change)
    (folder / "config.json").write_text(json.dumps(cfg))
    assert expected in lean_bert.unsupported_reason(folder)


@pytest.mark.parametrize("damage", ["no-tokenizer", "missing-weight", "garbage-weights"])
def test_incomplete_folders_are_refused(tiny_bert, tmp_path, damage):
    import shutil

    from safetensors.torch import load_file, save_file

    folder = tmp_path / "m"
    shutil.copytree(tiny_bert, folder)
    if damage == "no-tokenizer":
        (folder / "tokenizer.json").unlink()
        want = "no tokenizer.json"
    elif damage == "missing-weight":
        w = load_file(str(folder / "model.safetensors"))
        del w["encoder.layer.1.attention.self.key.weight"]
        save_file(w, str(folder / "model.safetensors"))
        want = "lacks weights"
    else:
        (folder / "model.safetensors").write_bytes(b"\x00garbage" * 10)
        want = "lacks weights"
    assert want in lean_bert.unsupported_reason(folder)
    with pytest.raises(ModelseekError, match=want):
        lean_bert.load(folder)


@pytest.mark.slow(reason="8 s (setup and call) on 2 busy cores")
def test_default_rank_of_a_new_task_never_imports_transformers(tmp_path):
    """The cold path of issue 13: the default ranker embeds a new task with the shipped MiniLM on the lean
    backend, so ``transformers`` (about 4 s of imports on 2 cores) is never imported."""
    from modelseek.testing import make_text_task, write_task_table

    task = make_text_task("cold", n_classes=3, n_train=60, n_val=15, n_test=15, domain="reviews", seed=1)
    csv = write_task_table(task, tmp_path / "cold.csv")
    code = ("import sys; from modelseek.cli.main import main\n"
            f"rc = main(['rank', {str(csv)!r}, '-o', {str(tmp_path / 'run.txt')!r}, '--json'])\n"
            "print('TRANSFORMERS', 'transformers' in sys.modules, rc)")
    env = {"HF_HUB_OFFLINE": "1", "MODELSEEK_CACHE": str(tmp_path / "cache"), "PATH": "", "PYTHONPATH": "src"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=_root())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] in ("TRANSFORMERS False 0", "TRANSFORMERS False None")
    lines = (tmp_path / "run.txt").read_text().splitlines()
    assert len(lines) == 20 and {ln.split()[0] for ln in lines} == {"cold"}
    assert len(list((tmp_path / "cache" / "taskrep").glob("*.arrays"))) == 1  # the representation, cached


def _root():
    from pathlib import Path

    return str(Path(__file__).resolve().parents[2])
