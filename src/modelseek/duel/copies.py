"""Copies and near-copies: two submissions whose per-sample predictions agree beyond what two independent models of
their scores would.

Each task gives one number per sample and model (:func:`answers`): the per-sample value (accuracy, exact match,
ROUGE, nDCG), the probability given to the gold class (AUROC), the log-likelihood per word (perplexity). For two
models ``x`` and ``y`` on a task:

* ``D = mean_i |x_i - y_i|``, what they disagree on their own samples;
* ``D0 = mean_{i,j} |x_i - y_j|``, what they would disagree if they were independent with the same scores (every
  sample of one against every sample of the other: for 0/1 answers with accuracies ``p`` and ``q`` it is exactly
  ``p(1-q) + q(1-p)``).

Pooled over the tasks where ``D0 > 0``, each sample's disagreement in units of its task's ``D0``
(``z_i = |x_i - y_i| / D0``) has mean ``r`` (1 for independent models, 0 for a copy). The pair is a
**near-copy** when the upper confidence bound ``r + Z * sd(z) / sqrt(N)`` (``Z`` = :data:`Z`, ``N`` samples) is
below :data:`TAU`: they disagree less than a quarter as much as independent models would, beyond the binomial
sampling margin. Two models trained apart disagree far more than that even when they share their easy samples;
the leader with 1.5 % of its answers flipped has ``r`` about 0.05, an exact copy 0. Equal predictions on every task
are an **exact copy** (``r`` = 0 with nothing to bound).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .config import Metric
from .submission import TaskSamples

#: a pair disagreeing (upper bound) less than this share of what independent models would is a near-copy
TAU = 0.25
#: the confidence margin, in standard errors, of the pooled disagreement
Z = 3.0


def answers(d: TaskSamples) -> np.ndarray:
    """One number per sample of a task (see the module docstring)."""
    if d.metric is Metric.AVG_MCAUROC:
        probs, gold = d.need("probs"), d.need("gold")
        return probs[np.arange(len(gold)), gold].astype(float)
    if d.metric is Metric.WORD_PERPLEXITY:
        return d.need("loglik") / d.need("words")
    return np.asarray(d.need("values"), dtype=float)


def answer_vectors(data: Mapping[str, TaskSamples]) -> dict[str, np.ndarray]:
    return {t: answers(d) for t, d in data.items()}


def independent_disagreement(x: np.ndarray, y: np.ndarray) -> float:
    """``mean_{i,j} |x_i - y_j|`` exactly, by sorting (O(n log n))."""
    ys = np.sort(y)
    cum = np.concatenate([[0.0], np.cumsum(ys)])
    k = np.searchsorted(ys, x, side="left")           # ys[:k] < x_i
    below = x * k - cum[k]
    above = (cum[-1] - cum[k]) - x * (len(ys) - k)
    return float((below + above).sum() / (len(x) * len(ys)))


@dataclass(frozen=True)
class Agreement:
    """How two submissions' predictions compare: ``ratio`` the pooled disagreement in units of independent
    models' (1 independent, 0 identical), ``upper`` its confidence bound, ``identical`` equal on every task,
    ``tasks`` the tasks that carried information (``D0 > 0``), ``per_task`` each task's ``D / D0``."""

    ratio: float
    upper: float
    identical: bool
    tasks: int
    per_task: dict

    @property
    def near_copy(self) -> bool:
        return self.identical or (self.tasks > 0 and self.upper < TAU)

    def describe(self) -> str:
        if self.identical:
            return "identical predictions on every task"
        return (f"disagree {self.ratio:.1%} as much as two independent models of these scores would over {self.tasks} "
                f"task(s) (bound {self.upper:.1%}; a near-copy is under {TAU:.0%})")


def agreement(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> Agreement:
    """Compare two submissions' :func:`answer_vectors` on their common tasks (paired by sample order)."""
    zs, per_task, identical = [], {}, True
    for t in a:
        if t not in b or len(a[t]) != len(b[t]):
            identical = False
            continue
        x, y = a[t], b[t]
        diff = np.abs(x - y)
        if diff.any():
            identical = False
        d0 = independent_disagreement(x, y)
        if not d0 > 0 or not math.isfinite(d0):
            continue
        per_task[t] = float(diff.mean() / d0)
        zs.append(diff / d0)
    if not zs:
        return Agreement(float("nan"), float("nan"), identical and bool(a), 0, per_task)
    z = np.concatenate(zs)
    ratio = float(z.mean())
    upper = ratio + Z * float(z.std(ddof=1) if len(z) > 1 else 0.0) / math.sqrt(len(z))
    return Agreement(ratio, upper, identical, len(zs), per_task)


def find_copies(new: Mapping[str, np.ndarray], others: Sequence[tuple[str, Mapping[str, np.ndarray]]]
                ) -> list[tuple[str, Agreement]]:
    """The ``(name, agreement)`` of every one of ``others`` that ``new`` is a near-copy of, the closest first."""
    hits = [(name, agreement(new, vec)) for name, vec in others]
    hits = [(n, ag) for n, ag in hits if ag.near_copy]
    return sorted(hits, key=lambda h: (0.0 if h[1].identical else h[1].ratio))


def copy_groups(vectors: Sequence[Mapping[str, np.ndarray]]) -> list[int]:
    """A group label per model: models linked by near-copy pairs (transitively) share one."""
    n = len(vectors)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if find(i) != find(j) and agreement(vectors[i], vectors[j]).near_copy:
                parent[find(j)] = find(i)
    return [find(i) for i in range(n)]


def groups_from_pairs(ids: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[int]:
    """A group label per id of ``ids`` from recorded near-copy ``pairs`` (ids outside ``ids`` ignored)."""
    pos = {i: k for k, i in enumerate(ids)}
    parent = list(range(len(ids)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in pairs:
        if a in pos and b in pos:
            ra, rb = find(pos[a]), find(pos[b])
            if ra != rb:
                parent[rb] = ra
    return [find(k) for k in range(len(ids))]


RULE = ("Near-copies count once: duels against models whose predictions are near-copies of each other count as one "
        "opponent (the mean result against them).")
