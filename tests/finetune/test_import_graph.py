"""No import cycles inside ``modelseek.finetune`` and ``modelseek.eevee``: every import between their modules,
at module level or inside a function (a lazy import only hides a cycle), forms a DAG. Imports under
``if TYPE_CHECKING:`` are type hints, not imports, and are left out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "modelseek"


def _edges(package: str) -> dict[str, set[str]]:
    folder = SRC / package
    mods = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m in mods:
        tree = ast.parse((folder / f"{m}.py").read_text(encoding="utf-8"))
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                skip.update(id(n) for n in ast.walk(node))
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:
                    target = node.module.split(".")[0]
                elif node.level == 0 and (node.module or "").startswith(f"modelseek.{package}."):
                    target = node.module.split(".")[2]
                else:
                    continue
                if target in mods:
                    edges[m].add(target)
                if node.level == 1 and node.module is None:  # from . import x
                    edges[m].update(a.name for a in node.names if a.name in mods)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state and (found := visit(t)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


@pytest.mark.parametrize("package", ["finetune", "eevee"])
def test_no_import_cycle(package):
    edges = _edges(package)
    assert edges and _cycle(edges) is None, " -> ".join(_cycle(edges))


def test_the_checker_sees_a_cycle():
    assert _cycle({"executors": {"grid"}, "grid": {"executors"}}) == ["executors", "grid", "executors"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
