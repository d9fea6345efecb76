"""kNN — how well the nearest training examples in feature space predict validation labels.

Intuition: if examples of a class sit next to each other in the frozen feature space, a fine-tuned model has
little to rearrange. Fit a k-nearest-neighbour classifier on training features, predict validation features,
report macro-F1 (higher = better). In the NTCIR-19 model-retrieval study kNN and LogME were the most accurate
methods on high-criticality tasks (nDCG@3 0.781).

References: T. Cover, P. Hart, "Nearest neighbor pattern classification", IEEE Trans. Inf. Theory 1967; used
as a transferability proxy e.g. by Puigcerver et al., "Scalable transfer learning with expert models", ICLR
2021, and by the NTCIR-19 Model Retrieval task.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._split import train_val_macro_f1


def _fit_predict(k: int, metric: str):
    def run(Xt: np.ndarray, yt: np.ndarray, Xv: np.ndarray) -> np.ndarray:
        from sklearn.neighbors import KNeighborsClassifier  # lazy: sklearn

        clf = KNeighborsClassifier(n_neighbors=min(k, Xt.shape[0]), metric=metric,
                                   algorithm="brute" if metric == "cosine" else "auto")
        return clf.fit(Xt, yt).predict(Xv)

    return run


@register("estimator", name="knn", seeded=True, uses_validation=True, scale_invariant=True)
def knn(features, labels, *, val_features=None, val_labels=None, k: int = 5, metric: str = "cosine",
        folds: int = 5, seed: int = 0) -> float:
    """Macro-F1 of a k-NN classifier (train -> validation, or stratified CV when no validation set)."""
    if int(k) < 1:
        raise InputError(f"knn: k must be >= 1, got {k}", field="k")
    return train_val_macro_f1("knn", _fit_predict(int(k), metric), features, labels, val_features, val_labels,
                              folds=folds, seed=seed)
