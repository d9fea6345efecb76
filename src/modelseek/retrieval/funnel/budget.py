"""Budgets of wall-clock time: ``"4h"``, ``"90m"``, ``"3600s"``, ``"1h30m"``, ``"2.5h"`` -> seconds.

Written by hand: a duration with units is three lines of regular expression; no installed library parses
exactly these forms with located errors.
"""

from __future__ import annotations

import math
import re

from ...core.errors import InputError

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([hms])", re.I)
_WHOLE = re.compile(r"\s*(?:(?:\d+(?:\.\d*)?|\.\d+)\s*[hms]\s*)+", re.I)
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def parse_budget(text: str | float | int, field: str = "budget") -> float:
    """Seconds in ``text`` (a number with a unit, ``h``, ``m`` or ``s``, or several: ``1h30m``); a bare number
    is refused (minutes or hours? the unit is never guessed). Raises a one-line :class:`InputError`."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        s = str(text)
        if not _WHOLE.fullmatch(s):
            hint = " (add a unit: h, m or s)" if re.fullmatch(r"\s*[\d.]+\s*", s) else ""
            raise InputError(f"bad budget {s!r}{hint}: expected e.g. 4h, 90m, 3600s or 1h30m", field=field)
        seconds = sum(float(n) * _SECONDS[u.lower()] for n, u in _PART.findall(s))
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(f"budget must be a positive duration, got {text!r}", field=field)
    return seconds


def format_seconds(seconds: float) -> str:
    """``5400`` -> ``"1h30m"``, ``95`` -> ``"1m35s"``, ``0.4`` -> ``"0.4s"``."""
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    m, s = divmod(int(round(seconds)), 60)  # noqa: RUF046 - numpy<2 rounds a numpy float to a float
    h, m = divmod(m, 60)
    return (f"{h}h" if h else "") + (f"{m:02d}m" if h else f"{m}m") + ("" if h or not s else f"{s:02d}s")
