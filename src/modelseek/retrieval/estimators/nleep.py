"""NLEEP — LEEP with a Gaussian mixture in place of the missing classification head.

Intuition: most encoders have no source head, so LEEP's source "classes" are replaced by the components of a
Gaussian mixture fitted to the (PCA-reduced) features: the posterior responsibilities play theta(x) and LEEP
is computed on them. Components that align with the task's classes give high scores. Higher = better (<= 0).

Steps: PCA keeping ``variance`` (80%) of the variance, a GMM with ``components_per_class`` x C components
(diagonal covariances, seeded k-means initialisation), LEEP on its posteriors.

Reference: Y. Li, X. Jia, R. Sang, Y. Zhu, B. Green, L. Wang, B. Gong. "Ranking Neural Checkpoints",
CVPR 2021.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._common import classes, unit_scale
from .leep import leep


@register("estimator", name="nleep", seeded=True, scale_invariant=True)
def nleep(features, labels, *, variance: float = 0.8, components_per_class: int = 5, seed: int = 0,
          covariance_type: str = "diag", max_iter: int = 100) -> float:
    """LEEP on the posteriors of a seeded GMM over PCA-reduced features. Higher = better."""
    from sklearn.decomposition import PCA  # lazy: sklearn
    from sklearn.mixture import GaussianMixture  # lazy: sklearn

    if not 0 < variance <= 1:
        raise InputError(f"nleep: variance must be in (0, 1], got {variance}", field="variance")
    X = features  # checked by the registration
    y, counts = classes(labels, name="nleep")
    Xc = X - X.mean(0)
    if not np.abs(Xc).max() > 64 * np.finfo(np.float64).eps * np.abs(X).max():
        raise InputError("nleep: every feature is constant (no variance to fit a mixture to)", field="features")
    # the GMM's reg_covar (1e-6) is absolute: centring and an exact power-of-two rescale to unit magnitude make
    # the score independent of the feature scale (and keep 1e200-scaled features finite)
    Z = PCA(n_components=variance if variance < 1 else None, svd_solver="full",
            random_state=seed).fit_transform(unit_scale(Xc)[0])
    n_comp = int(min(components_per_class * counts.shape[0], X.shape[0]))
    gmm = GaussianMixture(n_components=n_comp, covariance_type=covariance_type, random_state=seed,
                          max_iter=max_iter, reg_covar=1e-6)
    post = gmm.fit(Z).predict_proba(Z)
    return leep(post, y)
