"""Shared fixtures. Tests run offline (HF_HUB_OFFLINE=1) and never need ../shared unless marked."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
NTCIR_A = SHARED / "ntcir19-mr" / "subtask-a"


@dataclass
class CLIResult:
    code: int
    out: str
    err: str


def run_cli(*args: str) -> CLIResult:
    """Run the CLI in-process (fast) and capture its output and exit code."""
    from modelseek.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
    return CLIResult(code, out.getvalue(), err.getvalue())


def run_cli_subprocess(*args: str, cwd: Path | None = None, timeout: float = 600) -> CLIResult:
    """Run ``python -m modelseek`` in a fresh process with this checkout's sources."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), HF_HUB_OFFLINE="1")
    p = subprocess.run([sys.executable, "-m", "modelseek", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, env=env, timeout=timeout)
    return CLIResult(p.returncode, p.stdout, p.stderr)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def ntcir_a() -> Path:
    if not (NTCIR_A / "ground-truth.csv").exists():
        pytest.skip(f"NTCIR-19 data not found at {NTCIR_A} (../shared/data is absent on this machine)")
    return NTCIR_A


@pytest.fixture
def tiny_layout(tmp_path: Path) -> Path:
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path / "ntcir", n_tasks=12, n_models=6, seed=0)
