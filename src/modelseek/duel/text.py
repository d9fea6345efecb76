"""Text a leaderboard can store and show, and the strict JSON reader of uploads.

Every string of a submission is valid Unicode (no lone surrogates: they cannot be encoded, so they could
neither be stored as UTF-8 nor shown), normalised to NFC. *Names* (model, team, precision, revision, prompt
names, string ``doc_id``\\ s) also hold no control (Cc), format (Cf: zero-width characters, bidi overrides),
line or paragraph separator, surrogate or default-ignorable character, no blank (:data:`BLANKS`: U+2800 BRAILLE
PATTERN BLANK, fillers) and no space but U+0020; free text (``description``,
provenance) may hold line breaks and tabs but no other control character and no bidi control. Two names are
the same model when their :func:`name_key`\\ s are equal: NFKC, case folding and removal of
default-ignorable characters (Unicode's ``NFKC_Casefold`` idea), so ``Model_0``, ``model_0`` + U+200B and
the full-width ``ｍodel_0`` are one name.

:func:`loads_strict` is the upload's JSON reader: malformed JSON, a duplicate key in an object, NaN or
Infinity, a number that overflows a float (``1e400``) or underflows it to 0 (``1e-400``, which Python reads as 0)
and a lone surrogate escape (``"\\udc80"``) are located errors naming the line.
"""  # noqa: RUF002 - the full-width letter above is the point of the example

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from ..core.errors import InputError

#: Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt, Unicode 15)
_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
              (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
              (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
              (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
_IGNORABLE_RE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _IGNORABLE) + "]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_BIDI = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A)) | {0x200E, 0x200F, 0x061C}
_NAME_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: visible-width blanks that are not white space to ``str.strip`` (a name ending in, or made of, U+2800 BRAILLE
#: PATTERN BLANK looked like another or like nothing); fillers are default-ignorable already
BLANKS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u2005\U0001d159")


def describe(ch: str) -> str:
    """``U+200B ZERO WIDTH SPACE``."""
    return f"U+{ord(ch):04X}" + (f" {unicodedata.name(ch)}" if unicodedata.name(ch, "") else "")


def _surrogate_error(text: str, field: str, source: str | None) -> None:
    m = _SURROGATE_RE.search(text)
    if m:
        raise InputError(f"holds a lone surrogate ({describe(m.group())}): not valid Unicode text",
                         path=source, field=field)


def clean_name(text: Any, field: str, source: str | None = None, limit: int = 200) -> str:
    """A name as stored: NFC, without control, format, separator or ignorable characters, no surrounding
    space, not empty, at most ``limit`` characters. Raises a located :class:`InputError`."""
    if not isinstance(text, str):
        raise InputError(f"must be a string, got {type(text).__name__}", path=source, field=field)
    _surrogate_error(text, field, source)
    text = unicodedata.normalize("NFC", text)
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in _NAME_BAD_CATEGORIES or _IGNORABLE_RE.match(ch) or ch in BLANKS or (cat == "Zs" and ch != " "):
            raise InputError(f"a name must not hold control characters, nor format, separator, blank or invisible "
                             f"ones ({describe(ch)})", path=source, field=field)
    if not text.strip():
        raise InputError("must be a non-empty name", path=source, field=field)
    if text != text.strip():
        raise InputError("a name must not start or end with white space", path=source, field=field)
    if len(text) > limit:
        raise InputError(f"too long: {len(text):,} characters > limit {limit:,}", path=source, field=field)
    return text


def clean_text(text: Any, field: str, source: str | None = None, limit: int | None = None) -> str:
    """Free text as stored: NFC, line breaks and tabs allowed, no other control character, no bidi control."""
    if not isinstance(text, str):
        raise InputError(f"must be a string, got {type(text).__name__}", path=source, field=field)
    _surrogate_error(text, field, source)
    text = unicodedata.normalize("NFC", text)
    for ch in text:
        o = ord(ch)
        if (unicodedata.category(ch) == "Cc" and ch not in "\n\t") or o in _BIDI:
            raise InputError(f"holds a control character ({describe(ch)})", path=source, field=field)
    if limit is not None and len(text) > limit:
        raise InputError(f"too long: {len(text):,} characters > limit {limit:,}", path=source, field=field)
    return text


def clean_tree(obj: Any, field: str, source: str | None = None) -> Any:
    """A JSON value (provenance) with every string and key checked by :func:`clean_text`."""
    if isinstance(obj, str):
        return clean_text(obj, field, source)
    if isinstance(obj, list):
        return [clean_tree(v, f"{field}[{i}]", source) for i, v in enumerate(obj)]
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            key = clean_text(str(k), f"{field}.{k}", source)
            out[key] = clean_tree(v, f"{field}.{key}", source)
        return out
    return obj


def name_key(name: str) -> str:
    """The key two names collide on: default-ignorable characters removed, NFKC, case folded, NFKC again."""
    text = _IGNORABLE_RE.sub("", _SURROGATE_RE.sub("\ufffd", str(name)))
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


_MARKS = re.compile("[\u200e\u200f]")


def _rep_rank(ch: str) -> tuple:
    """Which member stands for a class of look-alikes: an ASCII small letter, else an ASCII capital, else an ASCII
    digit, else the smallest code point (so ``l``, ``I``, ``1`` -> ``l`` and ``O``, ``0`` -> ``O``, as Unicode's
    prototypes; case folding after the mapping then joins ``O`` and ``o``)."""
    if ch.isascii() and ch.islower():
        return (0, ch)
    if ch.isascii() and ch.isupper():
        return (1, ch)
    if ch.isascii() and ch.isdigit():
        return (2, ch)
    return (3, ch)


#: horizontal strokes of every script that read as a hyphen in a name (TR39 maps them to one another but not to
#: ``-``: Han 一 and Hangul ㅡ to the katakana ー): joined with ``-``, as is every dash (category Pd) and minus
DASHES = frozenset("\u2212\u2796\u2500\u2501\u23af\u2015\u2014\u30fc\uff70\u4e00\u3161\u1173\u2f00\u31d0"
                   "\u2574\u2576\u2578\u257a\u257c\u257e\u23bc\u23bd\u2043\u02d7\u2cba\U00010191")


def _dashes() -> list[str]:
    import sys

    pd = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Pd"]
    return sorted(set(pd) | set(DASHES))


@functools.lru_cache(maxsize=1)
def confusable_classes() -> dict[str, str]:
    """Each character's stand-in for :func:`skeleton`: the classes of single-character look-alikes of Unicode's
    confusables.txt (as packaged by confusable-homoglyphs, which keeps each character's look-alikes but not the
    file's prototype column), closed transitively (``I`` ~ ``l`` and ``l`` ~ ``1`` make one class), each class
    standing for its member chosen by :func:`_rep_rank`; every dash of every script (:data:`DASHES`, category Pd)
    joins ``-``. Multi-character look-alikes (``rn`` for ``m``) are :func:`confusable_strings`."""
    from confusable_homoglyphs import confusables  # type: ignore[import-untyped]

    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    def union(x: str, y: str) -> None:
        a, b = find(x), find(y)
        if a != b:
            keep, drop = (a, b) if _rep_rank(a) <= _rep_rank(b) else (b, a)
            parent[drop] = keep

    for ch, entries in confusables.confusables_data.items():
        if len(ch) != 1:
            continue
        for e in entries:
            m = _MARKS.sub("", e["c"])
            if len(m) == 1:
                union(ch, m)
    for dash in _dashes():                 # (a dash already like a letter or digit keeps its class)
        if not any(c.isascii() and c.isalnum() for c in (find(dash),)):
            union("-", dash)
    return {ch: find(ch) for ch in parent}


@functools.lru_cache(maxsize=1)
def confusable_strings() -> dict[str, str]:
    """TR39's multi-character prototypes: a character whose look-alike is a string (``m`` looks like ``rn``,
    ``ǆ`` like ``dž``, ``Ⅲ`` like ``III``) -> that string, written in stand-ins (:func:`confusable_classes`). In
    confusables.txt a prototype of several characters is only ever a target, so mapping each such character to it
    (a character without a string of its own takes its class stand-in's: ``ⅿ`` -> ``m`` -> ``rn``) gives ``rn``
    and ``m`` one skeleton."""
    from confusable_homoglyphs import confusables

    protos = confusable_classes()
    out: dict[str, str] = {}
    for target, entries in confusables.confusables_data.items():
        target = _MARKS.sub("", target)
        if len(target) < 2:
            continue
        written = unicodedata.normalize("NFD", "".join(protos.get(c, c) for c in unicodedata.normalize("NFD", target)))
        for e in entries:
            ch = _MARKS.sub("", e["c"])
            if len(ch) == 1 and (ch not in out or len(written) < len(out[ch])):
                out[ch] = written
    return out


def multi_char_pairs() -> list[tuple[str, str]]:
    """Every (character, multi-character look-alike) pair of the confusables table (the tests walk them)."""
    from confusable_homoglyphs import confusables

    out = []
    for target, entries in confusables.confusables_data.items():
        target = _MARKS.sub("", target)
        if len(target) >= 2:
            out += [(m, target) for m in (_MARKS.sub("", e["c"]) for e in entries) if len(m) == 1]
    return out


def confusable_pairs() -> list[tuple[str, str]]:
    """Every (character, single-character look-alike) pair of the confusables table (the tests walk them)."""
    from confusable_homoglyphs import confusables

    out = []
    for ch, entries in confusables.confusables_data.items():
        if len(ch) == 1:
            out += [(ch, m) for m in (_MARKS.sub("", e["c"]) for e in entries) if len(m) == 1 and m != ch]
    return out


@functools.lru_cache(maxsize=65536)
def skeleton(name: str) -> str:
    """A confusable skeleton in the manner of Unicode TR39, computed on the name *as written*: invisible
    characters removed, NFD, each character replaced by its look-alike class's stand-in
    (:func:`confusable_classes`) and then by its multi-character prototype (:func:`confusable_strings`: ``m`` ->
    ``rn``), NFD again; then case folded (NFKC), so that the comparison of skeletons ignores
    case. Folding case first would lose look-alikes that differ by case (capital ``I`` for ``l``, Cyrillic
    ``Р`` for ``P``). Needs ``confusable-homoglyphs`` (extra ``web``)."""  # noqa: RUF002 - the look-alike is the point
    protos, strings = confusable_classes(), confusable_strings()
    text = unicodedata.normalize("NFC", _IGNORABLE_RE.sub("", _SURROGATE_RE.sub("\ufffd", str(name))))
    # a precomposed character with a string prototype (``ơ`` -> ``o'``) is mapped before NFD would split it
    text = unicodedata.normalize("NFD", "".join(strings.get(ch, ch) for ch in text))
    mapped = unicodedata.normalize("NFD", "".join(
        strings.get(ch) or strings.get(protos.get(ch, ch)) or protos.get(ch, ch) for ch in text))
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", mapped).casefold())


def skeletons(name: str) -> frozenset[str]:
    """The keys a name collides on: its :func:`skeleton` as written and the skeleton of its case-folded form
    (``VICTIM-MODE1`` folds to ``victim-mode1``, whose skeleton is ``victim-model``; ``modeI`` as written maps
    its capital ``I`` to ``l``). Two names look alike when their key sets meet (:func:`look_alike`)."""
    return frozenset({skeleton(name), skeleton(name_key(name))})


def look_alike(a: str, b: str) -> bool:
    """Whether two names look alike (case, width, invisible characters and TR39 confusables ignored)."""
    return not skeletons(a).isdisjoint(skeletons(b))


#: the script mixes one name may hold (TR39's "highly restrictive" profile: Latin with Han and kana, with Han and
#: Bopomofo, or with Han and Hangul); any other mix (Latin with Greek or Cyrillic) is refused
_SCRIPT_MIXES = ({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}, {"LATIN", "CJK", "BOPOMOFO"}, {"LATIN", "CJK", "HANGUL"})
_WIDTH_WORDS = ("FULLWIDTH", "HALFWIDTH")


def script_of(ch: str) -> str | None:
    """The script of a letter or a non-ASCII digit, from its Unicode name's first word (``LATIN``, ``CYRILLIC``,
    ``GREEK``, ``MATHEMATICAL``, ...; width variants by their script); ``None`` for other characters (digits,
    punctuation, marks and spaces belong to every script)."""
    cat = unicodedata.category(ch)
    if not (cat.startswith("L") or (cat == "Nd" and not ch.isascii())):
        return None
    words = unicodedata.name(ch, "UNKNOWN").split()
    if words[0] in _WIDTH_WORDS and len(words) > 1:
        words = words[1:]
    return words[0]


def mixed_scripts(name: str) -> list[str]:
    """The scripts of ``name`` when it mixes some (empty when it is written in one, or in an allowed mix)."""
    scripts = sorted({s for s in map(script_of, name) if s is not None})
    if len(scripts) < 2 or any(set(scripts) <= mix for mix in _SCRIPT_MIXES):
        return []
    return scripts


def check_single_script(name: str, field: str, source: str | None = None) -> None:
    """Refuse a name whose letters come from more than one script (Latin with a Greek or Cyrillic look-alike)."""
    scripts = mixed_scripts(name)
    if scripts:
        counts = {sc: sum(script_of(ch) == sc for ch in name) for sc in scripts}
        rare = min(scripts, key=lambda sc: (counts[sc], sc))
        first = next(ch for ch in name if script_of(ch) == rare)
        raise InputError(f"a name must be written in one script, this one mixes {', '.join(scripts)} "
                         f"({describe(first)})", path=source, field=field)


def safe_str(value: Any) -> str:
    """``value`` as a string that can always be encoded (lone surrogates shown as ``\\udc80``): the one
    display conversion of stored data, which never raises."""
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 - a value whose __str__ fails is shown by its type
        return f"<{type(value).__name__}>"
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ------------------------------------------------------------------------------------ strict JSON
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}\[\]:,]|[A-Za-z]+|\s+|.',
                    re.S)
_FLOAT_MAX = 1.7976931348623157e308


class Record(tuple, Mapping):
    """A JSON object with a ``doc_id`` (a per-sample record) as the strict reader holds it: its key/value pairs
    flattened into one read-only tuple, a third of a dict's memory (an upload holds hundreds of thousands of
    records; issue #35 bounds a pre-submission's memory to 10x the upload). A :class:`Mapping`."""

    __slots__ = ()

    def __new__(cls, pairs):
        return tuple.__new__(cls, [x for kv in pairs for x in kv])

    def __getitem__(self, key):
        flat = tuple.__getitem__
        for i in range(0, tuple.__len__(self), 2):
            if flat(self, i) == key:
                return flat(self, i + 1)
        raise KeyError(key)

    def __iter__(self):
        return iter(tuple.__getitem__(self, slice(0, None, 2)))

    def __len__(self) -> int:
        return tuple.__len__(self) // 2

    def __contains__(self, key) -> bool:
        return key in tuple.__getitem__(self, slice(0, None, 2))

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self.items()) == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _Refused(Exception):
    def __init__(self, kind: str, index: int, message: str) -> None:
        self.kind, self.index, self.message = kind, index, message


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _number_line(text: str, index: int) -> int | None:
    k = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0] in "-0123456789" or tok in ("NaN", "Infinity"):
            k += 1
            if k == index:
                return _line(text, m.start())
    return None


def _duplicate_line(text: str) -> tuple[int | None, str | None]:
    """Line and key of the first duplicate key (a small scanner; only run once a duplicate was seen)."""
    stack: list[list] = []          # [is_object, keys seen, expecting a key]
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok in "{[" and tok:
            stack.append([tok == "{", set(), tok == "{"])
        elif tok in "}]" and tok:
            if stack:
                stack.pop()
        elif tok == ",":
            if stack and stack[-1][0]:
                stack[-1][2] = True
        elif tok == ":":
            if stack:
                stack[-1][2] = False
        elif tok.startswith('"') and stack and stack[-1][0] and stack[-1][2]:
            try:
                key = json.loads(tok)
            except ValueError:
                key = tok
            if key in stack[-1][1]:
                return _line(text, m.start()), key
            stack[-1][1].add(key)
    return None, None


def _surrogate_line(text: str) -> int | None:
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"', text, re.S):
        if "\\u" in m.group() and _SURROGATE_RE.search(json.loads(m.group())):
            return _line(text, m.start())
    return None


def _hooks():
    seen = [0]

    def _float(token: str) -> float:
        seen[0] += 1
        value = float(token)
        if not math.isfinite(value):
            raise _Refused("number", seen[0], f"number {token[:24]} overflows a float")
        if value == 0.0 and any(c in "123456789" for c in token.lower().split("e")[0]):
            raise _Refused("number", seen[0], f"number {token[:24]} underflows a float: it would be read as 0 "
                                              "(the smallest is 4.9e-324)")
        return value

    def _int(token: str) -> int:
        seen[0] += 1
        try:
            value = int(token)
        except ValueError:
            raise _Refused("number", seen[0], f"integer with {len(token)} digits is too long") from None
        if abs(value) > _FLOAT_MAX:
            raise _Refused("number", seen[0], f"number {token[:24]} overflows a float")
        return value

    def _constant(token: str) -> float:
        seen[0] += 1
        raise _Refused("number", seen[0], f"{token} is not a number JSON allows (NaN and Infinity are refused)")

    def _pairs(pairs):
        keys = [k for k, _ in pairs]
        if "doc_id" in keys and len(set(keys)) == len(keys):
            return Record(pairs)
        d = dict(pairs)
        if len(d) != len(pairs):
            raise _Refused("duplicate", 0, "")
        return d

    return {"parse_float": _float, "parse_int": _int, "parse_constant": _constant, "object_pairs_hook": _pairs}


def loads_strict(text: str, source: str | None = None) -> Any:
    """Parse an upload; every problem is one located :class:`InputError` (see the module docstring)."""
    try:
        obj = json.loads(text, **_hooks())
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})", path=source, line=exc.lineno) from None
    except _Refused as exc:
        if exc.kind == "duplicate":
            line, key = _duplicate_line(text)
            raise InputError(f"duplicate key {safe_str(key)[:80]!r} in one object (JSON readers would silently "
                             "keep one of them)", path=source, line=line) from None
        raise InputError(exc.message, path=source, line=_number_line(text, exc.index)) from None
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply", path=source) from None
    if re.search(r"\\u[dD][89a-fA-F]", text):      # only a \u escape can put a surrogate into decoded text
        line = _surrogate_line(text)
        if line is not None:
            raise InputError("a string holds a lone surrogate (\\ud800-\\udfff escape without its pair): not "
                             "valid Unicode text", path=source, line=line)
    return obj
