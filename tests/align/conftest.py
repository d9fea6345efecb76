"""Fixtures of the alignment tests: generated images on disk, a catalog, a registry of tiny random models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from modelseek.align.testing import custom_entry, make_images, planted_cka


@pytest.fixture(scope="session")
def image_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stimuli") / "synth"
    make_images(root, 24, seed=1)
    return root


@pytest.fixture(scope="session")
def image_paths(image_dir) -> list[Path]:
    return sorted(image_dir.glob("*.png"))


@pytest.fixture
def align_setup(tmp_path, image_dir, monkeypatch):
    """A registry of 5 tiny custom models and a 24-image catalog; env vars point at them."""
    reg = [custom_entry(f"cnn{s}", seed=s) for s in range(3)]
    reg.append(custom_entry("vit0", layer="blocks.-1", embedding="cls", arch="tiny_vit"))
    reg.append(custom_entry("vit0mean", layer="blocks.0", embedding="mean", arch="tiny_vit"))
    reg_path = tmp_path / "registry.json"
    reg_path.write_text(json.dumps(reg, indent=1))
    cat_path = tmp_path / "catalog.jsonl"
    cat_path.write_text("".join(json.dumps({"dataset_name": "synth", "image_identifier": p.name}) + "\n"
                                for p in sorted(image_dir.glob("*.png"))))
    monkeypatch.setenv("MODELSEEK_DATASET_SYNTH", str(image_dir))
    monkeypatch.setenv("MODELSEEK_MODEL_REGISTRY", str(reg_path))
    monkeypatch.setenv("MODELSEEK_STIMULI_CATALOG", str(cat_path))
    return {"registry": reg_path, "catalog": cat_path, "images": image_dir, "tmp": tmp_path}


@pytest.fixture
def planted_matrix(tmp_path):
    """A factory: a CKA matrix file (``M.npz``: names, matrix, layers ``blocks.0..2``) of :func:`planted_cka`,
    its models named ``fmt.format(i)``; returns (path, matrix, the planted subset, names)."""

    def make(fmt: str = "net{}"):
        C, best = planted_cka()
        names = [fmt.format(i) for i in range(len(C))]
        path = tmp_path / "M.npz"
        np.savez(path, names=np.array(names), matrix=C, layers=np.array([f"blocks.{i % 3}" for i in range(len(C))]))
        return path, C, best, names

    return make
