"""Fixtures for the fine-tuning tests: tiny random BERTs saved with save_pretrained, small generated tasks,
and a recipe that makes them learn in a few epochs."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelseek.retrieval.data.pool import Candidate, Pool
from modelseek.retrieval.finetune import Recipe
from modelseek.testing import make_text_task
from modelseek.testing.finetune import make_learnable_bert

# lr far above the protocol's 2e-5: random tiny encoders need it to learn in a few epochs.
FAST = Recipe(lr=5e-3, max_epochs=6, patience=2, cpu_threads=1)


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {"1": make_learnable_bert(root / "m1", seed=0, layers=2),
            "2": make_learnable_bert(root / "m2", seed=1, layers=1),
            "3": make_learnable_bert(root / "m3", seed=2, layers=1, hidden=48)}


@pytest.fixture(scope="session")
def tiny_pool(tiny_models) -> Pool:
    return Pool([Candidate(id=k, path=str(v)) for k, v in tiny_models.items() if k in ("1", "2")], name="tiny")


@pytest.fixture(scope="session")
def tiny_tasks():
    return [make_text_task(f"t{i}", n_classes=3 - i, n_train=96, n_val=16, n_test=24, seed=10 + i,
                           noise=0.05)
            for i in range(2)]


@pytest.fixture
def fast_recipe() -> Recipe:
    return FAST


@pytest.fixture(scope="module")
def fast_recipe_module() -> Recipe:
    return FAST


@pytest.fixture(scope="module")
def pool_yaml_module():
    return write_pool_yaml


@pytest.fixture(scope="module")
def recipe_yaml_module():
    return write_recipe_yaml


@pytest.fixture
def pool_yaml():
    """``pool_yaml(path, {id: model_dir}, extra={id: path})`` writes a pool file."""
    return write_pool_yaml


@pytest.fixture
def recipe_yaml():
    """``recipe_yaml(path, recipe)`` writes a recipe file."""
    return write_recipe_yaml


def write_pool_yaml(path: Path, models: dict[str, Path], extra: dict[str, str] | None = None) -> Path:
    lines = ["name: tiny", "candidates:"]
    for k, v in {**{k: str(p) for k, p in models.items()}, **(extra or {})}.items():
        lines.append(f'  - {{id: "{k}", path: "{v}"}}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_recipe_yaml(path: Path, recipe: Recipe) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(recipe.to_dict()), encoding="utf-8")
    return path
