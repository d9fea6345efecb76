"""Shared fixtures. Tests run offline (HF_HUB_OFFLINE=1) and never need ../shared unless marked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from modelseek.testing.cli import CLIResult, run_cli, run_cli_subprocess  # noqa: F401  (re-exported)

# Under pytest-xdist (``make test``: two workers on two cores) each worker computes on one thread: torch's and
# BLAS's own thread pools (one thread per core by default) would otherwise put four busy threads on two cores. The
# subprocesses the tests start inherit it. Tests that set a thread count themselves keep theirs.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Hermetic caches: the suite never reads or writes the user's ~/.cache/modelseek.
if "MODELSEEK_CACHE" not in os.environ:
    import tempfile

    os.environ["MODELSEEK_CACHE"] = tempfile.mkdtemp(prefix="modelseek-test-cache-")
# ... and never the user's installed default ranker (train-ranker --install-default writes under MODELSEEK_DATA)
if "MODELSEEK_DATA" not in os.environ:
    import tempfile

    os.environ["MODELSEEK_DATA"] = tempfile.mkdtemp(prefix="modelseek-test-data-")

# Every property-based test is reproducible: the default profile draws a fixed sequence of examples (derandomized,
# no example database). MODELSEEK_HYPOTHESIS=explore draws new ones (seed them with --hypothesis-seed=N), and
# MODELSEEK_FUZZ_SCALE=K runs K times the fuzz suite's examples: a longer search for maintainers, not for CI.
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("modelseek", derandomize=True, database=None)
    _hypothesis_settings.register_profile("explore", derandomize=False, database=None)
    _hypothesis_settings.load_profile(os.environ.get("MODELSEEK_HYPOTHESIS", "modelseek"))
except ImportError:  # hypothesis is a dev dependency; the tests that need it import it themselves
    pass

#: test packages whose session-scoped fixtures start a server or a cluster (PostgreSQL, Ray): under pytest-xdist
#: (``make test`` runs two workers) each package runs on one worker, so each is started once
ONE_WORKER = ("duel", "rankers_ray")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    for item in items:
        parts = item.path.relative_to(here).parts
        if len(parts) > 1 and parts[0] in ONE_WORKER:
            item.add_marker(pytest.mark.xdist_group(parts[0]))


ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
NTCIR_A = SHARED / "ntcir19-mr" / "subtask-a"


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def cli_subprocess():
    return run_cli_subprocess


@pytest.fixture
def ntcir_a() -> Path:
    if not (NTCIR_A / "ground-truth.csv").exists():
        pytest.skip(f"NTCIR-19 data not found at {NTCIR_A} (../shared/data is absent on this machine)")
    return NTCIR_A


@pytest.fixture
def tiny_layout(tmp_path: Path) -> Path:
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path / "ntcir", n_tasks=12, n_models=6, seed=0)


@pytest.fixture
def layout_run(tmp_path, tiny_layout):
    """A valid run file of the tiny layout's ground truth (scores = F1)."""
    from modelseek import GroundTruth, Run

    truth = GroundTruth.from_csv(tiny_layout / "ground-truth.csv")
    run = Run.from_scores({t: truth.f1(t) for t in truth.task_ids}, run_id="byorder")
    path = tmp_path / "run.txt"
    run.write(path)
    return path
