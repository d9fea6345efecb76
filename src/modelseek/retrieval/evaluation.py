"""``evaluate(run, truth)``: the official NTCIR-19 Model Retrieval scorer, and more.

Each topic of the ground truth is ordered by the run's Rank column (ties by line order; Score is not used),
or, with ``order="trec_eval"``, as trec_eval orders it: by Score descending, then docID descending (Rank is
ignored). nDCG@k uses gain 2^rel - 1 (``rel`` under the paper's scheme) and discount log2(i + 1) with the
ideal ranking over *all* candidates of the topic; candidates missing from the run count as 0; a topic
missing from the run scores 0 on every metric (1 on regret); the score is the plain mean over topics.
MRR and every binary measure count a candidate as relevant when its grade is at least ``relevance_level``
(trec_eval's ``-l``, default 1). ``evaluate`` never writes into its inputs.

``kendall`` is Vigna's weighted Kendall tau between the run's order and the ground-truth scores (any
higher-is-better score: F1, accuracy ...); a topic missing from the run has no value (NaN, left out of the
means). A run whose docIDs match no model id of the ground truth on the topics they share is an error, not
a report of zeros (e.g. a run of Hugging Face ids scored against a table of numeric ids).

How it is computed (why not pytrec_eval or ranx underneath): every topic's rows are put in evaluation order
once (one stable sort over the whole run), joined to the ground truth once (one hash lookup of integer
(topic, docID) keys) into a :class:`~modelseek.retrieval.metrics.Batch`, and every metric is reached through the
registry (:data:`modelseek.retrieval.metrics.METRICS`): the built-ins compute all topics at once from the batch (segment
sums, ``bincount`` by topic; weighted Kendall tau over all pairs of all topics in chunks), a metric with only a
per-list form is called topic by topic. That is linear in the number of lines, with no Python loop per topic
for the built-ins. ``benchmarks/eval_speed.py`` checks the per-topic values against pytrec_eval (trec_eval's C
code) on 10,000 x 100 and 100,000 x 20 graded runs and times the whole process beside it, ranx and (when its
source can be built) trec_eval's binary. Putting pytrec_eval underneath would not be faster: its input is nested
dicts, whose building from a million lines costs about what this whole core does, and neither peer computes the
official grading, tiers, regret or weighted tau.

``pool`` and :func:`harmonise` are the library's: ``modelseek evaluate`` and ``compare`` call them, so that
what the command does on some input, ``evaluate`` does on the same input with the same answer.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .data.report import Report
from .data.run import Run, RunArrays, factorize, first_seen
from .data.truth import GradingScheme, GroundTruth, TruthArrays
from ..core.enums import Choice
from ..core.errors import InputError
from .metrics import DEFAULT_METRICS, METRICS, Batch, Metric, resolve
from .data.pool import load_pool  # the pool module (config records): read only when a pool is needed
from .data.run import read_runs
from .data.style_truth import is_style_truth, load_style_truth, score_style_run

if TYPE_CHECKING:
    from .data.pool import Pool


class Order(Choice):
    """How a topic's candidates are put in order before scoring.

    * ``rank`` — by the Rank column, equal ranks in line order (the official scorer; Score is not used).
    * ``trec_eval`` — as trec_eval: Score descending, then docID descending (Rank is ignored).
    """

    RANK = "rank"
    TREC_EVAL = "trec_eval"


def evaluate(run: Run | str | os.PathLike, truth: GroundTruth | str | os.PathLike,
             metrics: Sequence[str] = DEFAULT_METRICS, scheme: GradingScheme | str = GradingScheme.NTCIR,
             topics: Sequence[str] | None = None, order: Order | str = Order.RANK, relevance_level: int = 1,
             pool: Pool | str | os.PathLike | None = None) -> Report:
    """Score ``run`` against ``truth``; ``topics`` restricts to a subset (default: every truth topic).

    ``run`` and ``truth`` may be files, read as ``modelseek evaluate`` reads them: a run file holding one run id, a
    ground truth in the official CSV or TREC qrels (told apart by their form). A Subtask B truth (``image_id,
    model_id``: ``train.csv``) is routed as the command routes it: the run's MRR over the truth's images with its
    bootstrap interval, a :class:`~modelseek.style.evaluation.StyleScore` (``to_dict()`` is what ``modelseek
    evaluate --json`` prints for the run); ``metrics`` and the options of graded scoring do not apply to it.

    ``pool`` names the models two ways (a pool's ids and its Hugging Face ids): see :func:`harmonise`; the
    default reads the NTCIR pool for a CSV ground truth only when a docID of the run is not a model id of the
    ground truth (as ``modelseek evaluate`` does), ``"none"`` matches ids as written. ``relevance_level`` above
    every grade of the ground truth is an :class:`InputError` (nothing could count as relevant)."""
    run_path = None
    if isinstance(run, (str, os.PathLike)):
        run_path, run = run, _one_run(run)
    if isinstance(truth, (str, os.PathLike)):
        truth = Path(os.fspath(truth))
        style = _style_truth(truth)
        if style is not None:
            return score_style_run(run, style)  # type: ignore[return-value]
        truth = (GroundTruth.from_qrels(truth) if GroundTruth.detect_format(truth) == "qrels"
                 else GroundTruth.from_csv(truth))
    if topics is None:  # scored on the ground truth's topics: a run sharing none would score 0 everywhere
        check_shared_topics(run, truth, run_path)
    s = GradingScheme.parse(scheme)
    o = Order.parse(order)
    level = int(relevance_level)
    resolved = _parse_metrics(metrics)
    (run,), truth = harmonise([run], truth, pool)
    ta = truth.arrays(s)
    _check_level(ta, level, truth)
    wanted, t_of_w = _wanted_topics(ta, topics)
    batch, seg_of_topic, unknown = _batch(run, truth, ta, wanted, t_of_w, s, o, level)
    present = batch.present
    columns = {}
    for m, (metric, k) in resolved.items():
        own = "vectorised" if type(metric).vectorised is not Metric.vectorised else "per_list"  # the base loops
        with METRICS.calling(metric.name, own):
            col = np.asarray(metric.vectorised(batch, k), dtype=float)
        columns[m] = np.where(present, col, metric.missing)
    ra = run.arrays()
    missing = [wanted[i] for i in np.flatnonzero(~present)]
    extra = [t for t, i in zip(ra.topics, seg_of_topic.tolist()) if i < 0]
    return Report.from_columns(wanted, truth.tiers(wanted), columns, list(resolved), run_id=run.run_id,
                               missing_topics=missing, extra_topics=extra, scheme=s.value, unknown_models=unknown,
                               order=o.value, relevance_level=level, tier_source=truth.tier_source(wanted))


def check_shared_topics(run: Run, truth: GroundTruth, path: str | os.PathLike | None = None) -> None:
    """An :class:`InputError` (field topicID, naming ``path`` where the run was read from) when ``run`` shares no
    topic with ``truth``: every score would be the placeholder of a missing topic, never a result. ``evaluate``
    applies it (unless its ``topics`` name the topics to score); ``modelseek evaluate`` and ``compare`` too."""
    if not any(truth.has_task(t) for t in run):
        raise InputError(f"run {run.run_id!r} shares no topic with the ground truth (run: "
                         f"{', '.join(list(run)[:3])} ...; ground truth: {', '.join(truth.task_ids[:3])} ...)",
                         path=path, field="topicID")


def _one_run(path: str | os.PathLike) -> Run:
    runs = read_runs(Path(os.fspath(path)), extra_columns=True)
    if len(runs) != 1:
        raise InputError(f"the file holds {len(runs)} runs ({', '.join(runs)}): pass one Run (read_run(path, "
                         f"run_id))", path=path, field="run")
    return next(iter(runs.values()))


def _style_truth(path: Path) -> dict[str, str] | None:
    """The Subtask B truth of ``path`` (query -> model), or None when it is not one (as the command tells them
    apart: a regular file whose CSV header names image_id and model_id and no f1)."""
    return load_style_truth(path) if is_style_truth(path) else None


def harmonise(runs: Sequence[Run], truth: GroundTruth,
              pool: Pool | str | os.PathLike | None = None) -> tuple[list[Run], GroundTruth]:
    """Runs and ground truth with every Hugging Face id of ``pool`` written as the pool's id (other ids
    unchanged), so that a run of NTCIR docIDs scores against a ground truth of HF ids and back.

    ``pool``: a :class:`~modelseek.retrieval.data.pool.Pool`, a pool file or built-in name, ``"none"`` (ids as written),
    or None: ``ntcir19`` for a CSV ground truth, none for TREC qrels (their docnos are not models). The pool is
    not even read when every docID of the runs is a model id of the ground truth already (a named one is still
    read, so that a bad pool is an error)."""
    runs = list(runs)
    explicit = pool is not None
    if pool is None:
        pool = "none" if truth.explicit_grades else "ntcir19"
    if isinstance(pool, str) and pool.lower() == "none":
        return runs, truth
    known = set(truth.model_ids)
    if all(d in known for r in runs for d in _distinct_docs(r)):
        if explicit:
            pool_aliases(pool)  # a bad pool is still an error
        return runs, truth
    aliases = pool_aliases(pool)
    if not aliases:
        return runs, truth
    if any(m in aliases for m in truth.model_ids):
        truth = truth.rename_models(aliases)
    runs = [r.map_docs(aliases) if any(d in aliases for d in _distinct_docs(r)) else r for r in runs]
    return runs, truth


def pool_aliases(pool: Pool | str | os.PathLike | None) -> dict[str, str]:
    """Every Hugging Face id of ``pool`` (a pool, a pool file or built-in name) -> the pool's id; empty for
    ``none``."""
    if pool is None or (isinstance(pool, str) and (not pool or pool.lower() == "none")):
        return {}
    if isinstance(pool, (str, os.PathLike)):
        name = os.fspath(pool)
        try:  # a file is read again when it changes; a built-in name once per process
            st = os.stat(name)
            stamp: tuple = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = ()
        return dict(_aliases_of(str(name), stamp))
    return {c.hf_id: c.id for c in pool if c.hf_id and c.hf_id != c.id}


@functools.lru_cache(maxsize=16)
def _aliases_of(name: str, stamp: tuple) -> tuple[tuple[str, str], ...]:
    """(HF id, pool id) pairs of a pool file or built-in name: ``evaluate`` is called in loops (cross-validation,
    fusion searches), and a pool is a YAML or CSV file to parse."""
    return tuple((c.hf_id, c.id) for c in load_pool(name) if c.hf_id and c.hf_id != c.id)


def _distinct_docs(run: Run) -> list[str]:
    a = run.arrays()
    if a.doc_names is not None:
        return a.doc_names.tolist()
    return list(dict.fromkeys(a.doc.tolist()))


def _check_level(ta: TruthArrays, level: int, truth: GroundTruth) -> None:
    """A relevance level above every grade would count nothing as relevant: an error, not a column of zeros."""
    top = int(ta.grade.max()) if ta.grade.size else 0
    if level > top:
        raise InputError(f"relevance level {level} is above every grade of the ground truth (highest: {top}); "
                         f"nothing would count as relevant", path=truth.source or None, field="relevance_level")


def _batch(run: Run, truth: GroundTruth, ta: TruthArrays, wanted: list[str], t_of_w: np.ndarray, s: GradingScheme,
           o: Order, level: int) -> tuple[Batch, np.ndarray, list[str]]:
    """The run's rows on the wanted topics in evaluation order, joined to the ground truth: (the batch every
    metric reads, each run topic's index among the wanted ones (-1: not wanted), the unknown docIDs).

    Memory is the measure here as much as time (a 28 MB run is a million rows, 8 MB per integer column): no
    column is copied when every topic is wanted and the run's topics come in the ground truth's order (the usual
    case), and the join works in place."""
    W = len(wanted)
    ra = run.arrays()
    if ra.topics == wanted:  # the run's topics are the ones scored, in their order (the usual file): no look-ups
        seg_of_topic = np.arange(W, dtype=np.int64)
    else:
        w_index = {t: i for i, t in enumerate(wanted)}
        seg_of_topic = np.fromiter((w_index.get(t, -1) for t in ra.topics), dtype=np.int64, count=len(ra.topics))
    keep = None if (seg_of_topic >= 0).all() else np.repeat(seg_of_topic >= 0, np.diff(ra.offsets))
    seg = np.repeat(seg_of_topic.astype(np.int32), np.diff(ra.offsets))  # 32-bit row columns: half the memory
    if keep is not None:
        seg = seg[keep]
    t_codes, uniq, dcode, unknown = _doc_codes(ta, ra, keep)
    n_codes = max(len(uniq), 1)
    # evaluation order: Rank order is the run's own row order; trec_eval's is score desc, docID desc
    kept = seg_of_topic[seg_of_topic >= 0]
    in_order = o is Order.RANK and bool((kept[1:] > kept[:-1]).all())
    if not in_order:
        perm = _order(seg, ra.score if keep is None else ra.score[keep], dcode, uniq, o)
        seg, dcode = seg[perm], dcode[perm]
        del perm
    seg_start = np.zeros(W + 1, dtype=np.int64)
    np.cumsum(np.bincount(seg, minlength=W), out=seg_start[1:])
    pos = np.arange(seg.size, dtype=np.int32)
    pos -= seg_start.astype(np.int32)[seg]  # 0-based position within the topic
    truth_task = np.repeat(np.arange(len(ta.tasks), dtype=np.int64), np.diff(ta.offsets))
    hit = _join(truth_task * n_codes + t_codes, seg, dcode, t_of_w, n_codes)
    matched = hit >= 0
    shared = np.flatnonzero(np.diff(seg_start) > 0)
    if shared.size and not matched.any():
        example = uniq[dcode[seg_start[shared[0]]]]
        raise InputError(f"run {run.run_id!r}: no docID matches a model id of the ground truth on the "
                         f"{shared.size} shared topic(s) (run: {example!r} ...; ground truth: "
                         f"{', '.join(repr(m) for m in truth.model_ids[:3])} ...)", field="docID")
    grade = _compact(ta.grade)[np.maximum(hit, 0)]
    grade[~matched] = 0
    return (Batch(wanted, seg, pos, seg_start, dcode, np.asarray(uniq, dtype=object), hit, grade, ta, t_of_w, s,
                  level), seg_of_topic, unknown)


def _compact(grades: np.ndarray) -> np.ndarray:
    """Integer grades as 16-bit (or 32-bit) integers when they fit, with 0 (TREC grades -1..3: two bytes a row
    of the batch, not eight; 16 bits leave a metric room to square them); other grades as they are."""
    if grades.dtype.kind not in "iu" or grades.size == 0:
        return grades
    lo, hi = min(int(grades.min()), 0), max(int(grades.max()), 0)
    for t in (np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return grades.astype(t)
    return grades


_BLOCK = 1 << 16  # rows joined at a time


def _join(truth_keys: np.ndarray, seg: np.ndarray, dcode: np.ndarray, t_of_w: np.ndarray,
          n_codes: int) -> np.ndarray:
    """Each row's index in the ground truth's task-grouped rows (-1: not judged): its (task, docID) key found by
    binary search among the ground truth's, a block of rows at a time (the keys of a million rows and the
    search's temporaries would be 30 MB at once)."""
    hit = np.full(seg.size, -1, dtype=np.int32 if truth_keys.size < 2**31 else np.int64)
    if truth_keys.size == 0:
        return hit
    sorter = np.argsort(truth_keys, kind="stable")
    sk = truth_keys[sorter]
    for lo in range(0, seg.size, _BLOCK):
        key = t_of_w[seg[lo:lo + _BLOCK]] * n_codes + dcode[lo:lo + _BLOCK]
        at = np.minimum(np.searchsorted(sk, key), sk.size - 1)
        found = sk[at] == key
        hit[lo:lo + _BLOCK][found] = sorter[at[found]]
    return hit


def _parse_metrics(metrics: Sequence[str]) -> dict[str, tuple[Metric, int | None]]:
    """Each metric name (lower-cased, in order) -> its registered metric and cut-off; unknown names, bad
    cut-offs and an empty list are :class:`InputError`."""
    names = [m.strip().lower() for m in metrics if m.strip()]
    if not names:
        raise InputError(f"no metric given; valid names: {', '.join(METRICS.names())}", field="metrics")
    return {m: resolve(m) for m in names}


def _wanted_topics(ta: TruthArrays, topics: Sequence[str] | None) -> tuple[list[str], np.ndarray]:
    """(the topics to score: ``topics`` or every ground-truth task; each one's row in the ground truth's tasks);
    a topic given twice or not in the ground truth is an :class:`InputError`."""
    if topics is None:
        return list(ta.tasks), np.arange(len(ta.tasks), dtype=np.int64)
    wanted = [str(t) for t in topics]
    if len(set(wanted)) != len(wanted):
        raise InputError("a topic is given twice", field="topics")
    t_index = {t: i for i, t in enumerate(ta.tasks)}
    t_of_w = np.fromiter((t_index.get(t, -1) for t in wanted), dtype=np.int64, count=len(wanted))
    if (t_of_w < 0).any():
        bad = [wanted[i] for i in np.flatnonzero(t_of_w < 0)[:5]]
        raise InputError(f"task(s) not in the ground truth: {', '.join(bad)}")
    return wanted, t_of_w


def _doc_codes(ta: TruthArrays, ra: RunArrays,
               keep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """One code per distinct model id / docID: the join, the docID order and the unknown docIDs use it. A run
    read from a file carries its docIDs' codes already; only its distinct docIDs are looked up. Returns (the
    ground truth's rows' codes, the distinct names by code, the kept run rows' codes (``keep``: the rows kept,
    None for all), the docIDs the ground truth does not know, in order of first appearance)."""
    if ta.model_code is not None and ta.model_names is not None:  # set together by the ground truth
        t_codes, t_uniq = ta.model_code, ta.model_names
    else:
        t_codes, t_uniq = factorize(ta.model)
    if ra.doc_code is not None and ra.doc_names is not None:  # set together by the reader
        truth_index = {m: i for i, m in enumerate(t_uniq.tolist())}
        in_truth = np.fromiter((truth_index.get(d, -1) for d in ra.doc_names.tolist()), dtype=np.int64,
                               count=len(ra.doc_names))
        new = in_truth < 0
        name_code = in_truth.astype(np.int32)
        name_code[new] = len(t_uniq) + np.arange(int(new.sum()))
        uniq = np.concatenate([np.asarray(t_uniq, dtype=object), ra.doc_names[new]])
        dcode = name_code[ra.doc_code if keep is None else ra.doc_code[keep]]
    else:
        doc = ra.doc if keep is None else ra.doc[keep]
        codes, uniq = factorize(np.concatenate([t_uniq, doc]))  # the truth's names first: their codes stay
        dcode = codes[len(t_uniq):].astype(np.int32)
    known_code = np.zeros(max(len(uniq), 1), dtype=bool)
    known_code[t_codes] = True
    unknown_rows = ~known_code[dcode]
    unknown = [str(u) for u in uniq[first_seen(dcode[unknown_rows])[1]]] if unknown_rows.any() else []
    return t_codes, uniq, dcode, unknown


def _order(seg, score, dcode, uniq, o) -> np.ndarray:
    """Rows grouped by topic in evaluation order. Rank order: the run's rows are in it already (a stable
    integer sort groups topics). trec_eval: score descending, then docID descending, as one stable sort of an
    integer key (score and docID replaced by their ranks) when it fits in 63 bits, else ``lexsort``."""
    if o is Order.RANK or seg.size == 0:
        return np.argsort(seg, kind="stable")
    doc_rank = np.empty(len(uniq), dtype=np.int64)
    doc_rank[np.argsort(np.asarray(uniq, dtype=str), kind="stable")] = np.arange(len(uniq))
    n_d = len(uniq)
    # dense rank of every score by one sort, in 32-bit row indices (a million rows: 4 MB each, not 8)
    by_score = np.argsort(score, kind="stable").astype(np.int32 if score.size < 2**31 else np.int64)
    step = np.empty(score.size, dtype=bool)
    step[0] = True
    ss = score[by_score]
    np.not_equal(ss[1:], ss[:-1], out=step[1:])
    del ss
    dense = np.cumsum(step, dtype=by_score.dtype)
    n_s = int(dense[-1])
    del step
    if (int(seg.max()) + 1) * n_s * n_d >= 2**62:
        return np.lexsort((-doc_rank[dcode], -score, seg))
    # key = (topic, score rank descending, docID rank descending) as one integer, a block of rows at a time (no
    # 8 MB temporaries beside it)
    key = np.empty(score.size, dtype=np.int64)
    key[by_score] = dense
    del by_score, dense
    np.subtract(n_s, key, out=key)  # n_s - 1 - (dense rank - 1)
    for lo in range(0, key.size, _BLOCK):
        part = key[lo:lo + _BLOCK]
        part += seg[lo:lo + _BLOCK].astype(np.int64) * n_s
        part *= n_d
        part += n_d - 1 - doc_rank[dcode[lo:lo + _BLOCK]]
    return np.argsort(key, kind="stable")
