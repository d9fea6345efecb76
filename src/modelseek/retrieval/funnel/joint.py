"""The sequential policy's joint model: a Gaussian over the candidates' scores fitted on the history, conditioned
on what fine-tuning observed (see :mod:`.replay`'s docstring). Written by hand: a few lines of linear algebra."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...core.enums import Choice
from ...core.errors import InputError

class Acquisition(Choice):
    """How the sequential policy chooses the next candidate to fine-tune.

    * ``blend`` — the plain order moved by the Gaussian's evidence, weighted by a learned ``trust`` (the default);
    * ``pi`` — the probability of beating the best observed score;
    * ``ei`` — the expected improvement over it;
    * ``mean`` — the highest conditional mean (greedy).
    """

    BLEND = "blend"
    PI = "pi"
    EI = "ei"
    MEAN = "mean"


class JointModel:
    """A Gaussian over the candidates' scores, fitted on past tasks (rows of ``history``), conditioned on what
    fine-tuning observed (see the module docstring)."""

    def __init__(self, history: np.ndarray, noise: float = 0.0) -> None:
        from sklearn.covariance import LedoitWolf  # lazy: sklearn

        if history.shape[0] < 2:
            raise InputError(f"the sequential policy needs at least 2 past tasks, got {history.shape[0]}")
        self.mean = history.mean(axis=0)
        self.cov = LedoitWolf().fit(history).covariance_
        self.noise_var = float(noise) ** 2

    def condition(self, seen: Sequence[int], values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of every candidate's true score given the observed ``values`` of ``seen``."""
        if not seen:
            return self.mean.copy(), np.diag(self.cov).copy()
        s = np.asarray(seen)
        k_ss = self.cov[np.ix_(s, s)] + (self.noise_var + 1e-12) * np.eye(len(s))
        k_as = self.cov[:, s]
        sol = np.linalg.solve(k_ss, np.column_stack([np.asarray(values) - self.mean[s], k_as.T]))
        mu = self.mean + k_as @ sol[:, 0]
        var = np.diag(self.cov) - np.einsum("ij,ji->i", k_as, sol[:, 1:])
        return mu, np.maximum(var, 1e-12)

    def walk(self, base_rank: np.ndarray, observed: np.ndarray, steps: int,
             acquisition: Acquisition | str = Acquisition.BLEND, trust: float = 0.0,
             scored: np.ndarray | None = None) -> tuple[list[int], list[np.ndarray]]:
        """The sequential policy on one task, from the plain order's ranks ``base_rank`` (0 = first): the picks
        (the plain order's first, then each by ``acquisition``, only among the ``scored`` candidates: those with a
        result to reveal) and, after each number of picks 0..steps, the score that orders the candidates not
        fine-tuned (see the module docstring; after the last possible pick it stays as it is)."""
        acq = Acquisition.parse(acquisition)
        m = len(base_rank)
        avail = np.ones(m, dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
        from scipy.stats import norm  # lazy: scipy

        base_z = norm.ppf(1.0 - (np.asarray(base_rank, dtype=float) + 0.5) / m)
        sd0 = np.sqrt(np.maximum(np.diag(self.cov), 1e-12))
        picks: list[int] = []
        scores = [base_z if acq is Acquisition.BLEND else self.mean.copy()]
        var = np.diag(self.cov)
        for step in range(min(steps, int(avail.sum()))):
            if step == 0:
                nxt = int(np.argmin(np.where(avail, base_rank, m)))
            else:
                p = scores[-1].copy()  # blend's score, or (mean) the conditional mean given the picks so far
                if acq in (Acquisition.PI, Acquisition.EI):  # scores[-1] is that conditional mean, var its variance
                    sd = np.sqrt(var)
                    z = (p - observed[picks].max()) / sd
                    p = norm.cdf(z) if acq is Acquisition.PI else sd * (z * norm.cdf(z) + norm.pdf(z))
                p[picks] = -np.inf
                p[~avail] = -np.inf
                nxt = int(np.argmax(p))
            picks.append(nxt)
            mu, var = self.condition(picks, observed[picks])
            if acq is Acquisition.BLEND:
                moved = (mu - self.mean) / sd0
                mu = base_z + trust * (moved - moved.mean())
            scores.append(mu)
        return picks, scores + [scores[-1]] * (steps + 1 - len(scores))
