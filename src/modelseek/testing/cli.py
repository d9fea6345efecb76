"""Run the ``modelseek`` command line from tests: in-process (fast) or in a fresh interpreter."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from ..cli.main import main
from ..core.progress import is_progress_line


@dataclass
class CLIResult:
    code: int
    out: str
    err: str


def run_cli(*args: object) -> CLIResult:
    """Run the CLI in-process and capture its output and exit code (argparse usage errors give 2)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = int(exc.code or 0)
    return CLIResult(code, out.getvalue(), err.getvalue())


def run_cli_subprocess(*args: object, cwd: str | Path | None = None, timeout: float = 600,
                       env: dict | None = None) -> CLIResult:
    """Run ``python -m modelseek`` in a fresh process that imports this same modelseek."""
    src = str(Path(__file__).resolve().parents[2])
    full_env = dict(os.environ, HF_HUB_OFFLINE="1")
    full_env["PYTHONPATH"] = src + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-m", "modelseek", *map(str, args)], capture_output=True, text=True,
                       cwd=cwd, env=full_env, timeout=timeout)
    return CLIResult(p.returncode, p.stdout, p.stderr)


def message_lines(err: str) -> list[str]:
    """The lines of ``err`` that are messages: blank lines and plain progress lines (what a command's progress
    writes to a stderr that is not a terminal, :func:`modelseek.core.progress.is_progress_line`) left out."""
    return [ln for ln in err.strip().splitlines() if ln.strip() and not is_progress_line(ln)]


def assert_one_error_line(r: CLIResult, *words: str) -> None:
    """``r`` is a user error: exit 1 and exactly one ``error: ...`` line on stderr holding every one of ``words``
    (progress lines aside)."""
    assert r.code == 1, (r.code, r.out, r.err)
    lines = message_lines(r.err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.err, r.err
    for w in words:
        assert w in lines[0], (w, lines[0])
