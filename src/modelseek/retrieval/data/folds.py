"""Task-level cross-validation folds, shared by the benchmark (:mod:`modelseek.retrieval.bench`) and learned fusion
(:mod:`modelseek.retrieval.fusion.learned`), so that both hold out the same tasks for the same seed."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...core.errors import InputError
from .run import natural_key


def make_folds(task_ids: Sequence[str], tiers: Sequence[str], folds: int = 5, seed: int = 0) -> list[list[str]]:
    """Held-out task ids per fold; stratified by tier when every tier has at least ``folds`` tasks."""
    from sklearn.model_selection import KFold, StratifiedKFold  # lazy: sklearn

    # canonical (natural) order first: the folds depend on which tasks there are, not on the order of the rows
    pairs = sorted(zip((str(t) for t in task_ids), tiers), key=lambda p: natural_key(p[0]))
    ids = np.asarray([p[0] for p in pairs])
    tiers = [p[1] for p in pairs]
    if folds < 2 or folds > len(ids):
        raise InputError(f"folds must be between 2 and the number of tasks ({len(ids)}), got {folds}")
    _, counts = np.unique(np.asarray(tiers), return_counts=True)
    if counts.min() >= folds:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
        splits = splitter.split(ids, np.asarray(tiers))
    else:
        splits = KFold(n_splits=folds, shuffle=True, random_state=seed).split(ids)
    return [list(ids[test]) for _, test in splits]
