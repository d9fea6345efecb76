import json
import subprocess
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


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL server on 127.0.0.1 in a temporary folder, for the whole session (stopped after)."""
    pytest.importorskip("psycopg", reason="psycopg missing: pip install 'modelseek[web]'")
    from modelseek.testing.duel import POSTGRES_HINT, PostgresServer, postgres_binaries

    if postgres_binaries() is None:
        pytest.skip(f"PostgreSQL server binaries (initdb, pg_ctl) not found: {POSTGRES_HINT}")
    try:
        server = PostgresServer()
    except (OSError, subprocess.CalledProcessError) as exc:  # the binaries are there but the server cannot start
        said = getattr(exc, "stderr", None) or b""
        said = (said.decode(errors="replace") if isinstance(said, bytes) else str(said)).strip().splitlines()
        pytest.skip(f"the PostgreSQL server cannot start here ({said[-1] if said else exc}): the PostgreSQL tests "
                    f"need a machine where initdb and pg_ctl can run")
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database URL on each dialect (PostgreSQL: a new database on the session's server)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lb.db'}"
    import uuid

    return request.getfixturevalue("pg_server").url(f"t_{uuid.uuid4().hex[:12]}")
