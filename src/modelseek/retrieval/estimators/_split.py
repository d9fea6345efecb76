"""Train/validation protocol of the estimators that fit a classifier (knn, linear_probe)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.errors import InputError
from ._common import check_inputs, unit_scale


def train_val_macro_f1(name: str, fit_predict: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
                       features, labels, val_features, val_labels, *, folds: int, seed: int) -> float:
    """Macro-F1 of ``fit_predict(X_train, y_train, X_val)``.

    With a validation set: fit on (features, labels), score on it; labels are remapped over both sets.
    Without: stratified ``folds``-fold cross-validation (seeded shuffle), macro-F1 of the pooled
    out-of-fold predictions.
    """
    from sklearn.metrics import f1_score  # lazy: sklearn
    from sklearn.model_selection import StratifiedKFold  # lazy: sklearn

    if (val_features is None) != (val_labels is None):
        raise InputError(f"{name}: give both val_features and val_labels, or neither", field="val_labels")
    if val_features is not None:
        Xt, _, _ = check_inputs(features, np.zeros(len(labels)), name=name, min_classes=1)
        Xv, _, _ = check_inputs(val_features, np.zeros(len(val_labels)), name=name, min_classes=1,
                                what="val_features")
        if Xv.shape[1] != Xt.shape[1]:
            raise InputError(f"{name}: val_features have {Xv.shape[1]} dimensions, features {Xt.shape[1]}",
                             field="val_features")
        all_labels = np.concatenate([np.asarray(labels), np.asarray(val_labels)])
        _, y_all, _ = check_inputs(np.zeros((len(all_labels), 1)), all_labels, name=name)
        yt, yv = y_all[: len(labels)], y_all[len(labels):]
        if len(np.unique(yt)) < 2:
            raise InputError(f"{name}: the training labels hold one class", field="labels")
        if len(yv) == 0:
            raise InputError(f"{name}: empty validation set", field="val_labels")
        # both methods are scale-invariant; one exact power-of-two rescale keeps 1e200-scaled features finite
        Xt, k = unit_scale(Xt)
        pred = fit_predict(Xt, yt, np.ldexp(Xv, -k))
        return float(f1_score(yv, pred, average="macro", labels=np.unique(np.concatenate([yt, yv]))))
    X, y, counts = check_inputs(features, labels, name=name, min_per_class=2)
    X = unit_scale(X)[0]
    k = int(min(folds, counts.min()))
    pred = np.empty_like(y)
    for tr, te in StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(X, y):
        pred[te] = fit_predict(X[tr], y[tr], X[te])
    return float(f1_score(y, pred, average="macro"))
