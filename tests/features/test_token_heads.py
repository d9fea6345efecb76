"""Token ids of long texts (issue #55): a text is cut at a white space before it is tokenized, and the ids equal the
uncut text's for every tokenizer kind of the NTCIR candidates (WordPiece, byte-level BPE, DeBERTa's BPE,
SentencePiece Unigram); candidates sharing a tokenizer share the ids."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")

from modelseek.retrieval.features import text
from modelseek.retrieval.features.text import CUT_CHARS_PER_TOKEN, _load_model, extract_features, token_ids
from modelseek.testing.candidate_kinds import make_candidate_snapshot

# one candidate per tokenizer kind: BERT WordPiece, ALBERT and XLM-R SentencePiece, RoBERTa BPE, DeBERTa BPE
KIND_IDS = (5, 3, 19, 18, 16)


def _texts(rng: np.random.Generator, max_length: int) -> list[str]:
    words = ["the", "cat", "sat", "Ünïcode", "naïve", "😀", "stock-rose", "don't", "x" * 60, "12,345", "\t", "日本語"]
    long = [" ".join(words[int(i)] for i in rng.integers(len(words), size=n)) for n in (3000, 800, 50)]
    spaced = "word  \n\n  " * 2000  # white-space runs across the cut
    unbroken = "y" * (max_length * CUT_CHARS_PER_TOKEN * 2)  # no white space: tokenized whole
    sparse = "a" + " " + "z" * (max_length * CUT_CHARS_PER_TOKEN) + " b c"  # its head would not fill the positions
    return [*long, spaced, unbroken, sparse, "short text", ""]


@pytest.mark.parametrize("kind", KIND_IDS)
def test_ids_of_cut_texts_equal_the_whole_texts(tmp_path, kind):
    folder = make_candidate_snapshot(tmp_path / f"{kind:02d}", kind)
    loaded = _load_model(str(folder), None, "cpu")
    for max_length in (16, 64):
        texts = _texts(np.random.default_rng(kind), max_length)
        whole = loaded.tokenizer(texts, truncation=True, max_length=max_length, padding=False,
                                 return_attention_mask=False, return_token_type_ids=False)["input_ids"]
        assert [list(r) for r in token_ids(loaded, texts, max_length)] == [list(r) for r in whole]


def test_a_shared_tokenizer_is_run_once(tmp_path, monkeypatch):
    text.clear_token_cache()
    a = _load_model(str(make_candidate_snapshot(tmp_path / "05", 5)), None, "cpu")
    b = _load_model(str(make_candidate_snapshot(tmp_path / "05b", 5, seed=9)), None, "cpu")  # same tokenizer
    assert text._tokenizer_key(a) == text._tokenizer_key(b)  # read before the tokenizers are wrapped below
    calls = []
    for loaded in (a, b):
        tok = loaded.tokenizer
        monkeypatch.setattr(loaded, "tokenizer", lambda texts, _tok=tok, **kw: calls.append(1) or _tok(texts, **kw))
    texts = ["one long text " * 400, "two"]
    first = token_ids(a, texts, 32)
    assert token_ids(b, texts, 32) is first and len(calls) == 1
    assert token_ids(a, texts, 16) is not first and len(calls) == 2  # another length, another entry


def test_features_of_long_texts_are_unchanged(tmp_path, monkeypatch):
    """The features through the cut equal the features of the whole texts tokenized (no cut)."""
    folder = make_candidate_snapshot(tmp_path / "18", 18)
    texts = ["the cat sat on the mat " * 600, "a stock rose " * 900, "short"]
    text.clear_token_cache()
    got = extract_features(texts, str(folder), max_length=32, cache_dir=False, progress=False, device="cpu")
    text.clear_token_cache()
    monkeypatch.setattr(text, "CUT_CHARS_PER_TOKEN", 10 ** 9)  # never cut
    want = extract_features(texts, str(folder), max_length=32, cache_dir=False, progress=False, device="cpu")
    np.testing.assert_array_equal(got, want)
