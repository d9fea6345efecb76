"""The documentation as a test: README's Use block and every block marked runnable in the guides run as written.

A runnable block is a fenced ``bash`` block preceded by the line ``<!-- runnable -->`` (invisible on GitHub and
in the built site). Each line is one ``modelseek`` command (``&&`` chains several, ``\\`` continues a line,
``# ...`` is a comment). A line whose comment starts with ``online:`` needs the Hugging Face Hub and one whose
comment starts with ``gpu:`` needs a GPU: those are skipped with that reason, every other line must exit 0.
The blocks of one page run in order in one folder of generated inputs (:func:`make_workspace`), so a page's
later blocks use what its earlier ones wrote, as a reader following the page would.

The commands run in-process (``modelseek.testing.cli.run_cli``), through the same ``main`` as the installed
``modelseek`` script; globs are expanded as a shell would.
"""

from __future__ import annotations

import glob
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from modelseek.testing.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MARKER = "<!-- runnable -->"
SKIP_TAGS = {"online:": "needs the Hugging Face Hub (online)", "gpu:": "needs a GPU"}


@dataclass
class Command:
    source: str  # "file:line" of the command's first line
    argv: list[str]
    skip: str | None = None  # the reason it is not run here


@dataclass
class Block:
    source: str
    commands: list[Command] = field(default_factory=list)
    python: str | None = None  # a ```python block: its code, run as one script


def _python_block(path: Path, lines: list[str], first: int) -> tuple[Block, int]:
    """The ```python block whose first code line is ``lines[first]``; returns it and the index after its fence."""
    j = first
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    code = "\n" * first + "\n".join(lines[first:j]) + "\n"  # line numbers of tracebacks are the page's own
    return Block(f"{path.name}:{first}", python=code), j + 1


def _split_comment(line: str) -> tuple[str, str]:
    """``cmd  # comment`` -> (cmd, comment), honouring quotes."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


def parse_blocks(path: Path) -> list[Block]:
    """Every runnable block of a Markdown file, with its commands located by file and line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i, outer = 0, ""  # outer: the fence of a plain code block being skipped (a page may show the marker in one)
    while i < len(lines):
        if outer or lines[i].strip() != MARKER:
            run = re.match(r"\s*(`{3,}|~{3,})", lines[i])
            if run and not outer:
                outer = run.group(1)
            elif run and run.group(1).startswith(outer) and not lines[i].strip()[len(run.group(1)):]:
                outer = ""
            i += 1
            continue
        fence = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if not fence.startswith("```"):
            raise AssertionError(f"{path.name}:{i + 1}: {MARKER} must come right before a ``` fence")
        if fence.startswith("```python"):
            block, i = _python_block(path, lines, i + 2)
            blocks.append(block)
            continue
        block = Block(f"{path.name}:{i + 2}")
        j = i + 2
        pending, start = "", 0
        while j < len(lines) and not lines[j].startswith("```"):
            text = lines[j]
            if not pending:
                start = j + 1
            if text.rstrip().endswith("\\"):
                pending += text.rstrip()[:-1] + " "
                j += 1
                continue
            full, pending = pending + text, ""
            cmd, comment = _split_comment(full)
            if cmd.strip():
                block.commands.extend(_commands(cmd, comment, f"{path.name}:{start}"))
            j += 1
        blocks.append(block)
        i = j + 1
    return blocks


def _commands(cmd: str, comment: str, where: str) -> list[Command]:
    skip = next((why for tag, why in SKIP_TAGS.items() if comment.lower().startswith(tag)), None)
    out = []
    for part in cmd.split("&&"):
        words = shlex.split(part)
        if not words or words[0] != "modelseek":
            raise AssertionError(f"{where}: a runnable line runs `modelseek ...` commands only, got {part.strip()!r}")
        out.append(Command(where, words[1:], skip))
    return out


def make_workspace(folder: Path) -> Path:
    """The generated inputs the documented commands name, written by ``docs/make_inputs.py`` (the script the
    pages point readers to, so they can follow them from a fresh clone)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("modelseek_docs_make_inputs", DOCS / "make_inputs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.make_inputs(folder)


def expand(argv: list[str], cwd: Path) -> list[str]:
    """Expand globs relative to ``cwd`` as a shell would (a pattern matching nothing stays as written)."""
    out = []
    for word in argv:
        hits = sorted(glob.glob(word, root_dir=cwd)) if any(c in word for c in "*?[") else []
        out.extend(hits or [word])
    return out


def run_page(path: Path, workspace: Path, monkeypatch) -> tuple[list[str], list[str]]:
    """Run every runnable block of ``path`` in ``workspace``; returns (failures, skipped), each a located line."""
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("MODELSEEK_CACHE", str(workspace / "cache"))  # an installed default stays in here
    failures, skipped = [], []
    for block in parse_blocks(path):
        if block.python is not None:
            try:
                exec(compile(block.python, str(path), "exec"), {"__name__": "__docs__"})
            except Exception as exc:  # noqa: BLE001 - any error of the example is the failure to report
                tb = exc.__traceback__
                while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename != str(path):
                    tb = tb.tb_next
                line = tb.tb_lineno if tb is not None else "?"
                failures.append(f"{path.name}:{line}: python block raised {type(exc).__name__}: {exc}")
                return failures, skipped
            continue
        for c in block.commands:
            if c.skip:
                skipped.append(f"{c.source}: modelseek {' '.join(c.argv)} ({c.skip})")
                continue
            r = run_cli(*expand(c.argv, workspace))
            if r.code != 0:
                last = (r.err.strip().splitlines() or ["(no output)"])[-1]
                failures.append(f"{c.source}: `modelseek {' '.join(c.argv)}` exited {r.code}: {last}")
                return failures, skipped  # later lines depend on this one's outputs
    return failures, skipped


def documented_pages() -> list[Path]:
    pages = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [p for p in pages if "_build" not in p.parts and MARKER in p.read_text(encoding="utf-8")]


# ---------------------------------------------------------------------------------------------------------------
# the runner itself: it parses what the pages hold and fails on a broken example

GOOD = """# A test guide

<!-- runnable -->
```bash
modelseek demo --out try --layout     # a generated layout
modelseek rank try/subtask-a -m avgrank --cv 3 -o cv.txt && modelseek evaluate cv.txt -g try/subtask-a/ground-truth.csv
modelseek profiles fetch my-org/my-bert -o p.json   # online: needs the Hub
```

```bash
modelseek this-block-is-not-marked
```
"""


def test_parser_locates_commands_chains_continuations_and_skips(tmp_path):
    page = tmp_path / "guide.md"
    page.write_text(GOOD + "\n<!-- runnable -->\n```bash\nmodelseek evaluate a.txt \\\n   -g 'b c.csv'  # x\n```\n")
    blocks = parse_blocks(page)
    assert [b.source for b in blocks] == ["guide.md:4", "guide.md:15"]
    cmds = [c for b in blocks for c in b.commands]
    assert [c.argv[0] for c in cmds] == ["demo", "rank", "evaluate", "profiles", "evaluate"]
    assert [c.source for c in cmds] == ["guide.md:5", "guide.md:6", "guide.md:6", "guide.md:7", "guide.md:16"]
    assert [c.skip for c in cmds] == [None, None, None, SKIP_TAGS["online:"], None]
    assert cmds[-1].argv == ["evaluate", "a.txt", "-g", "b c.csv"]


def test_a_marked_block_of_another_program_is_refused(tmp_path):
    page = tmp_path / "bad.md"
    page.write_text(f"{MARKER}\n```bash\npython -m http.server\n```\n")
    with pytest.raises(AssertionError, match=r"bad.md:3: a runnable line runs `modelseek"):
        parse_blocks(page)


def test_a_deliberately_broken_example_fails_with_its_line(tmp_path, monkeypatch):
    page = tmp_path / "broken-guide.md"
    broken = GOOD.replace("-m avgrank", "-m avgrnk")  # a typo in a method name, as a stale guide has
    page.write_text(broken)
    ws = make_workspace(tmp_path / "ws")
    failures, skipped = run_page(page, ws, monkeypatch)
    assert len(failures) == 1 and failures[0].startswith("broken-guide.md:6: `modelseek rank try/subtask-a")
    assert "exited 1" in failures[0] and "avgrnk" in failures[0]
    assert skipped == []  # the run stopped at the broken line: the lines after it depend on its output

    page.write_text(GOOD)  # the same guide without the typo passes, and skips only the online line
    failures, skipped = run_page(page, make_workspace(tmp_path / "ws2"), monkeypatch)
    assert failures == [] and len(skipped) == 1 and "profiles fetch" in skipped[0]
    assert (tmp_path / "ws2" / "cv.txt").stat().st_size > 0


def test_every_page_with_runnable_blocks_is_collected():
    pages = {p.name for p in documented_pages()}
    assert "README.md" in pages and "getting-started.md" in pages
    readme_use = re.search(r"## Use\n+" + re.escape(MARKER) + r"\n```bash\n", (ROOT / "README.md").read_text())
    assert readme_use, "README's Use block must be marked runnable"


# ---------------------------------------------------------------------------------------------------------------
# the pages themselves


@pytest.mark.slow(reason="each page's commands run in a fresh folder of generated inputs (4-5 min for all pages)")
@pytest.mark.parametrize("page", documented_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_runnable_blocks_run_as_written(page, tmp_path, monkeypatch):
    failures, skipped = run_page(page, make_workspace(tmp_path / "ws"), monkeypatch)
    assert not failures, "\n".join(failures)
    assert len(skipped) == sum(bool(c.skip) for b in parse_blocks(page) for c in b.commands)


def _skipped_commands() -> list[Command]:
    return [c for page in documented_pages() for b in parse_blocks(page) for c in b.commands if c.skip]


@pytest.mark.parametrize("command", _skipped_commands(), ids=lambda c: c.source)
def test_a_line_that_cannot_run_here_still_parses_and_says_why(command):
    """A line marked ``online:`` or ``gpu:`` is not run, but its command and options must still exist (the
    parser accepts it), and the skip names the line and the reason (``pytest -rs`` lists them)."""
    from modelseek.cli.main import build_parser

    try:
        args = build_parser().parse_args(command.argv)
    except SystemExit as exc:
        pytest.fail(f"{command.source}: `modelseek {' '.join(command.argv)}` does not parse (exit {exc.code})")
    assert callable(getattr(args, "func", None))
    pytest.skip(f"{command.source}: `modelseek {' '.join(command.argv)}` not run: {command.skip}")


# ---------------------------------------------------------------------------------------------------------------
# the built site: warnings are errors, the references are complete


def _sphinx(src: Path, out: Path):
    import subprocess
    import sys

    pytest.importorskip("sphinxarg", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed: pip install -e '.[docs]'")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d", str(out / ".doctrees"),
           str(src), str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**__import__("os").environ,
                                                                                "HF_HUB_OFFLINE": "1"})


def _cli_paths() -> list[tuple[str, list[str]]]:
    """(``modelseek sub ...``, the option strings of that parser) for every parser of the command line."""
    import argparse

    from modelseek.cli.main import build_parser

    out = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        out.append((path, [o for a in parser._actions for o in a.option_strings if o.startswith("--")]))
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, f"{path} {name}")

    walk(build_parser(), "modelseek")
    return out


@pytest.mark.slow(reason="a full Sphinx build of the site (about 20 s)")
def test_the_site_builds_with_warnings_as_errors_and_its_references_are_complete(tmp_path):
    import modelseek

    r = _sphinx(DOCS, tmp_path / "html")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    api = (tmp_path / "html" / "reference" / "api.html").read_text(encoding="utf-8")
    missing = [name for name in modelseek.__all__ if f'id="modelseek.{name}"' not in api]
    assert not missing, f"public names without an entry in the API reference: {missing}"
    assert "An immutable ranking per topic" in api  # docstrings are rendered, not only names
    cli = (tmp_path / "html" / "reference" / "cli.html").read_text(encoding="utf-8")
    for path, options in _cli_paths():
        section = path.replace(" ", "-")
        assert f'id="{section}"' in cli or path == "modelseek", f"{path}: no section in the CLI reference"
        absent = [o for o in options if o not in cli and o not in ("--help", "--version")]
        assert not absent, f"{path}: options missing from the CLI reference: {absent}"
    assert len(_cli_paths()) > 30  # every command group and its sub-commands were walked


@pytest.mark.slow(reason="1.4 s: a Sphinx build in the quick loop on 2 busy cores")
def test_a_broken_link_fails_the_build(tmp_path):
    """The build's settings (docs/conf.py, -W) turn a link to a missing page or heading into a failure."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    (src / "index.md").write_text("# Home\n\n[ok](other.md#a-heading)\n\n```{toctree}\nother\n```\n")
    (src / "other.md").write_text("# Other\n\n## A heading\n")
    assert _sphinx(src, tmp_path / "ok").returncode == 0
    (src / "index.md").write_text("# Home\n\n[gone](other.md#no-such-heading)\n\n```{toctree}\nother\n```\n")
    r = _sphinx(src, tmp_path / "bad")
    assert r.returncode != 0 and "no-such-heading" in r.stderr


def test_readme_links_point_at_existing_files():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not t.startswith(("http://", "https://", "mailto:"))]
    assert local, "README links to the docs"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
    assert len(text.splitlines()) <= 200


def test_a_marker_shown_inside_a_code_block_is_not_run(tmp_path):
    page = tmp_path / "howto.md"
    shown = f"````markdown\n{MARKER}\n```bash\nmodelseek demo\n```\n````\n"
    page.write_text(shown + f"\n{MARKER}\n```bash\nmodelseek --version\n```\n")
    blocks = parse_blocks(page)
    assert [b.source for b in blocks] == ["howto.md:9"] and blocks[0].commands[0].argv == ["--version"]


def test_a_broken_python_example_fails_with_its_line(tmp_path, monkeypatch):
    page = tmp_path / "api-guide.md"
    page.write_text(f"# API\n\n{MARKER}\n```python\nimport modelseek as ms\npool = ms.load_pool('my-pol.yaml')\n```\n")
    (tmp_path / "ws").mkdir()
    failures, _ = run_page(page, tmp_path / "ws", monkeypatch)
    assert len(failures) == 1 and failures[0].startswith("api-guide.md:6: python block raised InputError")
    assert "my-pol.yaml" in failures[0]
    page.write_text(page.read_text().replace("my-pol.yaml", "offline"))
    assert run_page(page, tmp_path / "ws", monkeypatch) == ([], [])
