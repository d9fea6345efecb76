"""Runs: the output of a model-retrieval method, in TREC format.

A run file has one line per (topic, candidate): ``topicID Q0 docID Rank Score RunID``, separated by any
whitespace (spaces, tabs; a UTF-8 byte-order mark is ignored), as written by trec_eval-style tools and ranx.
A file may hold several runs (RunIDs); the official rules allow at most 5.

Tie policy (written down and tested): a topic is ordered by the Rank column; equal ranks keep their line
order; Score is not used for ordering. :meth:`Run.from_scores` assigns ranks 1..n by decreasing score;
equal scores are ordered by docID in natural order (numeric ids numerically).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...core.errors import InputError, ValidationError
from ...core.io import atomic_write_text, decode_text, read_bytes

MAX_RUN_IDS = 5
_FIELDS = ("topicID", "Q0", "docID", "Rank", "Score", "RunID")


@dataclass(frozen=True)
class Entry:
    doc: str
    rank: int
    score: float
    line: int = 0  # line in the source file (0 when built in memory)


#: digit runs longer than this are compared without int() (Python refuses int() of over 4,300 digits)
_LONG_DIGITS = 4000


def _number(p: str) -> tuple:
    """A digit run as a sort key in numeric order: its int, or for a run too long for int() (a hostile file's
    300,001-digit id) infinity then its length and digits (larger than any int, ordered among themselves)."""
    if len(p) <= _LONG_DIGITS:
        return (0, int(p), "")
    digits = p.lstrip("0") or "0"
    if len(digits) <= _LONG_DIGITS:
        return (0, int(digits), "")
    return (0, math.inf, "", len(digits), digits)


def natural_key(s: str):
    """Sort key that orders '2' before '10' and mixes text and numbers sensibly."""
    return [_number(p) if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(s)) if p]


_TEXT_NUMBER = re.compile(r"([^0-9]*)([0-9]*)")


def natural_order(ids: Sequence[str]) -> list[int]:
    """The indices of ``ids`` sorted by :func:`natural_key` (stable). Ids of the usual form, ASCII text then
    digits (``q123``, ``1001``, ``abc``), are sorted by one flat key (100,000 topic ids in 0.1 s instead of
    1.5 s); any other id makes it sort them all by :func:`natural_key`, which orders those the same way."""
    fast = _shared_prefix_order(ids)
    if fast is not None:
        return fast
    flat = []
    for s in ids:
        m = _TEXT_NUMBER.fullmatch(s) if s.isascii() and len(s) <= _LONG_DIGITS else None
        if m is None:
            return sorted(range(len(ids)), key=lambda i: natural_key(ids[i]))
        text, digits = m.groups()
        # natural_key: [(1, 0, text)] then [(0, int(digits), "")]; an empty text part is absent, so it sorts first
        flat.append((bool(text), text, bool(digits), int(digits) if digits else 0))
    return sorted(range(len(ids)), key=flat.__getitem__)


def _shared_prefix_order(ids: Sequence[str]) -> list[int] | None:
    """:func:`natural_order` of ids that are one shared text then ASCII digits (``q1`` ... ``q100000``, ``1`` ...
    ``48``): their natural keys differ only in that number, so one stable integer sort orders them (100,000
    topic ids in 15 ms instead of 0.1 s). None for any other ids."""
    if len(ids) < 2:
        return None
    low, high = min(ids), max(ids)
    n = 0
    while n < min(len(low), len(high)) and low[n] == high[n]:
        n += 1  # the prefix that min and max share, every id shares
    prefix = low[:n].rstrip("0123456789")  # ends where the number starts: 'q1' of q1 and q10 is 'q'
    if not prefix.isascii():
        return None
    tails = [s[len(prefix):] for s in ids]
    joined = "".join(tails)
    if not (joined.isascii() and joined.isdigit() and all(tails) and max(map(len, tails)) <= 18):
        return None
    numbers = np.fromiter(map(int, tails), dtype=np.int64, count=len(tails))
    return np.argsort(numbers, kind="stable").tolist()


class RunArrays:
    """A run as columns: rows grouped by topic (``topics[i]`` holds rows ``offsets[i]:offsets[i+1]``), each
    topic in evaluation order (Rank, then line order).

    ``topics``, ``offsets`` (int64, len(topics) + 1), ``doc`` (object, str), ``rank`` (int64), ``score``
    (float64), ``line`` (int64, 0 when built in memory), and optionally ``doc_code``/``doc_names`` (``doc[i] ==
    doc_names[doc_code[i]]``, from the reader). A reader's run passes ``doc=None`` with the codes, and
    ``line=None`` when its rows are in line order (line ``i + 1``): both are then spelt out on first use only
    (``evaluate`` reads the codes; a million-row run is 16 MB lighter)."""

    __slots__ = ("_doc", "_line", "doc_code", "doc_names", "offsets", "rank", "score", "topics")

    def __init__(self, topics: list[str], offsets: np.ndarray, doc: np.ndarray | None, rank: np.ndarray,
                 score: np.ndarray, line: np.ndarray | None, doc_code: np.ndarray | None = None,
                 doc_names: np.ndarray | None = None) -> None:
        if doc is None and (doc_code is None or doc_names is None):
            raise ValueError("RunArrays needs doc, or doc_code with doc_names")
        self.topics, self.offsets, self._doc, self.rank, self.score = topics, offsets, doc, rank, score
        self._line, self.doc_code, self.doc_names = line, doc_code, doc_names

    @property
    def doc(self) -> np.ndarray:
        if self._doc is None:
            assert self.doc_names is not None and self.doc_code is not None  # checked by __init__
            self._doc = self.doc_names[self.doc_code]
            self._doc.setflags(write=False)
        return self._doc

    @property
    def line(self) -> np.ndarray:
        if self._line is None:
            self._line = np.arange(1, self.rank.size + 1, dtype=np.int64)
            self._line.setflags(write=False)
        return self._line

    def columns(self) -> list[np.ndarray]:
        """The arrays held now (those spelt out on first use are made read-only then)."""
        return [c for c in (self.offsets, self._doc, self.rank, self.score, self._line, self.doc_code,
                            self.doc_names) if c is not None]


class Run(Mapping[str, tuple[Entry, ...]]):
    """An immutable ranking per topic. Derived runs are new objects.

    Stored as columns (:class:`RunArrays`), so that reading, validating and scoring a million lines is a few
    array operations; ``run[topic]`` builds that topic's :class:`Entry` tuple on first use."""

    def __init__(self, topics: Mapping[str, Iterable[Entry]], run_id: str = "run") -> None:
        _check_run_id(run_id)
        self.run_id = run_id
        names: list[str] = []
        sizes: list[int] = []
        docs: list[str] = []
        ranks: list[int] = []
        scores: list[float] = []
        lines: list[int] = []
        for topic, entries in topics.items():
            es = list(entries)
            # Stable sort: equal ranks keep their input (line) order.
            es.sort(key=lambda e: e.rank)
            names.append(str(topic))
            sizes.append(len(es))
            for e in es:
                docs.append(e.doc)
                ranks.append(e.rank)
                scores.append(e.score)
                lines.append(e.line)
        if len(set(names)) != len(names):
            raise InputError("a topic is given twice", field="topicID")
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        self._set(RunArrays(names, offsets, _object_array(docs), np.asarray(ranks, dtype=np.int64),
                            np.asarray(scores, dtype=np.float64), np.asarray(lines, dtype=np.int64)))

    def _set(self, arrays: RunArrays) -> None:
        for col in arrays.columns():
            col.setflags(write=False)
        self._a = arrays
        self._pos = {t: i for i, t in enumerate(arrays.topics)}
        self._cache: dict[str, tuple[Entry, ...]] = {}

    @classmethod
    def from_arrays(cls, arrays: RunArrays, run_id: str = "run") -> Run:
        """A run from columns already in :class:`RunArrays` order (not copied: do not change them after)."""
        _check_run_id(run_id)
        run = cls.__new__(cls)
        run.run_id = run_id
        run._set(arrays)
        return run

    def arrays(self) -> RunArrays:
        """The run as columns (read-only views)."""
        return self._a

    # ----------------------------------------------------------------------------------------- building
    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]], run_id: str = "run") -> Run:
        """Ranks 1..n by decreasing score per topic; equal scores by natural docID order.

        Non-finite scores (a candidate that failed) rank last.
        """
        topics = {}
        for topic, per_doc in scores.items():
            items = []
            for d, s in per_doc.items():
                s = float(s)
                items.append((str(d), s if math.isfinite(s) else -math.inf))
            items.sort(key=lambda x: natural_key(x[0]))
            items.sort(key=lambda x: -x[1] if x[1] != -math.inf else math.inf)
            topics[str(topic)] = [Entry(d, i + 1, s) for i, (d, s) in enumerate(items)]
        return cls(topics, run_id)

    def with_id(self, run_id: str) -> Run:
        return Run.from_arrays(self._a, run_id)

    def restrict(self, topics: Iterable[str]) -> Run:
        keep = [str(t) for t in topics]
        return Run({t: self[t] for t in keep if t in self._pos}, self.run_id)

    def map_docs(self, mapping: Mapping[str, str]) -> Run:
        """A new run whose docIDs are renamed by ``mapping`` (ids it does not hold stay as they are)."""
        a = self._a
        doc = _object_array([mapping.get(d, d) for d in a.doc.tolist()])
        a = RunArrays(a.topics, a.offsets, doc, a.rank, a.score, a.line)
        return Run.from_arrays(a, self.run_id)

    # ----------------------------------------------------------------------------------------- views
    def __getitem__(self, topic: str) -> tuple[Entry, ...]:
        topic = str(topic)
        hit = self._cache.get(topic)
        if hit is None:
            i = self._pos[topic]
            a = self._a
            lo, hi = int(a.offsets[i]), int(a.offsets[i + 1])
            hit = tuple(Entry(d, r, s, ln) for d, r, s, ln in zip(a.doc[lo:hi].tolist(), a.rank[lo:hi].tolist(),
                                                                   a.score[lo:hi].tolist(), a.line[lo:hi].tolist()))
            self._cache[topic] = hit
        return hit

    def __contains__(self, topic: object) -> bool:
        return str(topic) in self._pos

    def __iter__(self) -> Iterator[str]:
        return iter(self._a.topics)

    def __len__(self) -> int:
        return len(self._a.topics)

    def ranking(self, topic: str) -> list[str]:
        """DocIDs in evaluation order (Rank, then line order)."""
        i = self._pos[str(topic)]
        return self._a.doc[self._a.offsets[i]:self._a.offsets[i + 1]].tolist()

    def scores(self, topic: str) -> dict[str, float]:
        i = self._pos[str(topic)]
        lo, hi = self._a.offsets[i], self._a.offsets[i + 1]
        return dict(zip(self._a.doc[lo:hi].tolist(), self._a.score[lo:hi].tolist()))

    def lines(self) -> list[str]:
        a = self._a
        sizes = np.diff(a.offsets)
        topics = [t for t, n in zip(a.topics, sizes.tolist()) for _ in range(n)]
        rid = self.run_id
        return [f"{t} Q0 {d} {r} {_fmt(s)} {rid}" for t, d, r, s in zip(topics, a.doc.tolist(), a.rank.tolist(),
                                                                      a.score.tolist())]

    def write(self, path: str | Path) -> None:
        write_runs(path, [self])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        return self.run_id == other.run_id and self.lines() == other.lines()

    def __hash__(self) -> int:
        return hash((self.run_id, tuple(self.lines())))

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, {len(self)} topics)"


def check_run_id(run_id: str, field: str = "RunID") -> None:
    """A run id that can be written: a non-empty word without spaces and without the control or format characters
    :func:`validate_run` refuses (a U+202E would write a run that ``validate`` then refuses)."""
    if not run_id or any(c.isspace() for c in run_id):
        raise InputError(f"run id must be a non-empty word without spaces, got {run_id!r}", field=field)
    c = bad_identifier_char(run_id)
    if c is not None:
        raise InputError(f"{run_id!r} holds {describe_char(c)}, a control or format character", field=field)


_check_run_id = check_run_id


def _object_array(items: Sequence[str]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-1e+308" if x < 0 else "1e+308"
    return f"{x:.6g}" if abs(x) >= 1e-4 or x == 0 else f"{x:.6e}"


def write_runs(path: str | Path, runs: Sequence[Run]) -> None:
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate run ids: {ids}")
    text = "".join(line + "\n" for r in runs for line in r.lines())
    atomic_write_text(path, text)


# --------------------------------------------------------------------------------------------- parsing
MAX_RANK = 2**31 - 1
_INT = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() would also take Arabic-Indic or full-width ones
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.I)


def _rank_int(text: str) -> int:
    """The value of a Rank that matched :data:`_INT`; a digit run too long to be a rank (past :data:`MAX_RANK`) is
    returned as ``MAX_RANK + 1`` without ``int()``, which refuses more than 4,300 digits (a hostile file's 300,001)."""
    if len(text.lstrip("+-").lstrip("0")) > len(str(MAX_RANK)):
        return -(MAX_RANK + 1) if text.startswith("-") else MAX_RANK + 1
    return int(text)

class _Table(NamedTuple):
    topic: np.ndarray | None  # None: only the codes are there (arrow reader for read_runs)
    q0: np.ndarray
    doc: np.ndarray | None
    rank: np.ndarray
    score: np.ndarray
    run_id: np.ndarray | None
    line: np.ndarray | None  # None: line i + 1 for row i (the fast path of read_runs)
    # optional (from the C reader): codes and distinct values of run id, topic and docID columns
    codes: dict | None = None


def bad_identifier_char(value: str) -> str | None:
    """The first control, format, surrogate, private-use or unassigned character of ``value`` (None if clean).

    Such characters are invisible or break lines when printed (a byte-order mark in the middle of a
    concatenated file, a NUL, a zero-width space): an identifier holding one can never be matched by eye."""
    if value.isascii():
        return next((c for c in value if ord(c) < 32 or ord(c) == 127), None)
    import unicodedata

    return next((c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")), None)


def describe_char(c: str) -> str:
    import unicodedata

    return f"U+{ord(c):04X}" + (f" ({unicodedata.name(c)})" if unicodedata.name(c, "") else "")


def _constant(value: str, n: int) -> np.ndarray:
    """A read-only column of ``n`` copies of ``value`` (a broadcast view: no memory per line)."""
    return np.broadcast_to(np.array([value], dtype=object), (n,))


def _parse_arrow(path: Path, need_q0: bool) -> _Table | None:
    """The fast path: pyarrow's CSV reader over a plain file (columns separated by single spaces, streamed from
    the file; other white space is rewritten first by :func:`modelseek.retrieval.data._arrow.single_spaced`); text
    columns
    are dictionary-encoded in C++, so no Python string is made per line, only per distinct value. Ranks are
    checked per distinct value with the careful reader's rule (pyarrow would take ``0x1``, ``int()`` would take
    ``1_0``). None when the file needs the careful reader (a line of another length, a blank line, a value out
    of range ...)."""
    from . import _arrow  # pyarrow: imported on first read, not by `import modelseek`  # lazy: pyarrow

    coded = _arrow.read_spaced(path, "run file", ["topic", "q0", "doc", "rank", "score", "run"], ("score",),
                               values_only=() if need_q0 else ("q0",))
    if coded is None:
        return None
    n = coded.rows
    score = coded.floats["score"]
    if not np.isfinite(score).all():
        return None
    rcodes, rvalues = coded.text["rank"]
    values = []
    for v in rvalues.tolist():
        if not _INT.fullmatch(v):
            return None
        r = _rank_int(v)
        if r < 1 or r > MAX_RANK:
            return None
        values.append(r)
    rank = np.asarray(values, dtype=np.int64)[rcodes]
    codes = {c: coded.text[c] for c in ("run", "topic", "doc")}
    q0 = coded.text.pop("q0")
    if any((v == "").any() for _, v in (*codes.values(), q0)):
        return None  # an empty field: two spaces in a row, or a line starting with one
    if not need_q0:  # read_runs: the codes are all it needs (the docID column is built per run, in run order)
        del q0, coded
        return _Table(None, _constant("Q0", n), None, rank, score, None, None, codes=codes)
    take = {c: names_[codes_] for c, (codes_, names_) in codes.items()}
    return _Table(take["topic"], q0[1][q0[0]], take["doc"], rank, score, take["run"], np.arange(1, n + 1),
                  codes=codes)


def _parse_careful(path: Path, text: str, problems: list[InputError] | None, strict: bool) -> _Table:
    """Line by line; every problem located (collected into ``problems``, or raised on the first if None)."""

    def bad(msg: str, line: int, field: str | None = None) -> None:
        err = InputError(msg, path=path, line=line, field=field)
        if problems is None:
            raise err
        problems.append(err)

    topic, q0, doc, rank, score, rid, line = [], [], [], [], [], [], []
    expected = "expected 6 columns (topicID Q0 docID Rank Score RunID)"
    for lineno, raw in enumerate(text.split("\n"), start=1):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) < 6:
            bad(f"{expected}, found {len(parts)}", lineno, _FIELDS[len(parts)])
            continue
        if len(parts) > 6 and strict:
            extra = ", ".join(repr(p[:40]) for p in parts[6:9]) + (" ..." if len(parts) > 9 else "")
            bad(f"{expected}, found {len(parts)}: extra column(s) {extra} (evaluate ignores them, as trec_eval "
                f"does; a submission must not have them)", lineno)
            continue
        t, q, d, rank_s, score_s, r = parts[:6]
        ok = True
        for fname, value in (("topicID", t), ("docID", d), ("RunID", r)):
            c = bad_identifier_char(value)
            if c is not None:
                bad(f"{value!r} holds {describe_char(c)}, a control or format character", lineno, fname)
                ok = False
                break
        if not ok:
            continue
        if not _INT.fullmatch(rank_s):
            bad(f"not an integer: {rank_s!r}" + (" (write ranks with ASCII digits 0-9)"
                                                  if any(ch.isdigit() and not ch.isascii() for ch in rank_s)
                                                  else ""), lineno, "Rank")
            continue
        rk = _rank_int(rank_s)
        if rk < 1:
            bad(f"must be >= 1, got {rank_s[:40]}", lineno, "Rank")
            continue
        if rk > MAX_RANK:
            bad(f"must be <= {MAX_RANK}, got {rank_s[:40]}" + (f"... ({len(rank_s):,} characters)"
                                                                if len(rank_s) > 40 else ""), lineno, "Rank")
            continue
        if not _FLOAT.fullmatch(score_s):
            bad(f"not a number: {score_s[:60]!r}" + (" (write scores with ASCII digits 0-9)"
                                                     if any(ch.isdigit() and not ch.isascii() for ch in score_s)
                                                     else ""), lineno, "Score")
            continue
        sc = float(score_s)
        if not math.isfinite(sc):  # NaN, inf, or a number too large for a float (1e999)
            bad(f"must be a finite number, got {score_s[:60]!r}", lineno, "Score")
            continue
        topic.append(t)
        q0.append(q)
        doc.append(d)
        rank.append(rk)
        score.append(sc)
        rid.append(r)
        line.append(lineno)
    return _Table(_object_array(topic), _object_array(q0), _object_array(doc), np.asarray(rank, dtype=np.int64),
                  np.asarray(score, dtype=np.float64), _object_array(rid), np.asarray(line, dtype=np.int64))


def _parse(path: Path, problems: list[InputError] | None, strict: bool = True) -> _Table:
    """The one reader of run files: the fast path, or the careful one when the fast path refuses the file."""
    table = _parse_arrow(path, need_q0=problems is not None)
    if table is not None:
        return table
    data = read_bytes(path, "run file")
    return _parse_careful(path, decode_text(data, path), problems, strict)  # non-UTF-8 bytes: located


def _build(path: Path, tab: _Table, problems: list[InputError] | None) -> dict[str, Run]:
    """Group a parsed table into runs (file order of run ids, then of topics); duplicates are problems."""
    n = tab.rank.size
    if n == 0:
        return {}
    if tab.codes is not None:  # dictionary codes of the arrow reader, renumbered in order of first appearance
        rcode, rnames = _first_seen(*tab.codes["run"])
        tcode, tnames = _first_seen(*tab.codes["topic"])
        dcode, dnames = tab.codes["doc"]
    else:  # without codes, every reader fills the three text columns
        assert tab.run_id is not None and tab.topic is not None and tab.doc is not None
        if (tab.run_id == tab.run_id[0]).all():  # one run id (the usual file): no hashing of a million strings
            rcode, rnames = np.zeros(n, dtype=np.int64), np.array([tab.run_id[0]], dtype=object)
        else:
            rcode, rnames = factorize(tab.run_id)
        tcode, tnames = factorize(tab.topic)
        dcode, dnames = factorize(tab.doc)
    tnames = np.asarray(tnames, dtype=object)
    key = rcode.astype(np.int64)  # (run, topic, doc) as one integer, computed in place
    key *= len(tnames)
    key += tcode
    key *= len(dnames)
    key += dcode
    keep = np.ones(n, dtype=bool)
    # a sort finds whether any (run, topic, doc) repeats (np.unique hashes: slower); a stable one says which
    sk = np.sort(key)
    repeats = bool((sk[1:] == sk[:-1]).any())
    del sk
    if repeats:
        dup = duplicated(key)
        first: dict[int, int] = {}
        lines = tab.line if tab.line is not None else np.arange(1, n + 1)
        for i in np.flatnonzero(~dup[: np.flatnonzero(dup)[-1] + 1]).tolist():
            first.setdefault(int(key[i]), int(lines[i]))
        for i in np.flatnonzero(dup).tolist():
            err = InputError(f"duplicate (run, topic, doc) = ({rnames[rcode[i]]}, {tnames[tcode[i]]}, "
                             f"{dnames[dcode[i]]}); first on line {first[int(key[i])]}", path=path,
                             line=int(lines[i]), field="docID")
            if problems is None:
                raise err
            problems.append(err)
        keep = ~dup
    runs: dict[str, Run] = {}
    single = len(rnames) == 1 and bool(keep.all())
    doc_names = np.asarray(dnames, dtype=object)
    for r, rid in enumerate(rnames.tolist()):
        # topics in the order they first appear in this run's lines
        if single:  # every row, and in order already when the file is grouped by topic: no copy of the columns
            rows, tc, names = None, tcode, tnames
        else:
            rows = np.flatnonzero((rcode == r) & keep)
            tc, first_codes = first_seen(tcode[rows])
            names = tnames[first_codes]
        order = _topic_rank_order(tc, tab.rank if rows is None else tab.rank[rows])
        sel = rows if order is None else order if rows is None else rows[order]
        offsets = np.zeros(len(names) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tc, minlength=len(names)), out=offsets[1:])
        cols = [tab.doc, tab.rank, tab.score, tab.line, dcode]
        doc, rank, score, line, codes = (c if sel is None or c is None else c[sel] for c in cols)
        if tab.line is None and sel is not None:
            line = sel + 1
        runs[str(rid)] = Run.from_arrays(RunArrays([str(t) for t in names], offsets, doc, rank, score, line, codes,
                                                   doc_names), str(rid))
    return runs


def _first_seen(codes: np.ndarray, names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    new, order = first_seen(codes)
    return new, names[order]


# Grouping helpers of the readers and of ``evaluate``, in numpy: pandas' factorize and duplicated do
# the same, but importing pandas costs about 50 MB and 0.2 s, more than the whole evaluation of a 28 MB run
def first_seen(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``codes`` renumbered 0, 1, ... in order of first appearance, the original code of each new one): pandas'
    ``factorize`` of an integer column, by one stable sort."""
    codes = np.asarray(codes)
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64), codes[:0]
    top = np.maximum.accumulate(codes)
    if codes[0] == 0 and (top[1:] - top[:-1] <= 1).all():  # numbered so already (pyarrow's dictionaries are)
        return codes, np.arange(int(top[-1]) + 1, dtype=codes.dtype)
    uniq, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    renumber = np.empty(len(uniq), dtype=np.int64)
    renumber[order] = np.arange(len(uniq), dtype=np.int64)
    return renumber[inverse.ravel()], uniq[order]


def factorize(values: Sequence[str] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each value's code, the distinct values in order of first appearance as an object array) of strings;
    one dictionary lookup per value (only the careful reader's and in-memory runs' columns come here: the fast
    reader's columns arrive as codes)."""
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in np.asarray(values, dtype=object).tolist()),
                        dtype=np.int64, count=len(values))
    return codes, _object_array(list(index))


def duplicated(key: np.ndarray) -> np.ndarray:
    """Whether each integer key came before (the first of equal keys is not a duplicate), by one stable sort."""
    order = np.argsort(key, kind="stable")
    sk = key[order]
    out = np.zeros(key.size, dtype=bool)
    out[order[1:]] = sk[1:] == sk[:-1]
    return out


def _topic_rank_order(tc: np.ndarray, rank: np.ndarray) -> np.ndarray | None:
    """Permutation putting rows (in line order) in (topic, rank, line) order: None (the identity) for a file
    already grouped by topic with increasing ranks, else two stable integer sorts (line order is kept by
    stability)."""
    if tc.size < 2:
        return None
    dt, dr = np.diff(tc), np.diff(rank)
    if ((dt > 0) | ((dt == 0) & (dr >= 0))).all():
        return None
    by_rank = np.argsort(rank, kind="stable")
    return by_rank[np.argsort(tc[by_rank], kind="stable")]


def read_runs(path: str | Path, extra_columns: bool = False) -> dict[str, Run]:
    """All runs in a TREC run file, by run id (file order). Raises on the first malformed line.

    ``extra_columns=True`` reads lines with more than six columns as trec_eval does (the rest is ignored)."""
    path = Path(path)
    runs = _build(path, _parse(path, None, strict=not extra_columns), None)
    if not runs:
        raise InputError("run file is empty", path=path)
    return runs


def read_run(path: str | Path, run_id: str | None = None, extra_columns: bool = False) -> Run:
    runs = read_runs(path, extra_columns)
    if run_id is not None:
        if run_id not in runs:
            raise InputError(f"no run {run_id!r} in file (runs: {', '.join(runs)})", path=path, field="RunID")
        return runs[run_id]
    if len(runs) > 1:
        raise InputError(f"file holds {len(runs)} runs ({', '.join(runs)}); choose one", path=path, field="RunID")
    return next(iter(runs.values()))


# ------------------------------------------------------------------------------------------ validation
def normalize_b_id(x: str) -> str:
    """Subtask B ids: drop a ``.png`` suffix and leading zeros of a numeric id."""
    x = str(x)
    if x.lower().endswith(".png"):
        x = x[:-4]
    if x.isdigit():
        x = x.lstrip("0") or "0"
    return x


def validate_run(path: str | Path, topics: Iterable[str] | None = None, docs: Iterable[str] | None = None,
                 subtask: str = "A", max_run_ids: int = MAX_RUN_IDS) -> dict[str, Run]:
    """Check a run file against the official submission rules; return its runs when valid.

    Rules: 6 columns, ``Q0``, integer rank >= 1 (ASCII digits), numeric score; identifiers without control
    or format characters; at most ``max_run_ids`` run ids; no duplicate (run, topic, doc); every topic of
    ``topics`` present and every candidate of ``docs`` present per topic, no unknown docIDs; rank 1 carries
    the highest score and ranks agree with the score order. Subtask A docIDs must match exactly (no zero
    padding); Subtask B ids must carry no ``.png`` suffix and no leading zeros. Raises
    :class:`ValidationError` listing every violation with its line. Every check is one pass over arrays
    (linear in the number of lines).
    """

    path = Path(path)
    subtask = str(subtask).upper()
    if subtask not in ("A", "B"):
        raise InputError(f"unknown subtask {subtask!r}; valid: A, B")
    problems: list[InputError] = []
    tab = _parse(path, problems)
    assert tab.line is not None  # need_q0: every column is spelt out
    if tab.rank.size == 0 and not problems:
        problems.append(InputError("run file is empty", path=path))
    for i in np.flatnonzero(tab.q0 != "Q0").tolist():
        problems.append(InputError(f"expected 'Q0', found {tab.q0[i]!r}", path=path, line=int(tab.line[i]),
                                   field="Q0"))
    if subtask == "B":
        _check_b_ids(path, tab, problems)
    runs = _build(path, tab, problems)
    if len(runs) > max_run_ids:
        first_extra = list(runs)[max_run_ids]
        line = int(runs[first_extra].arrays().line.min())
        problems.append(InputError(f"{len(runs)} run ids; at most {max_run_ids} are allowed", path=path, line=line,
                                   field="RunID"))
    want_topics = None if topics is None else [str(t) for t in topics]
    want_docs = None if docs is None else [str(d) for d in docs]
    if subtask == "B":
        want_topics = None if want_topics is None else [normalize_b_id(t) for t in want_topics]
        want_docs = None if want_docs is None else [normalize_b_id(d) for d in want_docs]
    for rid, run in runs.items():
        _check_run(path, rid, run, want_topics, want_docs, problems)
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ValidationError(path, problems)
    return runs


def _check_b_ids(path: Path, tab, problems: list) -> None:
    """Subtask B: topic and doc ids written without a .png suffix and without leading zeros."""
    assert tab.line is not None  # validate_run's table: every column is spelt out
    import pandas as pd  # lazy: pandas

    for fname, col in (("topicID", tab.topic), ("docID", tab.doc)):
        values = pd.unique(col)
        wrong = {v for v in values.tolist() if normalize_b_id(v) != v}
        if wrong:
            for i in np.flatnonzero(pd.Series(col).isin(wrong).to_numpy()).tolist():
                v = col[i]
                problems.append(InputError(f"{v!r} must be written {normalize_b_id(v)!r} (no .png suffix, no "
                                           f"leading zeros)", path=path, line=int(tab.line[i]), field=fname))


def _check_run(path: Path, rid: str, run: Run, want_topics: list[str] | None, want_docs: list[str] | None,
               problems: list) -> None:
    """The rules of :func:`validate_run` for one run id: its topics, its docIDs, ranks in score order."""
    import pandas as pd  # lazy: pandas

    a = run.arrays()
    sizes = np.diff(a.offsets)
    starts = a.offsets[:-1]
    seg = np.repeat(np.arange(len(a.topics)), sizes)
    if want_topics is not None:
        topic_set = set(want_topics)
        extra = [i for i, t in enumerate(a.topics) if t not in topic_set]
        for i in extra[:20]:
            tid = a.topics[i]
            hint = (f" (zero-padded: the official topicID is {tid.lstrip('0')!r})"
                    if tid.isdigit() and tid.lstrip("0") in topic_set else "")
            problems.append(InputError(f"unknown topic {tid!r} in run {rid!r}{hint}", path=path,
                                       line=int(a.line[starts[i]:starts[i] + sizes[i]].min()), field="topicID"))
        missing = [t for t in want_topics if t not in run]
        if missing:
            problems.append(InputError(f"run {rid!r} misses {len(missing)} topic(s): {', '.join(missing[:10])}"
                                       f"{' ...' if len(missing) > 10 else ''}", path=path, field="topicID"))
    first_line = np.minimum.reduceat(a.line, starts) if a.line.size else a.line
    if want_docs is not None:
        doc_index = pd.Index(list(dict.fromkeys(want_docs)), dtype=object)
        doc_set = set(want_docs)
        known = doc_index.get_indexer(a.doc) >= 0
        for i in np.flatnonzero(~known).tolist():
            d = a.doc[i]
            hint = ""
            if d.lstrip("0") in doc_set:
                hint = f" (no zero padding: write {d.lstrip('0')!r})"
            problems.append(InputError(f"unknown docID {d!r}{hint}", path=path, line=int(a.line[i]), field="docID"))
        n_known = np.bincount(seg[known], minlength=len(a.topics))
        for i in np.flatnonzero(n_known < len(doc_index)).tolist():
            present = set(a.doc[starts[i]:starts[i] + sizes[i]].tolist())
            missing = [d for d in want_docs if d not in present]
            problems.append(InputError(f"topic {a.topics[i]!r} of run {rid!r} ranks {int(n_known[i])} of "
                                       f"{len(want_docs)} candidates; missing {', '.join(missing[:10])}",
                                       path=path, line=int(first_line[i]), field="docID"))
    # ranks must agree with scores: a better (smaller) rank never has a smaller score.
    for i in np.flatnonzero(a.rank[starts] != 1).tolist():
        problems.append(InputError(f"topic {a.topics[i]!r} of run {rid!r} has no rank 1", path=path,
                                   line=int(a.line[starts[i]]), field="Rank"))
    same = seg[1:] == seg[:-1]
    worse = same & (a.rank[1:] > a.rank[:-1]) & (a.score[1:] > a.score[:-1])
    rows = np.flatnonzero(worse) + 1
    flagged = np.zeros(len(a.topics), dtype=bool)
    if rows.size:
        first_of = np.r_[True, seg[rows][1:] != seg[rows][:-1]]
        for j in rows[first_of].tolist():
            t = int(seg[j])
            flagged[t] = True
            problems.append(InputError(f"rank {a.rank[j]} has a higher score ({a.score[j]:g}) than rank "
                                       f"{a.rank[j - 1]} ({a.score[j - 1]:g}) in topic {a.topics[t]!r}",
                                       path=path, line=int(a.line[j]), field="Score"))
    if a.score.size:
        best = np.maximum.reduceat(a.score, starts)
        for i in np.flatnonzero(~flagged & (a.score[starts] < best)).tolist():
            problems.append(InputError(f"rank 1 does not carry the highest score in topic {a.topics[i]!r}",
                                       path=path, line=int(a.line[starts[i]]), field="Score"))
