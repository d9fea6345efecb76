"""PACTran-Gauss — a PAC-Bayesian bound on the risk of a linear softmax head with a Gaussian prior.

Intuition: a good feature space admits a linear classifier that both fits the task (low training loss) and
is *simple* relative to a prior: the PAC-Bayes bound charges the KL divergence between the posterior over
the head's weights and the prior. With prior N(0, s0^2 I), a Gaussian posterior N(w*, diag(s^2)) and a
second-order expansion of the loss, the optimal posterior variances give the closed form

    RER = L(w*) + |w*|^2 / (2 N s0^2) + 1/(2N) sum_j log(1 + N s0^2 h_j),

where w* minimises the regularised cross-entropy L(w) + |w|^2 / (2 N s0^2) and h_j are the diagonal entries
of the Hessian of L at w*. The score is -RER (higher = better).

Reference: N. Ding, X. Chen, T. Levinboim, S. Changpinyo, R. Soricut. "PACTran: PAC-Bayesian Metrics for
Estimating the Transferability of Pretrained Models to Classification Tasks", ECCV 2022 (the Gaussian-prior
variant). The derivation above is ours, from the PAC-Bayes-lambda bound with temperature N; features are
centred and the prior variance defaults to 10 / D, as in the paper's experiments.

Scale: the prior variance is absolute, so the score depends on the feature scale. The head is fitted on the
features divided by a power of two 2**k (exact) with weights W_s = 2**k W and the prior rescaled to match (the
same objective), and log1p(N s0 h) is taken in log space; features of magnitude 1e200 or 1e-200 give the
value of the formula instead of an overflow.
"""

from __future__ import annotations

import numpy as np

from ...core.errors import InputError
from ...core.kinds import register
from ._common import LOG2, classes, one_hot, unit_scale


@register("estimator", name="pactran_gauss", scale_invariant=False)
def pactran_gauss(features, labels, *, prior_var: float | None = None, max_iter: int = 100) -> float:
    """-(regularised training loss + PAC-Bayes Gaussian complexity). Higher = better."""
    from scipy.optimize import minimize  # lazy: scipy
    from scipy.special import log_softmax, softmax  # lazy: scipy

    X = features  # checked by the registration
    y, counts = classes(labels, name="pactran_gauss")
    N, D = X.shape
    C = counts.shape[0]
    X, k = unit_scale(X - X.mean(0))                         # true features = X * 2**k
    s0 = 10.0 / D if prior_var is None else float(prior_var)
    if not s0 > 0:
        raise InputError(f"pactran_gauss: prior_var must be > 0, got {prior_var}", field="prior_var")
    Y = one_hot(y, C)
    with np.errstate(over="ignore"):
        # |W|^2 / (2 N s0) with W = W_s / 2**k; capped where 4**-k overflows (the head is then ~0 anyway)
        reg = min(float(np.ldexp(1.0 / (N * s0), -2 * k)), 1e300)

    def loss_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        W = theta[: D * C].reshape(D, C)
        b = theta[D * C:]
        logits = X @ W + b
        logp = log_softmax(logits, axis=1)
        loss = -(Y * logp).sum() / N + 0.5 * reg * (W * W).sum()
        R = (np.exp(logp) - Y) / N
        gW = X.T @ R + reg * W
        return loss, np.concatenate([gW.ravel(), R.sum(0)])

    res = minimize(loss_grad, np.zeros(D * C + C), jac=True, method="L-BFGS-B",
                   options={"maxiter": max_iter, "gtol": 1e-6})
    W = res.x[: D * C].reshape(D, C)
    P = softmax(X @ W + res.x[D * C:], axis=1)
    h = (X * X).T @ (P * (1.0 - P)) / N          # diagonal Hessian of the data term at scale 2**-k, (D, C)
    with np.errstate(divide="ignore"):
        u = np.log(N * s0 * h) + 2 * k * LOG2                 # log(N s0 h_true); h = 0 gives -inf -> 0
    rer = float(res.fun) + 0.5 * np.logaddexp(0.0, u).sum() / N
    return -rer
