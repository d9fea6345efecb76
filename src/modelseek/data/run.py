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
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Iterable, Iterator, Mapping, Sequence

from ..errors import InputError, ValidationError

MAX_RUN_IDS = 5
_FIELDS = ("topicID", "Q0", "docID", "Rank", "Score", "RunID")


@dataclass(frozen=True)
class Entry:
    doc: str
    rank: int
    score: float
    line: int = 0  # line in the source file (0 when built in memory)


def natural_key(s: str):
    """Sort key that orders '2' before '10' and mixes text and numbers sensibly."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(s)) if p]


class Run(Mapping[str, tuple[Entry, ...]]):
    """An immutable ranking per topic. Derived runs are new objects."""

    def __init__(self, topics: Mapping[str, Iterable[Entry]], run_id: str = "run") -> None:
        if not run_id or any(c.isspace() for c in run_id):
            raise InputError(f"run id must be a non-empty word without spaces, got {run_id!r}", field="RunID")
        self.run_id = run_id
        ordered: dict[str, tuple[Entry, ...]] = {}
        for topic, entries in topics.items():
            es = list(entries)
            # Stable sort: equal ranks keep their input (line) order.
            es.sort(key=lambda e: e.rank)
            ordered[str(topic)] = tuple(es)
        self._topics = MappingProxyType(ordered)

    # ----------------------------------------------------------------------------------------- building
    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]], run_id: str = "run") -> "Run":
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

    def with_id(self, run_id: str) -> "Run":
        return Run(dict(self._topics), run_id)

    def restrict(self, topics: Iterable[str]) -> "Run":
        keep = [str(t) for t in topics]
        return Run({t: self._topics[t] for t in keep if t in self._topics}, self.run_id)

    # ----------------------------------------------------------------------------------------- views
    def __getitem__(self, topic: str) -> tuple[Entry, ...]:
        return self._topics[str(topic)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)

    def ranking(self, topic: str) -> list[str]:
        """DocIDs in evaluation order (Rank, then line order)."""
        return [e.doc for e in self._topics[str(topic)]]

    def scores(self, topic: str) -> dict[str, float]:
        return {e.doc: e.score for e in self._topics[str(topic)]}

    def lines(self) -> list[str]:
        out = []
        for topic, entries in self._topics.items():
            for e in entries:
                out.append(f"{topic} Q0 {e.doc} {e.rank} {_fmt(e.score)} {self.run_id}")
        return out

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


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return "-1e+308" if x < 0 else "1e+308"
    return f"{x:.6g}" if abs(x) >= 1e-4 or x == 0 else f"{x:.6e}"


def write_runs(path: str | Path, runs: Sequence[Run]) -> None:
    from ..io import atomic_write_text

    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise InputError(f"duplicate run ids: {ids}")
    text = "".join(line + "\n" for r in runs for line in r.lines())
    atomic_write_text(path, text)


# --------------------------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class _Line:
    lineno: int
    topic: str
    q0: str
    doc: str
    rank: int
    score: float
    run_id: str


def _parse(path: Path, problems: list[InputError] | None) -> list[_Line]:
    """Parse every line; collect format problems into ``problems`` or raise on the first if None."""

    def bad(msg: str, line: int, field: str | None = None) -> None:
        err = InputError(msg, path=path, line=line, field=field)
        if problems is None:
            raise err
        problems.append(err)

    from ..io import read_text

    out: list[_Line] = []
    # One reader: a missing file, a directory and non-UTF-8 bytes are located InputErrors.
    for lineno, raw in enumerate(read_text(path, "run file").split("\n"), start=1):
        if not raw.strip():
            continue
        parts = raw.split()
        if len(parts) != 6:
            missing = _FIELDS[len(parts)] if len(parts) < 6 else None
            if missing:
                bad(f"expected 6 columns (topicID Q0 docID Rank Score RunID), found {len(parts)}", lineno,
                    missing)
            else:
                bad(f"expected 6 columns (topicID Q0 docID Rank Score RunID), found {len(parts)}", lineno)
            continue
        topic, q0, doc, rank_s, score_s, run_id = parts
        try:
            rank = int(rank_s)
        except ValueError:
            bad(f"not an integer: {rank_s!r}", lineno, "Rank")
            continue
        if rank < 1:
            bad(f"must be >= 1, got {rank}", lineno, "Rank")
            continue
        try:
            score = float(score_s)
        except ValueError:
            bad(f"not a number: {score_s!r}", lineno, "Score")
            continue
        if not math.isfinite(score):  # NaN, inf, or a number too large for a float (1e999)
            bad(f"must be a finite number, got {score_s!r}", lineno, "Score")
            continue
        out.append(_Line(lineno, topic, q0, doc, rank, score, run_id))
    return out


def _build(path: Path, lines: list[_Line], problems: list[InputError] | None) -> dict[str, Run]:
    seen: dict[tuple[str, str, str], int] = {}
    grouped: dict[str, dict[str, list[Entry]]] = {}
    for ln in lines:
        key = (ln.run_id, ln.topic, ln.doc)
        if key in seen:
            err = InputError(f"duplicate (run, topic, doc) = ({ln.run_id}, {ln.topic}, {ln.doc}); first on line "
                             f"{seen[key]}", path=path, line=ln.lineno, field="docID")
            if problems is None:
                raise err
            problems.append(err)
            continue
        seen[key] = ln.lineno
        grouped.setdefault(ln.run_id, {}).setdefault(ln.topic, []).append(Entry(ln.doc, ln.rank, ln.score, ln.lineno))
    return {rid: Run(topics, rid) for rid, topics in grouped.items()}


def read_runs(path: str | Path) -> dict[str, Run]:
    """All runs in a TREC run file, by run id (file order). Raises on the first malformed line."""
    path = Path(path)
    runs = _build(path, _parse(path, None), None)
    if not runs:
        raise InputError("run file is empty", path=path)
    return runs


def read_run(path: str | Path, run_id: str | None = None) -> Run:
    runs = read_runs(path)
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

    Rules: 6 columns, ``Q0``, integer rank >= 1, numeric score; at most ``max_run_ids`` run ids; no
    duplicate (run, topic, doc); every topic of ``topics`` present and every candidate of ``docs`` present
    per topic, no unknown docIDs; rank 1 carries the highest score and ranks agree with the score order.
    Subtask A docIDs must match exactly (no zero padding); Subtask B ids must carry no ``.png`` suffix and
    no leading zeros. Raises :class:`ValidationError` listing every violation with its line.
    """
    path = Path(path)
    subtask = str(subtask).upper()
    if subtask not in ("A", "B"):
        raise InputError(f"unknown subtask {subtask!r}; valid: A, B")
    problems: list[InputError] = []
    lines = _parse(path, problems)
    if not lines and not problems:
        problems.append(InputError("run file is empty", path=path))
    for ln in lines:
        if ln.q0 != "Q0":
            problems.append(InputError(f"expected 'Q0', found {ln.q0!r}", path=path, line=ln.lineno, field="Q0"))
        if subtask == "B":
            for fname, value in (("topicID", ln.topic), ("docID", ln.doc)):
                if normalize_b_id(value) != value:
                    problems.append(InputError(f"{value!r} must be written {normalize_b_id(value)!r} (no .png "
                                               f"suffix, no leading zeros)", path=path, line=ln.lineno, field=fname))
    runs = _build(path, lines, problems)
    if len(runs) > max_run_ids:
        first_extra = list(runs)[max_run_ids]
        line = min(e.line for es in runs[first_extra].values() for e in es)
        problems.append(InputError(f"{len(runs)} run ids; at most {max_run_ids} are allowed", path=path, line=line,
                                   field="RunID"))
    want_topics = None if topics is None else [str(t) for t in topics]
    want_docs = None if docs is None else [str(d) for d in docs]
    if subtask == "B":
        want_topics = None if want_topics is None else [normalize_b_id(t) for t in want_topics]
        want_docs = None if want_docs is None else [normalize_b_id(d) for d in want_docs]
    for rid, run in runs.items():
        if want_topics is not None:
            extra = [t for t in run if t not in set(want_topics)]
            for t in extra[:20]:
                problems.append(InputError(f"unknown topic {t!r} in run {rid!r}", path=path,
                                           line=run[t][0].line, field="topicID"))
            missing = [t for t in want_topics if t not in run]
            if missing:
                problems.append(InputError(f"run {rid!r} misses {len(missing)} topic(s): {', '.join(missing[:10])}"
                                           f"{' ...' if len(missing) > 10 else ''}", path=path, field="topicID"))
        for topic, entries in run.items():
            first = min(e.line for e in entries)
            if want_docs is not None:
                wanted = set(want_docs)
                for e in entries:
                    if e.doc not in wanted:
                        hint = ""
                        if e.doc.lstrip("0") in wanted:
                            hint = f" (no zero padding: write {e.doc.lstrip('0')!r})"
                        problems.append(InputError(f"unknown docID {e.doc!r}{hint}", path=path, line=e.line,
                                                   field="docID"))
                present = {e.doc for e in entries}
                missing = [d for d in want_docs if d not in present]
                if missing:
                    problems.append(InputError(f"topic {topic!r} of run {rid!r} ranks {len(present & wanted)} of "
                                               f"{len(want_docs)} candidates; missing {', '.join(missing[:10])}",
                                               path=path, line=first, field="docID"))
            # ranks must agree with scores: a better (smaller) rank never has a smaller score.
            by_rank = sorted(entries, key=lambda e: e.rank)
            if by_rank[0].rank != 1:
                problems.append(InputError(f"topic {topic!r} of run {rid!r} has no rank 1", path=path,
                                           line=by_rank[0].line, field="Rank"))
            best_score = max(e.score for e in entries)
            for prev, cur in zip(by_rank, by_rank[1:]):
                if cur.rank > prev.rank and cur.score > prev.score:
                    problems.append(InputError(f"rank {cur.rank} has a higher score ({cur.score:g}) than rank "
                                               f"{prev.rank} ({prev.score:g}) in topic {topic!r}", path=path,
                                               line=cur.line, field="Score"))
                    break
            else:
                if by_rank[0].score < best_score:
                    problems.append(InputError(f"rank 1 does not carry the highest score in topic {topic!r}",
                                               path=path, line=by_rank[0].line, field="Score"))
    if problems:
        problems.sort(key=lambda p: (p.line is None, p.line or 0))
        raise ValidationError(path, problems)
    return runs
