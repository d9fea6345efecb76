"""NCE — Negative Conditional Entropy of the target labels given the source head's hard predictions.

Intuition: label each example with the source classifier's most likely class z; if the target label is
(nearly) a function of z, the source task already knows this task: NCE = -H(Y | Z) is 0 for a perfect
mapping and falls as the labels get more mixed within source classes. Higher = better (<= 0).

Input: ``probs`` (N x Z) source-class probabilities (their argmax is used), as for :mod:`leep`.

Reference: A. T. Tran, C. V. Nguyen, T. Hassner. "Transferability and Hardness of Supervised Classification
Tasks", ICCV 2019.
"""

from __future__ import annotations

import numpy as np

from ...core.kinds import register
from .leep import check_probs


@register("estimator", name="nce", input="probs", scale_invariant=True)
def nce(probs, labels) -> float:
    """-H(Y | Z) with Z = argmax of the source probabilities (natural log). Higher = better."""
    P, y, counts = check_probs(probs, labels, "nce")
    N, Z = P.shape
    z = P.argmax(1)
    joint = np.zeros((counts.shape[0], Z))
    np.add.at(joint, (y, z), 1.0 / N)
    pz = joint.sum(0)
    nz = joint > 0
    cond = np.divide(joint, pz[None, :], out=np.ones_like(joint), where=nz)
    return float((joint[nz] * np.log(cond[nz])).sum())
