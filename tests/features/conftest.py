"""Tiny random encoders saved with ``save_pretrained`` (offline, seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    from modelseek.testing.tiny_models import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    from modelseek.testing.tiny_models import make_tiny_roberta

    return make_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta"))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny models run fastest on one thread, and a busy shared machine makes torch's thread pool spin;
    set for these tests only and restored after each."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def load_counter(monkeypatch) -> list:
    """Record every model load (hence every possible forward pass) of modelseek.retrieval.features.text."""
    import modelseek.retrieval.features.text as text_mod

    calls: list = []
    real = text_mod._load_model

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(text_mod, "_load_model", counting)
    return calls
