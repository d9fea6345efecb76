"""Fixtures for the learned rankers: a small generated NTCIR layout and the fast offline ``hashing`` encoder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path_factory.mktemp("ntcir"), n_tasks=15, n_models=6, seed=0, n_train=60)


@pytest.fixture(scope="module")
def data(layout):
    from modelseek.retrieval.data.loaders import load_ntcir_tasks
    from modelseek.retrieval.data.pool import load_pool
    from modelseek.retrieval.data.truth import GroundTruth

    return load_ntcir_tasks(layout), GroundTruth.from_csv(layout / "ground-truth.csv"), load_pool(layout / "models.csv")


@pytest.fixture(scope="session")
def fast_params():
    return _fast_params


def _fast_params(method: str, layout: Path, cache_dir, encoder_path: Path | None = None) -> dict:
    """Constructor parameters that keep a method fast in tests (hashing encoder, few epochs)."""
    kw: dict = {"cache_dir": str(cache_dir)}
    if method == "tupate":
        kw.update(encoder_path=str(encoder_path), pt_epochs=2, pt_max_texts=16, epochs=30, width=16)
    if method != "tupate":
        kw["encoder"] = "hashing"
    if method in ("metadata", "ltr"):
        kw["pool"] = str(layout / "models.csv")
    if method == "spider":
        kw["epochs"] = 40
    if method == "ltr":
        kw["n_estimators"] = 30
    return kw


@pytest.fixture(scope="session")
def tiny_bert_path(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from modelseek.testing.tiny_models import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
