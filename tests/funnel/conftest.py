"""Fixtures for the budgeted funnel: a small generated world (simulated signals and costs) and tiny real models."""

from __future__ import annotations

import pytest

from modelseek.testing.funnel import make_funnel_world


@pytest.fixture(scope="module")
def world():
    return make_funnel_world(n_models=60, n_tasks=3, n_texts=1000, seed=3)
