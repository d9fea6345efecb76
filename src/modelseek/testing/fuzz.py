"""Fuzzing helpers: Hypothesis strategies that damage a valid input file as a careless or hostile user
would, and the check that a command survived it.

The contract under test (issue #14): whatever the bytes, a command ends in exit 0 with a valid result,
exit 1 with located error lines that name the file (``error: PATH[:LINE]: [field 'F': ]...``), or
argparse's usage error (exit 2) — never a traceback.

    from modelseek.testing.fuzz import damaged, assert_clean_exit

    @given(damaged(valid_bytes))
    def test_validate_survives(data):
        path.write_bytes(data)
        assert_clean_exit(run_cli("validate", path), path)

Needs ``hypothesis`` (the ``dev`` extra); importing this module without it raises ImportError.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(max_examples: int) -> settings:
    """The fuzz suite's Hypothesis settings: ``max_examples`` times ``$MODELSEEK_FUZZ_SCALE`` (default 1), no
    deadline (commands start processes and models), the fixture and slowness health checks off. Whether the
    examples are a fixed sequence comes from the loaded profile (tests/conftest.py: derandomized by default)."""
    import os

    raw = os.environ.get("MODELSEEK_FUZZ_SCALE", "1")
    try:
        scale = int(raw)
    except ValueError:
        raise ValueError(f"MODELSEEK_FUZZ_SCALE must be a positive integer, got {raw!r}") from None
    if scale < 1:
        raise ValueError(f"MODELSEEK_FUZZ_SCALE must be a positive integer, got {raw!r}")
    return settings(max_examples=max_examples * scale, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

#: Values that break naive number parsing: non-finite, overflowing, underflowing, too many digits, other
#: scripts' digits, separators, signs and empties.
NASTY_NUMBERS = ("nan", "NaN", "-nan", "inf", "-inf", "Infinity", "-Infinity", "1e999", "-1e999", "1e308",
                 "1.7976931348623157e308", "4.9e-324", "1e-400", "9" * 400, "-0", "0x1A", "1_000", "1,5",
                 "\u22121", "\u0661\u0662", "\uff11", "+", "-", ".", "e5", "", "null", "true", "[]", "{}")

#: Text fragments that break naive text handling.
NASTY_TEXT = ("\x00", "\ufeff", "\r", "\r\n", "\u2028", "\x1b[31m", "\t", '"', "'", "\\", "#", ":", "- ", "{", "[",
              "&a", "*a", "!!python/object:os.system", "%YAML 1.1", "---", "...", "\u00e9", "\u5b57",
              "\U0001f642", " " * 50)

_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _flip(data: bytes, draw) -> bytes:
    if not data:
        return data
    i = draw(st.integers(0, len(data) - 1))
    return data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]


def _truncate(data: bytes, draw) -> bytes:
    return data[:draw(st.integers(0, max(0, len(data) - 1)))]


def _insert(data: bytes, draw) -> bytes:
    i = draw(st.integers(0, len(data)))
    junk = draw(st.binary(min_size=1, max_size=8) | st.sampled_from(NASTY_TEXT).map(lambda t: t.encode("utf-8")))
    return data[:i] + junk + data[i:]


def _number(data: bytes, draw) -> bytes:
    spans = [m.span() for m in _NUMBER.finditer(data)]
    if not spans:
        return data
    a, b = draw(st.sampled_from(spans))
    return data[:a] + draw(st.sampled_from(NASTY_NUMBERS)).encode("utf-8") + data[b:]


def _lines(data: bytes, draw) -> bytes:
    lines = data.split(b"\n")
    i = draw(st.integers(0, len(lines) - 1))
    how = draw(st.sampled_from(["drop", "duplicate", "swap", "drop-field", "extra-field", "blank"]))
    if how == "drop":
        del lines[i]
    elif how == "duplicate":
        lines.insert(i, lines[i])
    elif how == "swap":
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif how in ("drop-field", "extra-field"):
        sep = b"," if b"," in lines[i] else (b"\t" if b"\t" in lines[i] else b" ")
        fields = lines[i].split(sep)
        if how == "drop-field" and fields:
            del fields[draw(st.integers(0, len(fields) - 1))]
        else:
            fields.insert(draw(st.integers(0, len(fields))), b"extra")
        lines[i] = sep.join(fields)
    else:
        lines[i] = b""
    return b"\n".join(lines)


def _encoding(data: bytes, draw) -> bytes:
    text = data.decode("utf-8", "replace")
    how = draw(st.sampled_from(["latin-1", "utf-16", "utf-8-sig", "crlf", "cp1252-accents"]))
    if how == "latin-1":
        return (text + " caf\u00e9").encode("latin-1", "replace")
    if how == "cp1252-accents":
        return data.replace(b"a", b"\xe0", 1)
    if how == "utf-16":
        return text.encode("utf-16")
    if how == "utf-8-sig":
        return text.encode("utf-8-sig")
    return text.replace("\n", "\r\n").encode("utf-8")


_DAMAGES = {"flip": _flip, "truncate": _truncate, "insert": _insert, "number": _number, "lines": _lines,
            "encoding": _encoding}


@st.composite
def damaged(draw, valid: bytes, max_damages: int = 3) -> bytes:
    """``valid`` with 1..``max_damages`` random damages (flipped bytes, truncation, inserted junk or nasty
    text, a number replaced by a nasty one, a line dropped/duplicated/swapped/re-fielded, a wrong
    encoding), or one of the classic degenerate files (empty, whitespace only, a NUL byte, a BOM only)."""
    degenerate = draw(st.integers(0, 9)) == 0
    if degenerate:
        return draw(st.sampled_from([b"", b"\n", b"   \n\t\n", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe", valid * 2]))
    data = valid
    for name in draw(st.lists(st.sampled_from(sorted(_DAMAGES)), min_size=1, max_size=max_damages)):
        data = _DAMAGES[name](data, draw)
    return data


def assert_clean_exit(result, *paths: str | Path, ok_codes: Sequence[int] = (0, 1, 2)) -> None:
    """The command survived: no traceback, exit in ``ok_codes``; on exit 1 every error line names one of
    ``paths`` (the files the caller damaged) unless none is given; on exit 2 stderr is a usage message."""
    err = result.err
    assert "Traceback" not in err, err
    assert result.code in ok_codes, (result.code, err)
    if result.code == 1:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("error: ")]
        assert errors, f"exit 1 without an 'error: ' line: {err!r}"
        # either one line, or the validator's one line per problem and a closing count
        others = [ln for ln in lines if not ln.startswith("error: ")]
        assert (len(errors) == 1 and not others) or (
            len(others) == 1 and others[0].endswith("problem(s)")), f"not one located error: {err!r}"
        if paths:
            names = [str(p) for p in paths]
            for ln in errors:
                assert any(n in ln for n in names), f"error does not name the file ({', '.join(names)}): {ln}"
    elif result.code == 2:
        assert "usage:" in err or "error:" in err, err


__all__ = ["NASTY_NUMBERS", "NASTY_TEXT", "assert_clean_exit", "damaged"]
