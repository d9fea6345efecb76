"""The package has no import cycles, every module imports, and the layers point one way.

The module graph comes from the source (AST): an edge A -> B for every ``import``/``from ... import`` that
runs when A is imported (module level, class bodies, ``try``/``if`` blocks; not function bodies, which are
lazy, and not ``if TYPE_CHECKING:`` blocks). A cycle is a strongly connected component of more than one
module (Tarjan's algorithm), or a module importing itself.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "modelseek"

def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / PKG).rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _eager_imports(tree: ast.Module):
    """Import statements executed at import time."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
        elif isinstance(node, ast.stmt):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt) or isinstance(child, ast.excepthandler):
                    todo.append(child)
                elif isinstance(child, (ast.match_case,)):
                    todo.extend(child.body)
        elif isinstance(node, ast.excepthandler):
            todo.extend(node.body)


def _all_imports(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _targets(node, module: str, is_pkg: bool, known: set[str]) -> set[str]:
    """The package modules an import statement loads (the most specific module that exists)."""
    found = set()
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_pkg else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        subs = [f"{prefix}.{a.name}" for a in node.names]
        # ``from pkg import submodule`` needs pkg only as a namespace (loaded first anyway); ``from pkg import
        # attr`` needs pkg's __init__ to have run: an edge to pkg.
        names = subs + ([prefix] if any(s not in known for s in subs) else [])
    for name in names:
        if not (name == PKG or name.startswith(PKG + ".")):
            continue
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def _graph(eager: bool = True) -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        nodes = _eager_imports(tree) if eager else _all_imports(tree)
        edges: set[str] = set()
        for node in nodes:
            edges |= _targets(node, name, path.name == "__init__.py", known)
        # importing a submodule of one's own package from __init__ is structure, not a cycle
        graph[name] = {e for e in edges if e != name}
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm (iterative, so deep graphs do not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    out.append(comp)
    return out


def test_tarjan_finds_cycles_on_a_known_graph():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": set()}
    comps = sorted(sorted(c) for c in strongly_connected(g))
    assert comps == [["a", "b", "c"], ["d", "e"], ["f"]]


def test_graph_sees_relative_and_absolute_imports():
    g = _graph()
    assert "modelseek.errors" in g["modelseek.config"]          # from .errors import ...
    assert "modelseek.config" in g["modelseek.finetune.recipe"]  # from ..config import ...
    assert "modelseek.io" not in g["modelseek.config"]           # only inside functions: lazy


def test_no_import_cycles():
    cycles = [c for c in strongly_connected(_graph()) if len(c) > 1]
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(sorted(c)) for c in cycles)


def test_the_cli_never_imports_the_test_helpers():
    """``modelseek.testing`` drives the CLI (run_cli), so the CLI must not depend on it, even lazily."""
    g = _graph(eager=False)
    bad = {m: sorted(e for e in edges if e.startswith("modelseek.testing"))
           for m, edges in g.items() if m.startswith("modelseek.cli")}
    assert not {m: e for m, e in bad.items() if e}


@pytest.mark.parametrize("name", sorted(m for m in _modules() if not m.endswith("__main__")))
def test_every_module_imports(name):
    try:
        importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed here
        missing = getattr(exc, "name", None) or ""
        if missing.startswith(PKG) or not missing:
            raise
        pytest.skip(f"{name} needs the optional dependency {missing}")
