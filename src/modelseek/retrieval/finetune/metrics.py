"""Classification scores of the protocol, computed from a confusion matrix.

The confusion matrix is accumulated batch by batch (no list of predictions is kept on the device), so the
macro average is written out here; its convention is scikit-learn's ``f1_score(average="macro")`` with the
default ``labels`` (the classes present in the true or the predicted labels) and ``zero_division=0``,
which the tests check on random inputs.
"""

from __future__ import annotations

import numpy as np


def confusion(y_true, y_pred, n_classes: int) -> np.ndarray:
    """``C[i, j]`` = number of examples of class ``i`` predicted as ``j``."""
    y_true = np.asarray(y_true, dtype=np.int64).ravel()
    y_pred = np.asarray(y_pred, dtype=np.int64).ravel()
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} labels, y_pred {y_pred.size}")
    return np.bincount(y_true * n_classes + y_pred, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def macro_f1_from_confusion(cm: np.ndarray) -> float:
    """Mean over classes present in truth or predictions of 2 TP / (2 TP + FP + FN)."""
    cm = np.asarray(cm, dtype=float)
    tp = np.diag(cm)
    support = cm.sum(axis=1)
    predicted = cm.sum(axis=0)
    present = (support + predicted) > 0
    if not present.any():
        return 0.0
    denom = support + predicted  # = 2 TP + FP + FN
    f1 = np.divide(2 * tp, denom, out=np.zeros_like(tp), where=denom > 0)
    return float(f1[present].mean())


def accuracy_from_confusion(cm: np.ndarray) -> float:
    cm = np.asarray(cm, dtype=float)
    total = cm.sum()
    return float(np.trace(cm) / total) if total else 0.0


def macro_f1(y_true, y_pred, n_classes: int | None = None) -> float:
    """Macro-F1 of integer labels (scikit-learn's convention, see the module docstring)."""
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    if n_classes is None:
        n_classes = int(max(y_true.max(initial=-1), y_pred.max(initial=-1))) + 1
    return macro_f1_from_confusion(confusion(y_true, y_pred, max(n_classes, 1)))
