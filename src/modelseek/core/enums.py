"""Options with a fixed set of values are enums whose errors list the valid values.

:class:`Choice` is the one enum base of the package: configs (:mod:`modelseek.core.config`) coerce to it, and
argparse options take it through :func:`modelseek.cli._common.choice`.
"""

from __future__ import annotations

import enum
import re
from typing import TypeVar

from .errors import InputError
from .registry import closest

_C = TypeVar("_C", bound="Choice")


class Choice(str, enum.Enum):
    """A string enum with a forgiving :meth:`parse` (case and surrounding spaces ignored); an unknown value
    is an ``InputError`` with "did you mean" and the valid values."""

    @classmethod
    def _normalise(cls, text: str) -> str:
        return text.strip().lower()

    @classmethod
    def _kind(cls) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()

    # As enum.StrEnum: a member prints as its value (``f"grading {scheme}"`` reads "grading ntcir").
    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @classmethod
    def values(cls) -> list[str]:
        return [m.value for m in cls]

    @classmethod
    def parse(cls: type[_C], value: str | Choice, field: str | None = None) -> _C:
        if isinstance(value, cls):
            return value
        text = cls._normalise(str(value))
        for member in cls:
            if text == member.value:
                return member
        close = closest(text, cls.values())
        hint = f" (did you mean {close!r}?)" if close else ""
        raise InputError(f"unknown {cls._kind()} {value!r}{hint}; valid values: {', '.join(cls.values())}",
                         field=field)
