"""User-facing errors.

Every error a user can cause by their input is a :class:`ModelseekError`. The CLI turns it into one line
on stderr and exit code 1. Input errors carry the file, line and field they concern so that the line reads
``path:line: field 'x': what is wrong``.
"""

from __future__ import annotations

from os import PathLike


class ModelseekError(Exception):
    """An error caused by the user's input or configuration (CLI exit code 1)."""


class InputError(ModelseekError, ValueError):
    """Bad input data, located by file, line and field where known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | PathLike | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        # a field named by a hostile file may hold line breaks (\n, \u2028): escaped, the error stays one line
        field = _one_line(str(self.field)) if self.field else ""
        what = f"field '{field}': " if field else ""
        # so may a message that quotes a damaged file (a schema name holding \r): the error stays one line
        return f"{_one_line(where)}{what}{_one_line(str(self.message))}"


def _one_line(text: str) -> str:
    """``text`` with non-printable characters (line breaks, \r, U+2028, controls) escaped as Python would."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class OutputError(ModelseekError):
    """A file could not be written (a full disk, a permission, a directory where a file goes): one line naming
    the path; ``errno`` is the system's error number where there is one (``errno.ENOSPC`` for a full disk)."""

    def __init__(self, message: str, *, path: str | PathLike | None = None, errno: int | None = None) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.errno = errno
        super().__init__(_one_line(f"{self.path}: {message}" if self.path is not None else message))


class NotFittedError(ModelseekError):
    """A learned object (ranker, retriever) used before :meth:`fit` (scikit-learn's ``NotFittedError``)."""


class ValidationError(ModelseekError):
    """A file broke several rules; ``problems`` holds one located message per violation."""

    def __init__(self, path: str | PathLike, problems: list[InputError]) -> None:
        self.path = str(path)
        self.problems = list(problems)
        first = self.problems[0] if self.problems else None
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(f"{first}{more}" if first else f"{path}: invalid")
