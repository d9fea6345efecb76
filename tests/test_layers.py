"""The layers of the package, as docs/architecture.md draws them, held by the import graph of src/.

The core (``modelseek.core``) imports nothing above it; the retrieval library (``modelseek.retrieval``) imports the
core and itself; each product (``duel``, ``align``, ``eevee``, ``style``) imports the core, the retrieval library
and itself, never another product; the CLI and ``testing`` sit on top. Every import counts: at module level, inside
a function (lazy) and under ``TYPE_CHECKING``. The graph between the parts has no circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import modelseek

PKG = Path(modelseek.__file__).parent
PRODUCTS = ("duel", "align", "eevee", "style")
#: what each part may import (itself always)
ALLOWED = {"core": {"core"}, "retrieval": {"core", "retrieval"},
           **{p: {"core", "retrieval", p} for p in PRODUCTS}}


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import of a modelseek module in one file."""
    name, is_pkg = _module(path)
    package = name.split(".") if is_pkg else name.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            found += [(node.lineno, t) for t in targets]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, t) for line, t in found if t == "modelseek" or t.startswith("modelseek.")]


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in {"_version", "__init__", "__main__", "__version__"}:
        return "core" if len(parts) > 1 and parts[1] in {"_version", "__version__"} else "top"
    return parts[1]


def _graph() -> dict[str, list[tuple[str, int, str]]]:
    edges: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        name, _ = _module(path)
        for line, target in _imports(path):
            edges.setdefault(_part(name), []).append((f"{path.relative_to(PKG.parent)}:{line}", line, target))
    return edges


def test_every_module_belongs_to_a_part():
    parts = {_part(_module(p)[0]) for p in PKG.rglob("*.py")}
    assert parts == {"top", "core", "retrieval", "cli", "testing", "resources", *PRODUCTS} - {"resources"}


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_a_part_imports_only_the_layers_below(part):
    wrong = [f"{where} imports {target}" for where, _, target in _graph().get(part, [])
             if _part(target) not in ALLOWED[part]]
    assert not wrong, "\n".join(wrong)


def test_the_parts_have_no_circle():
    arrows = {(src, _part(t)) for src, es in _graph().items() for _, _, t in es if _part(t) != src}
    arrows = {(a, b) for a, b in arrows if a != "top" and b != "top"}

    def reaches(a: str, b: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(y == b or (y not in seen and reaches(y, b, seen | {y})) for x, y in arrows if x == a)

    assert not [a for a, _ in arrows if reaches(a, a)]
    # the arrows the architecture draws, so a new one is a decision (docs/architecture.md)
    assert ("core", "retrieval") not in arrows and ("retrieval", "duel") not in arrows
    assert ("style", "align") not in arrows and ("align", "style") not in arrows


def test_the_checker_sees_a_wrong_arrow(tmp_path):
    """The graph reader is not blind: a lazy import of a product from the core is an edge it reports."""
    fake = PKG / "core" / "io.py"
    lines = [t for _, t in _imports(fake)]
    assert all(_part(t) == "core" for t in lines)
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from ..duel import storage\n    import modelseek.eevee\n")
    # read as if it were modelseek/core/probe.py
    tree_targets = []
    for node in ast.walk(ast.parse(probe.read_text())):
        if isinstance(node, ast.ImportFrom):
            tree_targets.append(".".join(["modelseek"] + [node.module or ""]))
        elif isinstance(node, ast.Import):
            tree_targets += [a.name for a in node.names]
    assert {_part(t) for t in tree_targets} == {"duel", "eevee"}


def test_the_public_namespace_is_unambiguous():
    """Every layer and product is reachable from ``import modelseek``, every documented module of the layers as an
    attribute, and no module is shadowed by a function of the same name (``modelseek.evaluate`` is the function;
    the module is ``modelseek.retrieval.evaluation``)."""
    import importlib
    import types

    for name in modelseek.SUBPACKAGES:
        assert isinstance(getattr(modelseek, name), types.ModuleType)
    for layer in (modelseek.core, modelseek.retrieval):
        for sub in layer.SUBMODULES:
            assert isinstance(getattr(layer, sub), types.ModuleType), f"{layer.__name__}.{sub}"
    assert callable(modelseek.evaluate) and not isinstance(modelseek.evaluate, types.ModuleType)
    importlib.import_module("modelseek.retrieval.evaluation")
    assert callable(modelseek.evaluate)
    clashes = [n for n in dir(modelseek) if not n.startswith("_") and isinstance(getattr(modelseek, n), types.ModuleType)
               and n not in modelseek.SUBPACKAGES]
    assert not clashes


#: what ``cli/`` may import: the façades (each serves the names the CLI reads), the core's errors and io
FACADES = {"modelseek", "modelseek.core", "modelseek.retrieval", *(f"modelseek.{p}" for p in PRODUCTS)}
CLI_DIRECT = {"modelseek.core.errors", "modelseek.core.io"}


def test_the_cli_imports_only_the_facades_errors_and_io():
    wrong = []
    for path in sorted((PKG / "cli").glob("*.py")):
        for line, target in _imports(path):
            if _part(target) in {"cli", "top"} or target in CLI_DIRECT or target == "modelseek.__version__":
                continue
            if target not in FACADES:
                wrong.append(f"cli/{path.name}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_every_name_a_facade_serves_the_cli_is_there():
    """Each façade's table names a module that defines the name (a rename below is caught here, not at a user's
    command)."""
    import importlib

    for facade in sorted(FACADES - {"modelseek"}):
        module = importlib.import_module(facade)
        for name, where in getattr(module, "_CLI_NAMES", {}).items():
            assert hasattr(importlib.import_module(f"{facade}.{where}"), name), f"{facade}: {name} from {where}"
            assert getattr(module, name) is getattr(importlib.import_module(f"{facade}.{where}"), name)
