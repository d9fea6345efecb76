"""Entry point: ``modelseek COMMAND ...``.

Every module in this package (except this one and those starting with ``_``) is a command group that
defines ``register(subparsers)``; adding a command is adding a file. Exit codes: 0 ok, 1 a user error
(one line on stderr), 2 usage, 130 interrupted, 141 the reader of stdout went away (``| head``).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import pkgutil
import re
import sys

import modelseek.cli as pkg

from .. import __version__
from ..core.errors import ModelseekError, ValidationError
from ._common import check_before_work
from ..core.io import write_error
from ..core.errors import InputError


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; ``only`` registers just the module of that name (a command's start-up
    then imports nothing of the others: ``evaluate`` does not pay for torch-backed command modules)."""
    parser = argparse.ArgumentParser(prog="modelseek", description="Which pre-trained model should I fine-tune?")
    parser.add_argument("--version", action="version", version=f"modelseek {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if mod.name == "main" or mod.name.startswith("_") or (only is not None and mod.name != only):
            continue
        module = importlib.import_module(f"modelseek.cli.{mod.name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    if not _interactive_stderr():  # a log gets plain progress lines (modelseek.core.progress), not the Hub's bar frames
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    words = sys.argv[1:] if argv is None else list(argv)
    first = next((w for w in words if not w.startswith("-")), None)
    lean = first in ("evaluate", "compare", "validate") and "-h" not in words and "--help" not in words
    try:  # the parser lists registries' members by name only (choices and help are lazy): no plugin is imported
        parser = build_parser(first if lean else None)
        args = parser.parse_args(argv)  # an option's type may load the member it names: a broken plugin is a line
    except ModelseekError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING - 10 * min(args.verbose, 2),
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        # options that need each other, every input file, no output onto an input: before any work
        check_before_work(args, _command_parser(parser, args))
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe surfaces here, inside the handler, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (``modelseek ... --json | head``): stop quietly, as Unix tools do. Python's
        # documented recipe: point stdout at devnull so the final flush at exit does not raise again.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by a closed pipe
    except ValidationError as exc:
        for p in exc.problems:
            print(f"error: {p}", file=sys.stderr)
        print(f"{exc.path}: {len(exc.problems)} problem(s)", file=sys.stderr)
        return 1
    except ModelseekError as exc:
        print(f"error: {_in_flags(exc, parser, args)}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS or exc.filename is not None:
            raise
        # every file goes through modelseek.core.io (an OutputError); a raw write error is standard output's (a full
        # disk under ``> file``, /dev/full): one line, and stdout silenced so the exit's flush does not fail again
        _silence_stdout()
        print(f"error: {write_error('standard output', exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


#: parameters the ranking library names in its errors, shown as flags by every command (others opt in: map_params)
_LIBRARY_PARAMS = frozenset({"params", "train_truth", "train_tasks", "cv"})


def _in_flags(exc: ModelseekError, parser: argparse.ArgumentParser, args: argparse.Namespace) -> ModelseekError:
    """A library error names the parameter it is about (``field="train_truth"``, `` `train_truth` `` in its text;
    ``params.KEY`` for a method's parameter): the command shows its own option for it, the one whose dest is that
    name (``--train-truth``; ``--param KEY``) — in the text always, as the field for the ranking library's
    parameters and, in a command that sets ``map_params`` (``True``, or the parameter names it maps: a command whose
    library also names recipe or config keys as fields keeps those), for every one. Nested commands (``eevee
    search``, ``duel db recover``) map to their own options; ``param_flags`` names what shows a parameter that no one
    option's dest is. The library holds the rule, the CLI the flag."""

    if not isinstance(exc, InputError):
        return exc
    head, _, key = (exc.field or "").partition(".")
    sub = _command_parser(parser, args)
    if sub is None:
        return exc
    flags = {a.dest: max(a.option_strings, key=len) for a in sub._actions if a.option_strings}
    if "param" in flags:
        flags.setdefault("params", flags["param"])
    # a library parameter that several options feed (fuse's task `features`: --tasks or --task-features)
    flags.update(getattr(args, "param_flags", {}))
    mapped = getattr(args, "map_params", False)
    mapped = mapped if isinstance(mapped, bool) else head in mapped
    # an error located in a file keeps the file's field (an artifact's params.view, a task row's split)
    if exc.path is None and head in flags and (mapped or head in _LIBRARY_PARAMS):
        exc.field = flags[head] + (f" {key}" if key else "")
    exc.message = re.sub(r"`(\w+)`", lambda m: flags.get(m.group(1), m.group(0)), exc.message)
    exc.args = (exc._format(),)
    return exc


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The parser of the command that ran: the top-level command's, or the nested one's (``eevee search``)."""
    found = None
    here = parser
    while True:
        subs = [a for a in here._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if not subs or not isinstance(name, str) or name not in subs[0].choices:
            return found
        here = found = subs[0].choices[name]


def _interactive_stderr() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


_OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (captured in tests)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
