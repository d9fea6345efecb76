"""Fixtures for the style (Subtask B) tests: a tiny fake Subtask B layout with generated images."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelseek.testing.style import make_b_layout

SHARED_B = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "ntcir19-mr" / "subtask-b"


@pytest.fixture
def b_layout(tmp_path: Path) -> Path:
    return make_b_layout(tmp_path / "subtask-b")


@pytest.fixture
def shared_b() -> Path:
    if not (SHARED_B / "train.csv").exists():
        pytest.skip(f"NTCIR-19 Subtask B metadata not found at {SHARED_B} (../shared/data is absent)")
    return SHARED_B
