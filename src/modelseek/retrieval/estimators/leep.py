"""LEEP — Log Expected Empirical Prediction, for a candidate that carries a classification head.

Intuition: run the task through the source classifier to get theta(x), a distribution over its Z source
classes; estimate the empirical conditional P(y | z) of target labels given source labels; LEEP is the average
log-likelihood of the "expected empirical predictor" sum_z P(y | z) theta(x)_z on the task. A head whose
classes map cleanly onto the task's labels scores high (max 0). Higher = better.

Input: ``probs`` (N x Z) rows of source-class probabilities (the softmax of the head), not features.

Reference: C. V. Nguyen, T. Hassner, M. Seeger, C. Archambeau. "LEEP: A New Measure to Evaluate
Transferability of Learned Representations", ICML 2020.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._common import classes, one_hot


def check_probs(probs, labels, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    P = probs  # checked by the registration (check_inputs)
    y, counts = classes(labels, name=name)
    if (P < 0).any() or not np.allclose(P.sum(1), 1.0, atol=1e-4):
        raise InputError(f"{name}: probs must be rows of probabilities (non-negative, summing to 1); "
                         f"apply a softmax to the head's logits", field="probs")
    return P, y, counts


@register("estimator", name="leep", input="probs", scale_invariant=True)
def leep(probs, labels) -> float:
    """(1/N) sum_i log sum_z P(y_i | z) theta(x_i)_z. Higher = better (<= 0)."""
    P, y, counts = check_probs(probs, labels, "leep")
    N = P.shape[0]
    joint = one_hot(y, counts.shape[0]).T @ P / N           # (C, Z): P(y, z)
    pz = joint.sum(0)
    cond = np.divide(joint, pz[None, :], out=np.zeros_like(joint), where=pz[None, :] > 0)  # P(y | z)
    eep = np.einsum("nz,nz->n", P, cond[y])                  # sum_z theta(x_i)_z P(y_i | z)
    return float(np.mean(np.log(np.clip(eep, 1e-300, None))))
