"""The package has no import cycle, lazy or not; every module imports; importing modelseek stays light.

The module graph comes from the source (AST over ``src/modelseek``): an edge A -> B for every ``import`` or
``from ... import`` in A that loads B, wherever it stands: module level, class bodies, ``try``/``if`` blocks and
function bodies alike (a lazy import only postpones a cycle). Rules:

* relative and absolute imports resolve to the most specific module that exists; ``from pkg import name``
  is an edge to ``pkg.name`` when that is a module (``from . import x``), else to ``pkg`` (its ``__init__``
  must have run to hold ``name``);
* importing ``a.b.c`` also runs ``a/__init__`` and ``a/b/__init__``: edges to those packages too, except to
  the importer's own enclosing packages (Python has already started those before the importer ran; a
  ``from a import name`` of an attribute of its own package is still an edge to ``a``, which must have
  finished);
* a package ``__init__`` that imports its submodules has edges to them, as any module;
* imports under ``if TYPE_CHECKING:`` never run (annotations are strings under ``from __future__ import
  annotations``): they are type references, not edges;
* a registry's ``"module:Attr"`` strings are not imports (they are imported on first lookup, by name).

A cycle is a strongly connected component of more than one module (Tarjan's algorithm).
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "modelseek"


def _modules(src: Path = SRC, pkg: str = PKG) -> dict[str, Path]:
    out = {}
    for path in sorted((src / pkg).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of the module, at any depth, except those only a type checker sees."""
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                type_only.update(id(n) for n in ast.walk(stmt))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in type_only]


@functools.cache
def _served(package: str) -> dict[str, str]:
    """A façade's table of the names it serves (``_CLI_NAMES`` in its ``__init__``): name -> module below it."""
    init = SRC / package.replace(".", "/") / "__init__.py"
    if not init.is_file():
        return {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_CLI_NAMES" for t in node.targets):
            return dict(ast.literal_eval(node.value))
    return {}


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_pkg: bool, known: set[str], pkg: str) -> set[str]:
    """The package modules an import statement runs."""
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
        names = [s for s in subs if s in known] + ([prefix] if any(s not in known for s in subs) else [])
        served = _served(prefix)  # a façade's name runs the module that defines it (on first use, still an edge)
        names += [f"{prefix}.{served[a.name]}" for a in node.names if a.name in served]
    found: set[str] = set()
    for name in names:
        if not (name == pkg or name.startswith(pkg + ".")):
            continue
        while name and name not in known:
            name = name.rpartition(".")[0]
        if not name:
            continue
        found.add(name)
        parent = name.rpartition(".")[0]
        while parent:  # the packages above it run first, except the importer's own (already started)
            if not module.startswith(parent + "."):
                found.add(parent)
            parent = parent.rpartition(".")[0]
    return found


def import_graph(src: Path = SRC, pkg: str = PKG) -> dict[str, set[str]]:
    mods = _modules(src, pkg)
    known = set(mods)
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _imports(tree):
            edges |= _targets(node, name, path.name == "__init__.py", known, pkg)
        graph[name] = edges - {name}
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


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return sorted(sorted(c) for c in strongly_connected(graph) if len(c) > 1)


def test_tarjan_finds_cycles_on_a_known_graph():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": set()}
    comps = sorted(sorted(c) for c in strongly_connected(g))
    assert comps == [["a", "b", "c"], ["d", "e"], ["f"]]


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_the_graph_follows_every_kind_of_import(tmp_path):
    """The rules of the module docstring on a small package written for the purpose."""
    src = _write(tmp_path, {
        "pk/__init__.py": "from .a import f\n",
        "pk/a.py": "def f():\n    from .sub import deep\n",            # lazy, relative, into a subpackage
        "pk/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n"
                   "from . import c\n",                                   # type-only; from . import module
        "pk/c.py": "import pk.sub.deep as d\nfrom pk import name_in_init\n",  # absolute; attribute of a package
        "pk/sub/__init__.py": "from . import deep\n",                     # a package __init__ registering
        "pk/sub/deep.py": "from .. import b\nx = 'pk.c:Attr'\n",         # up two levels; a lazy-registry string
    })
    g = import_graph(src, "pk")
    assert g["pk"] == {"pk.a"}
    assert g["pk.a"] == {"pk.sub", "pk.sub.deep"}                        # the subpackage's __init__ runs first
    assert g["pk.b"] == {"pk.c"}                                         # the TYPE_CHECKING import is no edge
    assert g["pk.c"] == {"pk", "pk.sub", "pk.sub.deep"}
    assert g["pk.sub"] == {"pk.sub.deep"} and g["pk.sub.deep"] == {"pk.b"}  # its own package is no edge
    assert _cycles(g) == [["pk", "pk.a", "pk.b", "pk.c", "pk.sub", "pk.sub.deep"]]


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_the_graph_sees_lazy_imports_in_the_package():
    g = import_graph()
    assert "modelseek.core.errors" in g["modelseek.core.config"]                 # from .errors import ... (module level)
    assert "modelseek.retrieval.rankers.resolve" in g["modelseek.retrieval.rankers"]        # inside make(): lazy, still an edge
    assert "modelseek.retrieval.estimators" in g["modelseek.retrieval.rankers.features"]    # from .. import estimators (a package)
    assert {"modelseek.retrieval.data.folds", "modelseek.retrieval.data"} <= g["modelseek.retrieval.fusion.learned"]


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_no_import_cycles_lazy_or_not():
    cycles = _cycles(import_graph())
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_the_cli_never_imports_the_test_helpers():
    """``modelseek.testing`` drives the CLI (run_cli), so the CLI must not depend on it, even lazily."""
    g = import_graph()
    bad = {m: sorted(e for e in edges if e.startswith("modelseek.testing"))
           for m, edges in g.items() if m.startswith("modelseek.cli")}
    assert not {m: e for m, e in bad.items() if e}


def _loaded_by(statement: str) -> list[str]:
    code = (f"import json, sys; {statement}; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('modelseek', 'torch', 'transformers', 'sklearn', 'scipy', 'ray', 'matplotlib', 'pyarrow'))))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def test_importing_modelseek_imports_no_estimator_and_no_heavy_library():
    """``import modelseek`` loads ``evaluate`` and what it needs; every other top-level name (``from modelseek
    import *``) loads its module on first use, and still no estimator and no heavy library."""
    light = _loaded_by("import modelseek")
    assert "modelseek.retrieval.evaluation" in light and not {"modelseek.retrieval.api", "modelseek.retrieval.funnel", "modelseek.retrieval.fusion"} & set(light)
    loaded = _loaded_by("from modelseek import *")
    assert "modelseek.retrieval.data" in loaded and "modelseek.retrieval.fusion" in loaded  # the check sees the package's modules
    assert not [m for m in loaded if m.startswith("modelseek.retrieval.estimators")]
    assert not [m for m in loaded if not m.startswith("modelseek")]


def test_every_top_level_name_resolves_and_is_listed():
    """The names loaded on first use are the names type checkers read (the TYPE_CHECKING imports) and __all__."""
    import modelseek

    tree = ast.parse((SRC / PKG / "__init__.py").read_text())
    typed = {(f".{node.module}", a.name) for block in tree.body if isinstance(block, ast.If)
             for node in block.body if isinstance(node, ast.ImportFrom) for a in node.names}
    assert typed == {(m, n) for m, names in modelseek._LAZY.items() for n in names}
    assert {n for _, n in typed} | {"__version__", "evaluate"} == set(modelseek.__all__)

    assert set(modelseek.__all__) <= set(dir(modelseek))
    for name in modelseek.__all__:
        assert getattr(modelseek, name) is not None, name
    importlib.import_module("modelseek.retrieval.evaluation")  # the submodule of the same name does not shadow the function
    assert modelseek.evaluate is importlib.import_module("modelseek.retrieval.evaluation").evaluate
    assert importlib.import_module("modelseek.retrieval.evaluation").__name__ == "modelseek.retrieval.evaluation"
    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        modelseek.nonexistent  # noqa: B018


@pytest.mark.slow(reason="0 s (setup and call) on 2 busy cores")
@pytest.mark.parametrize("name", sorted(m for m in _modules() if not m.endswith("__main__")))
def test_every_module_imports(name):
    try:
        importlib.import_module(name)
    except ImportError as exc:  # an optional extra that is not installed here
        missing = getattr(exc, "name", None) or ""
        if missing.startswith(PKG) or not missing:
            raise
        pytest.skip(f"{name} needs the optional dependency {missing}")


# ---------------------------------------------------------------- function-level imports say why (issue #38)
#
# A function-level import of a package module or of a heavy library carries ``# lazy: REASON`` on its line, and
# the reason is checked against the code:
#
# * ``# lazy: torch`` (one or more libraries of HEAVY, comma-separated): the statement loads each of them, directly
#   or through the module-level imports of the package modules it imports, and its own module does not already
#   load it at module level (then the deferral would save nothing);
# * ``# lazy: start-up`` (``start-up, CLI parser`` in the commands): its module is loaded at start-up (by
#   ``import modelseek``, the lean parser of ``evaluate``/``compare``/``validate``, or ``modelseek --help``), and
#   importing the statement's targets at module level would load modules that this start-up does not load today.
#
# Any other function-level import of a package module belongs at module level.

#: libraries whose import costs start-up time (or which sit behind an extra): a function-level import of one of
#: them, direct or through a package module, is a justified deferral
HEAVY = frozenset({
    "torch", "torchvision", "transformers", "tokenizers", "safetensors", "huggingface_hub", "datasets", "timm",
    "open_clip", "ray", "sklearn", "scipy", "pandas", "pyarrow", "matplotlib", "PIL", "skimage", "lightgbm",
    "gradio", "starlette", "sqlalchemy", "alembic", "psycopg"})

#: files whose function-level imports are counted but not judged (none since issue #38 was finished; a file
#: being rewritten may be listed here for the time of its rewrite)
NOT_YET: tuple[str, ...] = ()

START_UP = ("start-up", "start-up, CLI parser")  # the text before any ";" or "(" that explains more


def _placed_imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """(import statement, inside a function) for every import that runs (none under ``if TYPE_CHECKING:``)."""
    out: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:
                    visit_one(stmt, in_function)
                continue
            visit_one(child, in_function)

    def visit_one(child: ast.AST, in_function: bool) -> None:
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            out.append((child, in_function))
        visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return out


def _libraries(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name.split(".")[0] for a in node.names}
    return {node.module.split(".")[0]} if node.level == 0 and node.module else set()


def lazy_imports(src: Path = SRC, pkg: str = PKG) -> tuple[list[dict], dict[str, set[str]], dict[str, set[str]]]:
    """(function-level imports of package modules or HEAVY libraries, module-level package edges, module-level
    libraries per module). Each import: module, file, line, package targets, libraries, its ``# lazy:`` reason."""
    mods = _modules(src, pkg)
    known = set(mods)
    lazy: list[dict] = []
    edges: dict[str, set[str]] = {}
    libs: dict[str, set[str]] = {}
    for name, path in mods.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        edges[name], libs[name] = set(), set()
        for node, in_function in _placed_imports(ast.parse(text, filename=str(path))):
            targets = _targets(node, name, path.name == "__init__.py", known, pkg) - {name}
            found = _libraries(node) - {pkg}
            if not in_function:
                edges[name] |= targets
                libs[name] |= found
            elif targets or found & HEAVY:
                said = [ln.split("# lazy:", 1)[1] for ln in lines[node.lineno - 1:node.end_lineno] if "# lazy:" in ln]
                reason = said[0].split(";")[0].split("(")[0].split("  #")[0].strip() if said else None
                lazy.append({"module": name, "file": path.relative_to(src / pkg).as_posix(), "line": node.lineno,
                             "targets": targets, "libraries": found, "reason": reason})
    return lazy, edges, libs


def _closure(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = list(start)
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo.extend(edges.get(m, ()))
    return seen


def unjustified(lazy: list[dict], edges: dict[str, set[str]], libs: dict[str, set[str]],
                start_up: tuple[set[str], ...]) -> list[str]:
    """``file:line: why`` for each function-level import whose ``# lazy:`` reason is missing or not true.
    ``start_up``: the modules each start-up loads, lightest first (``import modelseek``, lean commands, ``--help``)."""
    bad = []
    for imp in lazy:
        where = f"{imp['file']}:{imp['line']}"
        reason = imp["reason"]
        loads = imp["libraries"] | {lib for m in _closure(imp["targets"], edges) for lib in libs[m]}
        already = {lib for m in _closure({imp["module"]}, edges) for lib in libs[m]}
        if not reason:
            bad.append(f"{where}: no '# lazy: REASON' (a heavy library it loads: "
                       f"{sorted((loads - already) & HEAVY) or 'none; move it to module level'})")
        elif reason in START_UP:
            # the lightest start-up that loads the module: `import modelseek` if it does, else `--help`
            loaded = next((s for s in start_up if imp["module"] in s), None)
            if loaded is None:
                bad.append(f"{where}: 'start-up', but {imp['module']} is not loaded at start-up")
            elif _closure(imp["targets"], edges) <= loaded:
                bad.append(f"{where}: 'start-up', but start-up loads everything it imports already")
        else:
            named = {x.strip() for x in reason.split(",")}
            wrong = sorted(named - (HEAVY & (loads - already)))
            if wrong:
                bad.append(f"{where}: '# lazy: {reason}', but the import does not load {wrong} where its module "
                           f"does not already (it loads {sorted((loads - already) & HEAVY) or 'nothing heavy'})")
    return bad


def _start_up_modules() -> tuple[set[str], set[str], set[str]]:
    """The package modules loaded by the top level's names (``from modelseek import *``: ``import modelseek``
    alone loads them when first used), by the lean start-up of ``evaluate``, ``compare`` and ``validate`` (their
    parser alone, ``cli.main``), and by ``modelseek --help`` (read from sys.modules: ``-X importtime`` misses
    what ``importlib.import_module`` loads, as the command modules are)."""
    show = "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'modelseek')), file=sys.stderr)\n"
    code = ("import json, runpy, sys\nfrom modelseek import *\n" + show +
            "from modelseek.cli.main import build_parser\n"
            "for command in ('evaluate', 'compare', 'validate'):\n    build_parser(command)\n" + show +
            "sys.argv = ['modelseek', '--help']\n"
            "try:\n    runpy.run_module('modelseek', run_name='__main__')\nexcept SystemExit:\n    pass\n" + show)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    light, lean, full = (set(json.loads(line)) for line in out.stderr.strip().splitlines()[-3:])
    return light, lean, full


def test_lazy_import_reasons_are_checked_on_a_small_package(tmp_path):
    """The rules above on a package written for the purpose: a heavy library through a module, a deferral that
    saves nothing, a wrong library, a start-up claim true and false, and a missing reason."""
    src = _write(tmp_path, {
        "pk/__init__.py": "from . import light\n",
        "pk/light.py": "X = 1\n",
        "pk/plot.py": "import matplotlib\n",
        "pk/cli.py": "def run():\n    from . import plot  # lazy: start-up\n"
                     "    from . import light  # lazy: start-up\n",
        "pk/work.py": "import matplotlib\n\ndef f():\n    from .plot import matplotlib as m  # lazy: matplotlib\n"
                      "    import pandas  # lazy: pandas\n    import torch  # lazy: torch, scipy\n"
                      "    from .light import X\n",
        "pk/app.py": "def g():\n    from .plot import matplotlib  # lazy: matplotlib; the object API\n"
                     "    import json\n",
    })
    lazy, edges, libs = lazy_imports(src, "pk")
    assert len(lazy) == 7  # `import json` is not the test's business
    bad = unjustified(lazy, edges, libs, start_up=({"pk", "pk.light"}, {"pk", "pk.light", "pk.cli"}))
    assert bad == [
        "cli.py:3: 'start-up', but start-up loads everything it imports already",
        "work.py:4: '# lazy: matplotlib', but the import does not load ['matplotlib'] where its module does not "
        "already (it loads nothing heavy)",
        "work.py:6: '# lazy: torch, scipy', but the import does not load ['scipy'] where its module does not "
        "already (it loads ['torch'])",
        "work.py:7: no '# lazy: REASON' (a heavy library it loads: none; move it to module level)",
    ]


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores: the AST of the package and a start-up subprocess")
def test_every_function_level_import_says_why(record_property):
    """Function-level imports of package modules or heavy libraries are deferrals with a reason (see above);
    the count is printed and recorded (``-rA`` or the JUnit XML shows it)."""
    for entry in NOT_YET:  # the list names files that exist, so a finished or renamed one is taken off it
        assert any(p.relative_to(SRC / PKG).as_posix().startswith(entry) for p in (SRC / PKG).rglob("*.py")), entry
    lazy, edges, libs = lazy_imports()
    start_up = _start_up_modules()
    light, lean, full = start_up  # what the subprocess saw of each start-up
    assert "modelseek.retrieval.data" in light and "modelseek.cli.evaluate" not in light
    assert "modelseek.cli.evaluate" in lean and "modelseek.cli.align" not in lean
    assert "modelseek.cli.align" in full and "modelseek.align.models" not in full
    mine = [imp for imp in lazy if not imp["file"].startswith(NOT_YET)]
    bad = unjustified(mine, edges, libs, start_up)
    later = unjustified([imp for imp in lazy if imp["file"].startswith(NOT_YET)], edges, libs, start_up)
    by_reason: dict[str, int] = {}
    for imp in mine:
        key = "start-up" if imp["reason"] in START_UP else "heavy library" if imp["reason"] else "none"
        by_reason[key] = by_reason.get(key, 0) + 1
    summary = (f"{len(lazy)} function-level imports of package modules or heavy libraries: {len(mine)} judged "
               f"({by_reason}), {len(lazy) - len(mine)} in files not judged yet ({len(later)} without a true reason)")
    print(summary)
    record_property("lazy_imports", summary)
    assert not bad, f"{len(bad)} function-level import(s) without a true reason:\n" + "\n".join(bad)
