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
