"""Copies, near-copies, derived entries and task-by-task mixes: an upload whose predictions, **as its tasks' metrics
see them**, agree with published or queued entries beyond what independent models of their scores would.

**What each metric sees** (:func:`task_view`; every view is oriented "higher is better"):

* accuracy, exact match, ROUGE, nDCG: the per-sample values themselves (the answers);
* macro one-vs-rest AUROC: for each class, each sample's *placement* (DeLong's structural components): a
  positive's share of the class's negatives it outranks, a negative's share of the positives that outrank it (ties
  count half). They depend only on each class column's order, so a monotone transform of the probabilities
  (sharpening, calibration) leaves them unchanged, as it leaves the AUROC; a sample's placements are averaged;
* word perplexity: the per-document log-likelihood per word (paired by document), and the multiset of the
  documents' log-likelihoods (the metric sees only their total, so log-likelihoods moved between documents
  leave it unchanged: a permutation of another entry's log-likelihoods is a copy of that task).

**Disagreement in units of independent models'.** For one block of a task (``x`` the upload's view, ``y`` the
entry's): ``D = mean_i |x_i - y_i|`` and ``D0 = mean_{i,j} |x_i - y_j|``, what two independent models with these
same values would disagree (for 0/1 answers with accuracies ``p``, ``q`` exactly ``p(1-q) + q(1-p)``); each sample
gives ``z_i = |x_i - y_i| / D0`` (mean 1 for independent models, 0 for a copy). Two one-sided versions catch
*derived* entries: ``z_i = max(x_i - y_i, 0) / D0+``, where the upload is better (none in a copy with answers made
wrong: a "sparring partner" its source beats) and ``max(y_i - x_i, 0) / D0-``, where it is worse (none in a copy
with some answers improved), with ``D0+``/``D0-`` the independent models' one-sided disagreements. On the
multiset view ``z_i`` is 0 where the sorted log-likelihoods coincide (to 1e-9) and 1 elsewhere. A task's evidence
against an entry is the one of these statistics with the lowest bound ``r + Z sd(z) / sqrt(n)`` (``r`` = mean z,
``Z`` = :data:`Z`), computed with ``Z^2`` extra samples at 1 (:data:`PSEUDO`); the one-sided statistics count only
where the two-sided ``r`` is under :data:`ONE_SIDED_GATE`.

**The rule** (:func:`find_copies`). Each task is assigned the published or queued entry it is closest to (lowest
bound). The upload is a copy:

* on a task, of that entry, when the task's bound is under :data:`TAU`;
* on every task, of the entries assigned to them (a task-by-task **mix**; one entry when they are all the same),
  when the bound pooled over the tasks' samples (each with its own entry) is under :data:`TAU_POOLED`.

An upload that is a copy on any task is refused naming the entries and the tasks (held for the reviewer on a
board with review). The false-positive rate on independent models of similar skill, and what the rule catches,
are measured by ``benchmarks/duel_copy_detection.py`` (``docs/results/duel.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .config import Metric
from .submission import TaskSamples

#: a task whose disagreement bound is under this share of independent models' is a copy
TAU = 0.35
#: all the tasks together (each against its closest entry) whose pooled bound is under this are a copy (independent
#: models' pooled bound, even against the closest entry of each task, was never under 0.75: benchmarks)
TAU_POOLED = 0.5
#: the confidence margin, in standard errors, of the mean disagreement
Z = 3.0
#: the one-sided statistics count only where the two-sided ratio is under this (a much weaker independent model is
#: worse on nearly every sample, as a copy made worse is, but disagrees with it as much as independent models do)
ONE_SIDED_GATE = 0.6
#: the bound counts this many extra samples at an independent model's disagreement (1): a task with little
#: information (few samples, answers that seldom differ) cannot alone be called a copy
PSEUDO = Z * Z
#: sorted log-likelihoods closer than this (relative) are the same value
MULTISET_RTOL = 1e-9


@dataclass(frozen=True)
class TaskView:
    """What a task's metric sees of one model: ``blocks`` of ``(sample indices, values)`` compared block by block
    (a sample's disagreements averaged over the blocks it is in), ``n`` samples, and for perplexity the sorted
    per-document log-likelihoods (``multiset``)."""

    n: int
    blocks: tuple[tuple[np.ndarray, np.ndarray], ...]
    multiset: np.ndarray | None = None

    def same(self, other: TaskView) -> bool:
        return self.n == other.n and len(self.blocks) == len(other.blocks) and all(
            np.array_equal(i, j) and np.array_equal(x, y) for (i, x), (j, y) in zip(self.blocks, other.blocks))


def _placements(gold: np.ndarray, probs: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per class with positives and negatives: the positives' share of negatives below them and the negatives'
    share of positives above them (ties half): DeLong's structural components, invariant to monotone transforms."""
    out = []
    for c in range(probs.shape[1]):
        pos = gold == c
        if pos.all() or not pos.any():
            continue
        s = probs[:, c]
        sp, sn = np.sort(s[pos]), np.sort(s[~pos])
        xp = s[pos]
        below = (np.searchsorted(sn, xp, "left") + np.searchsorted(sn, xp, "right")) / (2.0 * len(sn))
        xn = s[~pos]
        above = 1.0 - (np.searchsorted(sp, xn, "left") + np.searchsorted(sp, xn, "right")) / (2.0 * len(sp))
        out += [(np.flatnonzero(pos), below), (np.flatnonzero(~pos), above)]
    return out


def task_view(d: TaskSamples) -> TaskView:
    """What ``d``'s metric sees (see the module docstring)."""
    n = d.n
    if d.metric is Metric.AVG_MCAUROC:
        return TaskView(n, tuple(_placements(np.asarray(d.need("gold")), np.asarray(d.need("probs"), float))))
    if d.metric is Metric.WORD_PERPLEXITY:
        ll = np.asarray(d.need("loglik"), dtype=float)
        return TaskView(n, ((np.arange(n), ll / d.need("words")),), np.sort(ll))
    return TaskView(n, ((np.arange(n), np.asarray(d.need("values"), dtype=float)),))


def answer_vectors(data: Mapping[str, TaskSamples]) -> dict[str, TaskView]:
    """Every task's :func:`task_view`."""
    return {t: task_view(d) for t, d in data.items()}


def independent_disagreement(x: np.ndarray, y: np.ndarray) -> float:
    """``mean_{i,j} |x_i - y_j|`` exactly, by sorting (O(n log n)); numpy has no all-pairs mean without the n x m
    matrix."""
    ys = np.sort(y)
    cum = np.concatenate([[0.0], np.cumsum(ys)])
    k = np.searchsorted(ys, x, side="left")           # ys[:k] < x_i
    below = x * k - cum[k]
    above = (cum[-1] - cum[k]) - x * (len(ys) - k)
    return float((below + above).sum() / (len(x) * len(ys)))


def bound(z: np.ndarray) -> tuple[float, float]:
    """``(mean, upper bound)`` of per-sample disagreements: the bound is ``mean + Z sd / sqrt(n)`` of ``z`` with
    :data:`PSEUDO` extra samples at 1 (an independent model's mean), so that no disagreement on a few samples that
    independent models would seldom disagree on is not taken for certainty."""
    r = float(z.mean())
    w = np.concatenate([z, np.ones(int(PSEUDO))])
    return r, float(w.mean()) + Z * float(w.std(ddof=1)) / math.sqrt(len(w))


@dataclass(frozen=True)
class TaskMatch:
    """One task of an upload against one entry: per-sample disagreements ``z`` of the statistic with the lowest
    bound (``how``: 'both', 'worse', 'better' or 'reordered'), and whether the views are identical."""

    z: np.ndarray
    how: str
    identical: bool

    @property
    def ratio(self) -> float:
        return bound(self.z)[0]

    @property
    def upper(self) -> float:
        return bound(self.z)[1]


def compare_task(a: TaskView, b: TaskView) -> TaskMatch | None:
    """``a`` (the upload) against ``b`` on one task; ``None`` when they cannot be paired or carry no information
    (every value of both the same: two models wrong on every sample are not copies of each other)."""
    if a.n != b.n or a.n == 0 or len(a.blocks) != len(b.blocks):
        return None
    sums = {k: np.zeros(a.n) for k in ("both", "worse", "better")}
    counts = {k: np.zeros(a.n) for k in sums}
    for (ia, x), (ib, y) in zip(a.blocks, b.blocks):
        if not np.array_equal(ia, ib):
            return None
        d0 = independent_disagreement(x, y)
        if not (d0 > 0 and math.isfinite(d0)):
            continue
        shift = float(x.mean() - y.mean())
        diff = x - y
        # 'worse': where the upload is better (none in a copy made worse); 'better': where it is worse
        for k, num, den in (("both", np.abs(diff), d0), ("worse", np.maximum(diff, 0.0), (d0 + shift) / 2),
                            ("better", np.maximum(-diff, 0.0), (d0 - shift) / 2)):
            if den > 1e-12 * d0:
                sums[k] += np.bincount(ia, num / den, minlength=a.n)
                counts[k] += np.bincount(ia, minlength=a.n)
    if not counts["both"].any():
        return None                             # nothing to tell models apart by (every value the same)
    if a.same(b):
        return TaskMatch(np.zeros(a.n), "both", True)
    cands = [(k, sums[k][counts[k] > 0] / counts[k][counts[k] > 0]) for k in sums if counts[k].any()]
    if cands[0][1].mean() >= ONE_SIDED_GATE:
        cands = cands[:1]
    if a.multiset is not None and b.multiset is not None and len(a.multiset) == len(b.multiset):
        same = np.isclose(a.multiset, b.multiset, rtol=MULTISET_RTOL, atol=0.0)
        cands.append(("reordered", (~same).astype(float)))
    if not cands:
        return None
    how, z = min(cands, key=lambda c: bound(c[1])[1])
    return TaskMatch(z, how, False)


@dataclass(frozen=True)
class Agreement:
    """An upload against one entry: ``ratio`` the mean disagreement over ``copied`` (the tasks copied from it; all
    compared tasks when none) in units of independent models' (1 independent, 0 identical), ``upper`` its bound,
    ``identical`` equal views on every task, ``tasks`` the tasks compared, ``per_task`` each task's ratio,
    ``mix``: the other entries of a task-by-task mix (``{task: entry}``)."""

    ratio: float
    upper: float
    identical: bool
    tasks: int
    per_task: dict
    copied: tuple = ()
    mix: dict = field(default_factory=dict)

    @property
    def near_copy(self) -> bool:
        return self.identical or bool(self.copied)

    def describe(self) -> str:
        if self.identical:
            return "identical predictions on every task (as each task's metric sees them)"
        where = (f"on {len(self.copied)} of {self.tasks} task(s) ({', '.join(self.copied)})" if self.copied
                 else f"over {self.tasks} task(s)")
        return (f"{where} disagree {self.ratio:.1%} as much as two independent models of these scores would "
                f"(bound {self.upper:.1%}; a copy is under {TAU:.0%} on a task, {TAU_POOLED:.0%} over all tasks)")


def _pooled(matches: Sequence[TaskMatch]) -> tuple[float, float]:
    return bound(np.concatenate([m.z for m in matches]))


def _agreement(name: str, mine: dict[str, TaskMatch], copied: dict[str, str], n_tasks: int) -> Agreement:
    tasks = [t for t, e in copied.items() if e == name]
    used = [mine[t] for t in tasks] or list(mine.values())
    ratio, upper = _pooled(used)
    identical = bool(mine) and len(mine) == n_tasks and all(m.identical for m in mine.values())
    mix = {t: e for t, e in copied.items() if e != name}
    return Agreement(ratio, upper, identical, len(mine), {t: m.ratio for t, m in mine.items()}, tuple(tasks), mix)


def find_copies(new: Mapping[str, TaskView], others: Sequence[tuple[str, Mapping[str, TaskView]]]
                ) -> list[tuple[str, Agreement]]:
    """The ``(name, agreement)`` of every one of ``others`` that ``new`` copies on at least one task (the rule of
    the module docstring), the entry copied on most tasks first."""
    matches: dict[str, dict[str, TaskMatch]] = {}
    for name, vec in others:
        got = {t: compare_task(new[t], vec[t]) for t in new if t in vec}
        matches[name] = {t: m for t, m in got.items() if m is not None}
    closest: dict[str, tuple[str, TaskMatch]] = {}
    for name, mine in matches.items():
        for t, m in mine.items():
            if t not in closest or m.upper < closest[t][1].upper:
                closest[t] = (name, m)
    if not closest:
        return []
    copied = {t: e for t, (e, m) in closest.items() if m.upper < TAU}
    if _pooled([m for _, m in closest.values()])[1] < TAU_POOLED:
        copied = {t: e for t, (e, _) in closest.items()}          # a copy on every task (of one entry or a mix)
    names = {e for e in copied.values()}
    hits = [(n, _agreement(n, matches[n], copied, len(new))) for n in matches if n in names]
    return sorted(hits, key=lambda h: (not h[1].identical, -len(h[1].copied), h[1].ratio))


def agreement(a: Mapping[str, TaskView], b: Mapping[str, TaskView]) -> Agreement:
    """``a`` against the one entry ``b`` (see :func:`find_copies`); not a copy: the agreement over every task."""
    hits = find_copies(a, [("b", b)])
    if hits:
        return hits[0][1]
    mine = {t: m for t in a if t in b for m in [compare_task(a[t], b[t])] if m is not None}
    if not mine:
        return Agreement(float("nan"), float("nan"), False, 0, {})
    return _agreement("b", mine, {}, len(a))


def copy_groups(vectors: Sequence[Mapping[str, TaskView]]) -> list[int]:
    """A family label per model, in the order given (the offline tournament's): each model that copies earlier
    ones (:func:`find_copies`) joins the family of the one it copies on most tasks; the first of a family is its
    original."""
    label = list(range(len(vectors)))
    for j in range(1, len(vectors)):
        hits = find_copies(vectors[j], [(str(i), vectors[i]) for i in range(j)])
        if hits:
            label[j] = label[int(hits[0][0])]
    return label


def groups_from_pairs(ids: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[int]:
    """A family label per id of ``ids`` from recorded ``(copy, entry it copies most)`` pairs (a copy joins its
    entry's family; ids outside ``ids`` ignored): the label is the family's earliest id's position."""
    pos = {i: k for k, i in enumerate(ids)}
    source = {a: b for a, b in pairs if a in pos and b in pos}
    label = []
    for i in ids:
        seen = {i}
        while i in source and source[i] not in seen:
            i = source[i]
            seen.add(i)
        label.append(pos[min(seen, key=lambda s: pos[s])] if seen else pos[i])
    return label


RULE = ("Families count once: an entry published although it copies another (detected by the copy rule, approved by "
        "a reviewer) joins that entry's family; every other entry's duels against a family are its duels against the "
        "family's original, a family's members do not duel each other, a copy scores at most its original (task by "
        "task) and takes no rank from anyone.")
