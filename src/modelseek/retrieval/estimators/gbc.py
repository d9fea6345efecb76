"""GBC — Gaussian Bhattacharyya Coefficient: how much the class-conditional feature Gaussians overlap.

Intuition: fit a Gaussian per class (diagonal covariance) in feature space and sum the Bhattacharyya
coefficients BC(c, c') = exp(-D_B) over pairs of classes; heavily overlapping classes will be hard to separate
after fine-tuning. GBC = -sum_{c != c'} BC(c, c') (over ordered pairs), so higher (closer to 0) = better.

D_B = 1/8 sum_d (mu_c - mu_c')_d^2 / s_d + 1/2 sum_d log(s_d / sqrt(v_c,d v_c',d)), s = (v_c + v_c') / 2, with
per-class variances v (ddof = 0).

Reference: M. Pandy, A. Agostinelli, J. Uijlings, V. Ferrari, T. Mensink. "Transferability Estimation using
Bhattacharyya Class Separability", CVPR 2022, and the authors' released ``get_gbc_score``, which this
follows: each per-class variance is floored at 1e-4 *absolute* (a feature constant within a class, as in
sklearn's digits, gets variance 1e-4), and ``gaussian="spherical"`` replaces each class's variances by their
mean. In that variant the released code adds the log term once for the scalar variance (not once per
dimension, as the density of a spherical Gaussian would); we keep the released form.

Scale: the absolute floor makes GBC depend on the feature scale. Variances are computed on the features
divided by a power of two (two-pass, centred within the class) and carried in log space, so features of
magnitude 1e200 or 1e-200 give the value of the formula (where every variance sits at the floor, every BC is
1 and GBC = -C(C-1)) instead of an overflow or NaN.
"""

from __future__ import annotations

import numpy as np

from ...core.enums import Choice
from ._common import LOG2, class_means, classes, unit_scale
from ...core.kinds import register

#: the released code's variance floor (absolute)
VAR_FLOOR = 1e-4


class GbcGaussian(Choice):
    DIAGONAL = "diagonal"    # per-dimension class variances (default)
    SPHERICAL = "spherical"  # one variance per class: the mean of its per-dimension variances


@register("estimator", name="gbc", scale_invariant=False)
def gbc(features, labels, *, gaussian: str = "diagonal") -> float:
    """-sum over ordered class pairs of the Bhattacharyya coefficient. Higher = better (max 0)."""
    kind = GbcGaussian.parse(gaussian, "gaussian")
    X = features  # checked by the registration
    y, counts = classes(labels, name="gbc", min_per_class=2)
    Xs, k = unit_scale(X)
    log_s = k * LOG2                                            # features = Xs * exp(log_s)
    mu = class_means(Xs, y, counts)
    Xc = Xs - mu[y]
    var_s = class_means(Xc * Xc, y, counts)
    with np.errstate(divide="ignore"):
        # log of the true-scale variance, floored at 1e-4: log max(v_s e^{2 log_s}, 1e-4)
        logv = np.maximum(np.log(var_s) + 2.0 * log_s, np.log(VAR_FLOOR))
    if kind is GbcGaussian.SPHERICAL:
        logv = _logmeanexp(logv)[:, None]                       # (C, 1): one variance per class
    C = counts.shape[0]
    total = 0.0
    for a in range(C):
        la, lb = logv[a][None, :], logv[a + 1:]
        log_avg = np.logaddexp(la, lb) - LOG2                   # log of (v_a + v_b) / 2
        d = mu[a][None, :] - mu[a + 1:]
        with np.errstate(divide="ignore", over="ignore"):
            # d_true^2 / avg = exp(2 log|d_s| + 2 log_s - log avg); d = 0 gives exp(-inf) = 0
            maha = np.exp(2.0 * (np.log(np.abs(d)) + log_s) - log_avg).sum(1)
        logdet = (log_avg - 0.5 * (la + lb)).sum(1)
        db = 0.125 * maha + 0.5 * logdet
        total += 2.0 * np.exp(-db).sum()                        # BC is symmetric: both orders
    return -float(total)


def _logmeanexp(logv: np.ndarray) -> np.ndarray:
    top = logv.max(1)
    return top + np.log(np.exp(logv - top[:, None]).mean(1))
