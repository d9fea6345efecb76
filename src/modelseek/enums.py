"""Options with a fixed set of values are enums whose errors list the valid values."""

from __future__ import annotations

import enum
import re

from .errors import InputError


class Choice(str, enum.Enum):
    """A string enum with a forgiving :meth:`parse` (case and surrounding spaces ignored)."""

    @classmethod
    def _normalise(cls, text: str) -> str:
        return text.strip().lower()

    @classmethod
    def _kind(cls) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", " ", cls.__name__).lower()

    @classmethod
    def parse(cls, value: "str | Choice", field: str | None = None):
        if isinstance(value, cls):
            return value
        text = cls._normalise(str(value))
        for member in cls:
            if text == member.value:
                return member
        raise InputError(f"unknown {cls._kind()} {value!r}; valid values: {', '.join(m.value for m in cls)}",
                         field=field)
