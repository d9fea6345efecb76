"""GBC — Gaussian Bhattacharyya Coefficient: how much the class-conditional feature Gaussians overlap.

Intuition: fit a Gaussian per class (diagonal covariance) in feature space and sum the Bhattacharyya
coefficients BC(c, c') = exp(-D_B) over pairs of classes; heavily overlapping classes will be hard to separate
after fine-tuning. GBC = -sum_{c != c'} BC(c, c') (over ordered pairs), so higher (closer to 0) = better.

D_B = 1/8 (mu_c - mu_c')^T S^-1 (mu_c - mu_c') + 1/2 log(det S / sqrt(det S_c det S_c')),
S = (S_c + S_c') / 2, with per-class variances (ddof = 0).

Reference: M. Pandy, A. Agostinelli, J. Uijlings, V. Ferrari, T. Mensink. "Transferability Estimation using
Bhattacharyya Class Separability", CVPR 2022 (the diagonal-covariance variant, their default).
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ._common import check_inputs, class_means


def gbc(features, labels) -> float:
    """-sum over ordered class pairs of the Bhattacharyya coefficient. Higher = better (max 0)."""
    X, y, counts = check_inputs(features, labels, name="gbc", min_per_class=2)
    C = counts.shape[0]
    mu = class_means(X, y, counts)
    sq = class_means(X * X, y, counts)
    var = np.clip(sq - mu * mu, 0.0, None)
    if (var <= 0).all(axis=1).any():
        raise InputError("gbc: a class has zero variance in every dimension (identical examples)",
                         field="features")
    # a dimension constant within one class would make log det -inf: floor at a tiny fraction of its scale
    var = np.maximum(var, 1e-12 * max(var.max(), 1e-300))
    logv = np.log(var)
    total = 0.0
    for a in range(C):
        s = 0.5 * (var[a][None, :] + var[a + 1:])                       # (C-a-1, D)
        d = mu[a][None, :] - mu[a + 1:]
        db = (0.125 * (d * d / s).sum(1)
              + 0.5 * (np.log(s).sum(1) - 0.5 * (logv[a].sum() + logv[a + 1:].sum(1))))
        total += 2.0 * np.exp(-db).sum()                                # BC is symmetric: both orders
    return -float(total)
