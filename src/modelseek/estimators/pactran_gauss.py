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
"""

from __future__ import annotations

import numpy as np

from ._common import check_inputs, one_hot


def pactran_gauss(features, labels, *, prior_var: float | None = None, max_iter: int = 100) -> float:
    """-(regularised training loss + PAC-Bayes Gaussian complexity). Higher = better."""
    from scipy.optimize import minimize
    from scipy.special import log_softmax, softmax

    X, y, counts = check_inputs(features, labels, name="pactran_gauss")
    N, D = X.shape
    C = counts.shape[0]
    X = X - X.mean(0)
    s0 = 10.0 / D if prior_var is None else float(prior_var)
    if s0 <= 0:
        raise ValueError(f"prior_var must be > 0, got {prior_var}")
    Y = one_hot(y, C)
    reg = 1.0 / (N * s0)

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
    h = (X * X).T @ (P * (1.0 - P)) / N                        # diagonal Hessian of the data term, (D, C)
    rer = float(res.fun) + 0.5 * np.log1p(N * s0 * h).sum() / N
    return -rer
