"""Shape rules of the source tree: no function longer than 80 lines, command modules that do not import
each other, and a layout table (docs/architecture.md) whose paths exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "modelseek"
MAX_LINES = 80


def _functions(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, start, node.end_lineno - start + 1


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_no_function_over_80_lines():
    long = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for name, line, n in _functions(path):
            if n > MAX_LINES:
                long[f"{rel}:{line} {name}"] = n
    assert not long, f"functions over {MAX_LINES} lines: {long}"


def test_commands_do_not_import_each_other():
    cli = SRC / "cli"
    commands = {p.stem for p in cli.glob("*.py") if not p.stem.startswith("_") and p.stem != "main"}
    offenders = []
    for path in sorted(cli.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                mods = [node.module] if node.module else [a.name for a in node.names]
                offenders += [f"{path.name} imports {m}" for m in mods if m and m.split(".")[0] in commands]
    assert not offenders, offenders


def test_readme_layout_paths_exist():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")  # the layout table moved out of README
    section = text.split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    assert rows, "the layout table is missing"
    missing = []
    for row in rows:
        cell, rest = row.split("|")[1], "|".join(row.split("|")[2:])
        for name in re.findall(r"`([^`]+)`", cell):
            if not (SRC / name).exists():
                missing.append(name)
        for name in re.findall(r"`([\w/]+\.py|[\w]+/)`", rest):  # files and folders named in the description
            if "/" in name.rstrip("/") or name.endswith(".py"):
                # the row's folders: each path of its cell (a file's folder) and the folders above it
                folders = {parent for path in re.findall(r"`([^`]+)`", cell)
                           for parent in [Path(path) if path.endswith("/") else Path(path).parent,
                                          *(Path(path) if path.endswith("/") else Path(path).parent).parents]}
                candidates = [SRC / folder / name for folder in folders] + [SRC / name]
                if not any(c.exists() for c in candidates):
                    missing.append(name)
    assert not missing, f"docs/architecture.md layout names paths that do not exist: {missing}"
