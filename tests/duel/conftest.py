import json
from pathlib import Path

import pytest

from modelseek.testing.duel import make_submission_dicts, small_config


@pytest.fixture(scope="session")
def cfg():
    return small_config()


@pytest.fixture(scope="session")
def sub_dicts(cfg):
    return make_submission_dicts(cfg, n_models=5, n_samples=80, seed=0)


@pytest.fixture
def meta_file(tmp_path, cfg) -> Path:
    p = tmp_path / "metadata.json"
    p.write_text(json.dumps(cfg.to_dict()), encoding="utf-8")
    return p


@pytest.fixture
def sub_files(tmp_path, sub_dicts) -> list[Path]:
    out = []
    for d in sub_dicts:
        p = tmp_path / f"{d['metadata']['model']}.json"
        p.write_text(json.dumps(d), encoding="utf-8")
        out.append(p)
    return out
