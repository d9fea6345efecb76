"""The quick loop (issue #38): ``make test-fast`` runs ``pytest -m "not slow"``; every slow mark says why, and the
quick loop still runs tests of every test package. Read from the test files' syntax (no collection, no import)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _is_slow(node: ast.AST) -> bool:
    """``pytest.mark.slow`` or ``pytest.mark.slow(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr == "slow" and \
        isinstance(node.value, ast.Attribute) and node.value.attr == "mark"


def _reason(node: ast.AST) -> str:
    if not isinstance(node, ast.Call):
        return ""
    for kw in node.keywords:
        if kw.arg == "reason" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value.strip()
        if kw.arg == "reason" and isinstance(kw.value, ast.JoinedStr):  # an f-string: its literal parts
            return "".join(v.value for v in kw.value.values if isinstance(v, ast.Constant)).strip()
    return ""


def _files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "data" not in p.relative_to(TESTS).parts)


def _marks(tree: ast.Module) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if _is_slow(n) and not (isinstance(n, ast.Attribute) and
                                                              _called(tree, n))]


def _called(tree: ast.Module, attr: ast.Attribute) -> bool:
    return any(isinstance(c, ast.Call) and c.func is attr for c in ast.walk(tree))


def _fast_tests(tree: ast.Module) -> list[str]:
    """Test functions of a module that ``-m "not slow"`` keeps."""
    module_slow = any(isinstance(s, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in s.targets)
                      and any(_is_slow(n) for n in ast.walk(s.value)) for s in tree.body)
    if module_slow:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            if not any(_is_slow(d) for d in node.decorator_list):
                out.append(node.name)
    return out


def test_every_slow_mark_says_why():
    missing = []
    n = 0
    for path in _files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for mark in _marks(tree):
            n += 1
            if not _reason(mark):
                missing.append(f"{path.relative_to(ROOT)}:{mark.lineno}")
    assert n >= 8  # the suite marks its slow tests
    assert not missing, f"slow marks without reason=...: {missing}"


def test_the_quick_loop_covers_every_test_package():
    packages: dict[str, list[str]] = {}
    for path in _files():
        rel = path.relative_to(TESTS)
        pkg = rel.parts[0] if len(rel.parts) > 1 else "tests/"
        packages.setdefault(pkg, []).extend(_fast_tests(ast.parse(path.read_text(encoding="utf-8"))))
    empty = sorted(p for p, names in packages.items() if not names)
    assert len(packages) >= 10 and not empty, f"no quick test in: {empty}"


def test_make_test_fast_leaves_out_the_slow_tests_only():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^test-fast:.*?\n((?:\t.*\n)+)", make, re.M)
    assert target, "Makefile has no test-fast target"
    assert re.search(r'pytest .*-m "not slow"', target.group(1))
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"slow\(reason\): ', pyproject)  # the marker is registered with its argument


def test_make_test_fast_installs_what_the_tests_need_first(tmp_path):
    """README's loop `make demo && make test-fast` (issue #55): the demo installs only the text extra, so test-fast
    runs `make install` when the environment lacks pytest or was never given every extra. Checked by running the
    target's guard with a stand-in interpreter that has no pytest: make is asked for the install."""
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "python"  # no pytest: every `-c` import fails
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    out = subprocess.run(["make", "-n", "-f", str(ROOT / "Makefile"), "test-fast", f"VENV={venv}"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    # make -n runs the guard's recursive `make install` (as -n does with $(MAKE)), which prints its recipe
    assert 'pip install --disable-pip-version-check -q -e ".[all,dev,docs]"' in out.stdout, out.stdout
