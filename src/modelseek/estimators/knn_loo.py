"""kNN leave-one-out — the kNN score on a single feature set, each example classified by its k nearest others.

Intuition: as :mod:`knn`, without needing a separate validation split; every example is predicted by a
majority vote of its k nearest *other* examples (ties go to the smallest class index). Higher = better.

Reference: the leave-one-out nearest-neighbour error (Cover & Hart 1967) as a transferability proxy, e.g. in
Renggli et al., "Which model to transfer? Finding the needle in the growing haystack", CVPR 2022.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ._registry import register
from ._common import check_inputs, unit_scale


@register("knn_loo")
def knn_loo(features, labels, *, k: int = 5, metric: str = "cosine", score: str = "macro_f1") -> float:
    """Leave-one-out k-NN ``score`` (``macro_f1`` or ``accuracy``). Higher = better."""
    from sklearn.metrics import f1_score
    from sklearn.neighbors import NearestNeighbors

    if score not in ("macro_f1", "accuracy"):
        raise InputError(f"knn_loo: score must be macro_f1 or accuracy, got {score!r}", field="score")
    X, y, counts = check_inputs(features, labels, name="knn_loo", min_per_class=2)
    X = unit_scale(X)[0]  # neighbours do not change with the scale; distances of 1e200-scaled rows would overflow
    k = int(k)
    if not 1 <= k < X.shape[0]:
        raise InputError(f"knn_loo: k must be in 1..{X.shape[0] - 1}, got {k}", field="k")
    nn = NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute" if metric == "cosine" else "auto")
    idx = nn.fit(X).kneighbors(return_distance=False)  # X=None: each point's neighbours exclude itself
    votes = np.zeros((X.shape[0], counts.shape[0]))
    np.add.at(votes, (np.repeat(np.arange(X.shape[0]), k), y[idx].ravel()), 1.0)
    pred = votes.argmax(1)
    if score == "accuracy":
        return float((pred == y).mean())
    return float(f1_score(y, pred, average="macro"))
