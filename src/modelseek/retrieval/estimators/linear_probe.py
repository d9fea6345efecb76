"""Linear probe — validation macro-F1 of an L2-regularised logistic regression on the frozen features.

Intuition: the most direct proxy of fine-tuning that keeps the encoder frozen: if a linear classifier on the
features already separates the classes, fine-tuning starts close to a good solution. Features are
standardised on the training split. Higher = better.

Reference: G. Alain, Y. Bengio, "Understanding intermediate layers using linear classifier probes", ICLR
Workshop 2017; standard linear evaluation protocol of e.g. Kornblith, Shlens, Le, "Do better ImageNet models
transfer better?", CVPR 2019.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._split import train_val_macro_f1


@register("estimator", name="linear_probe", seeded=True, uses_validation=True, scale_invariant=True)
def linear_probe(features, labels, *, val_features=None, val_labels=None, C: float = 1.0,
                 max_iter: int = 1000, folds: int = 5, seed: int = 0) -> float:
    """Macro-F1 of L2 logistic regression (train -> validation, or stratified CV without a validation set)."""
    if C <= 0:
        raise InputError(f"linear_probe: C must be > 0, got {C}", field="C")

    def run(Xt: np.ndarray, yt: np.ndarray, Xv: np.ndarray) -> np.ndarray:
        from sklearn.linear_model import LogisticRegression  # lazy: sklearn
        from sklearn.preprocessing import StandardScaler  # lazy: sklearn

        sc = StandardScaler().fit(Xt)
        clf = LogisticRegression(C=C, max_iter=max_iter, random_state=seed)
        return clf.fit(sc.transform(Xt), yt).predict(sc.transform(Xv))

    return train_val_macro_f1("linear_probe", run, features, labels, val_features, val_labels,
                              folds=folds, seed=seed)
