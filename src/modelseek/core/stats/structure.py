"""Is there anything to learn beyond the average rank? Parallel analysis of a tasks x models ground truth.

A learned ranker (the default ``adaptive``, ``task_knn``, ``ltr``, learned fusion) can beat the average-rank
prior only where the models' ranks move *together* from task to task: a component shared by many tasks (the
Twitter model and the emotion model both gain on social text; large models gain on hard tasks). What moves
independently on each task (fine-tuning noise, a lucky seed) cannot be predicted from any description of the
task. :func:`residual_structure` tests for the first kind:

1. ``U`` = minus each task's ranks (tasks x models; ties share the lowest rank, as the ground truth's
   ``model_rank``). The **prior** is the per-model mean over tasks (exactly avgrank); ``prior_share`` is the
   share of ``U``'s variance around its grand mean that it explains.
2. The **residual** ``R`` is ``U`` with the prior and every task's mean removed (double centring). Its singular
   values give the share of residual variance of each component (``shares``; equal to scikit-learn's
   ``PCA.explained_variance_ratio_`` of ``R``).
3. The **null of no shared structure**: every model's column is shuffled across the tasks, independently of
   the other models, and each task's row is ranked again. This keeps every model's distribution of ranks (the
   prior and how often each model wins or fails) and destroys what ties one model's rank on a task to another's,
   except the competition for places that any ranking imposes. It is the parallel analysis of Horn (1965) in the
   permutation form of Buja & Eyuboglu (1992), with the models as the variables. ``null_quantile[j]`` is the
   ``level`` quantile of the j-th share over ``permutations`` shuffles and ``p_values[j] = (1 + #{null share_j >=
   observed share_j}) / (1 + permutations)``; ``retained`` counts the leading components above their null
   quantile (stopping at the first that is not).
4. The **null of no prior**: every task's ranks are shuffled among the models (the models are exchangeable
   within a task); ``prior_p`` is the share of shuffles whose per-model means explain as much. (Shuffling within
   tasks is not the null of step 3: with a real prior it makes every residual look structured, because neighbours
   in the prior compete for the same places on every task.)

A ground truth with ``retained = 0`` holds no shared per-task structure that the permutation null cannot
produce: on it, no method that reads the task can be expected to beat the prior by more than noise, however it is
tuned. ``benchmarks/structure_power.py`` measures how large a planted structure must be for the test to see it,
and what a learner with the true task feature gains from it.

Written here rather than taken from a library: scikit-learn's PCA gives the shares but no null, and the parallel
analysis packages on PyPI (``factor_analyzer``, ``horns``) draw Gaussian nulls for correlation matrices, not
permutation nulls of a double-centred table; the whole test is a batched SVD.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError

MIN_TASKS = 4
MIN_MODELS = 3


@dataclass(frozen=True)
class Structure:
    """The result of :func:`residual_structure` (arrays over the leading ``len(shares)`` components)."""

    task_ids: list[str]
    model_ids: list[str]
    prior_share: float          # share of the variance of U explained by the per-model means (avgrank)
    prior_null: float           # the ``level`` quantile of that share under the permutation null
    prior_p: float
    shares: np.ndarray          # share of residual variance of each leading component
    null_quantile: np.ndarray   # the ``level`` quantile of each share under the null
    null_median: np.ndarray
    p_values: np.ndarray
    loadings: np.ndarray        # components x models (unit vectors; sign: largest loading positive)
    retained: int
    permutations: int
    level: float
    seed: int
    dropped_models: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        comps = [{"component": j + 1, "share": float(self.shares[j]), "null_quantile": float(self.null_quantile[j]),
                  "null_median": float(self.null_median[j]), "p": float(self.p_values[j]),
                  "above_null": j < self.retained,
                  "loadings": {m: float(v) for m, v in zip(self.model_ids, self.loadings[j])}}
                 for j in range(len(self.shares))]
        return {"tasks": len(self.task_ids), "models": len(self.model_ids), "prior_share": self.prior_share,
                "prior_null_quantile": self.prior_null, "prior_p": self.prior_p, "retained": self.retained,
                "components": comps, "permutations": self.permutations, "level": self.level, "seed": self.seed,
                "dropped_models": list(self.dropped_models)}


def _ranks(values: np.ndarray) -> np.ndarray:
    """Minus the rank of each row's values, best = -1, ties sharing the lowest rank (``model_rank``)."""
    from scipy.stats import rankdata  # lazy: scipy

    return -rankdata(-values, axis=-1, method="min")


def _double_centre(u: np.ndarray) -> np.ndarray:
    """Remove the column means (the prior) and then the row means of a stack of matrices (..., tasks, models)."""
    r = u - u.mean(axis=-2, keepdims=True)
    return r - r.mean(axis=-1, keepdims=True)


def _shares(r: np.ndarray, k: int) -> np.ndarray:
    s2 = np.linalg.svd(r, compute_uv=False) ** 2
    total = s2.sum(axis=-1, keepdims=True)
    return (s2 / np.where(total > 0, total, 1.0))[..., :k]


def _prior_share(u: np.ndarray) -> np.ndarray:
    """Share of the variance of U (around each task's mean) explained by the column means."""
    c = u - u.mean(axis=-1, keepdims=True)
    total = (c ** 2).sum(axis=(-2, -1))
    prior = c.mean(axis=-2, keepdims=True)
    explained = c.shape[-2] * (prior ** 2).sum(axis=(-2, -1))
    return explained / np.where(total > 0, total, 1.0)


def residual_structure(values, task_ids: Sequence[str] | None = None, model_ids: Sequence[str] | None = None, *,
                       ranks: bool = True, components: int = 5, permutations: int = 1000, level: float = 0.95,
                       seed: int = 0, batch: int = 250) -> Structure:
    """Parallel analysis of ``values`` (tasks x models, higher is better; NaN = not evaluated).

    ``ranks=True`` (default) analyses each task's ranks (what the average-rank prior and nDCG see), else the
    values themselves. Models missing on some task are left out (listed in ``dropped_models``); fewer than
    :data:`MIN_TASKS` tasks or :data:`MIN_MODELS` complete models is an :class:`InputError`.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2:
        raise InputError(f"expected a tasks x models table, got an array of shape {x.shape}")
    n_t, n_m = x.shape
    task_ids = [str(t) for t in (task_ids if task_ids is not None else range(1, n_t + 1))]
    model_ids = [str(m) for m in (model_ids if model_ids is not None else range(1, n_m + 1))]
    if len(task_ids) != n_t or len(model_ids) != n_m:
        raise InputError(f"{len(task_ids)} task ids and {len(model_ids)} model ids for a table of shape {x.shape}")
    if np.isinf(x).any():
        raise InputError("the table holds an infinite score")
    complete = [not np.isnan(x[:, j]).any() for j in range(x.shape[1])]
    dropped = [m for m, ok in zip(model_ids, complete) if not ok]
    x = x[:, complete]
    kept = [m for m, ok in zip(model_ids, complete) if ok]
    if n_t < MIN_TASKS:
        raise InputError(f"{n_t} tasks: the structure test needs at least {MIN_TASKS}")
    if len(kept) < MIN_MODELS:
        raise InputError(f"{len(kept)} models are scored on every task (left out: {', '.join(dropped[:5])}"
                         f"{' ...' if len(dropped) > 5 else ''}); the structure test needs at least {MIN_MODELS}")
    if not 0 < level < 1:
        raise InputError(f"level {level} is not in (0, 1)")
    if permutations < 1:
        raise InputError(f"permutations {permutations} < 1")
    u = _ranks(x) if ranks else x
    if not (u != u[:, :1]).any():
        raise InputError(f"every task scores its {len(kept)} models alike: there is no ranking to analyse")
    k = max(1, min(int(components), len(kept) - 1, n_t - 1))
    _, sv, vt = np.linalg.svd(_double_centre(u), full_matrices=False)
    total = float((sv ** 2).sum())
    obs = (sv ** 2 / (total if total > 0 else 1.0))[:k]  # as _shares, from the one decomposition
    prior_obs = float(_prior_share(u))
    load = vt[:k] * np.where(np.abs(vt[:k].max(axis=1)) >= np.abs(vt[:k].min(axis=1)), 1.0, -1.0)[:, None]

    rng = np.random.default_rng(seed)
    null = np.empty((permutations, k))
    prior_null = np.empty(permutations)
    shuffled = u if ranks else x - x.mean(axis=1, keepdims=True)
    for start in range(0, permutations, batch):
        b = min(batch, permutations - start)
        # no shared structure: each model's column shuffled across tasks on its own, then every row ranked again
        cols = rng.permuted(np.broadcast_to(shuffled, (b, *u.shape)), axis=-2)
        null[start:start + b] = _shares(_double_centre(_ranks(cols) if ranks else cols), k)
        # no prior: each task's row shuffled among the models
        prior_null[start:start + b] = _prior_share(rng.permuted(np.broadcast_to(u, (b, *u.shape)), axis=-1))
    p_values = (1 + (null >= obs[None, :] - 1e-12).sum(axis=0)) / (1 + permutations)
    q = np.quantile(null, level, axis=0)
    above = obs > q
    retained = int(np.argmin(above)) if not above.all() else k
    return Structure(task_ids=task_ids, model_ids=kept, prior_share=prior_obs,
                     prior_null=float(np.quantile(prior_null, level)),
                     prior_p=float((1 + (prior_null >= prior_obs - 1e-12).sum()) / (1 + permutations)),
                     shares=obs, null_quantile=q, null_median=np.median(null, axis=0), p_values=p_values,
                     loadings=load, retained=retained, permutations=int(permutations), level=float(level),
                     seed=int(seed), dropped_models=dropped)


def truth_structure(truth, tasks: Sequence[str] | None = None, **kwargs) -> Structure:
    """:func:`residual_structure` of a :class:`~modelseek.retrieval.data.truth.GroundTruth` (its F1, as ranks by
    default),
    over ``tasks`` (default: all)."""
    m = truth.matrix("f1")
    if tasks is not None:
        m = m.loc[[str(t) for t in tasks]]
    try:
        return residual_structure(m.to_numpy(dtype=float), list(m.index), list(m.columns), **kwargs)
    except InputError as exc:  # the table's problem is the file's: name it
        if exc.path is not None or not getattr(truth, "source", None):
            raise
        raise InputError(exc.message, path=truth.source, field="f1") from None


__all__ = ["MIN_MODELS", "MIN_TASKS", "Structure", "residual_structure", "truth_structure"]
