"""Solvers for both Re-Align teams.

**Red** — choose m stimuli (of N) on which M fixed models disagree, i.e. minimise the mean pairwise linear CKA
of the models restricted to the chosen stimuli:

1. *screening*: a per-stimulus disagreement score. Each model's (globally centred) similarity row of the
   stimulus to a fixed random reference set is centred and normalised; disagreement = 1 - mean pairwise
   correlation of those rows over model pairs. The top ``pool`` stimuli form the candidate pool.
2. *greedy construction*: stochastic greedy (Mirzasoleiman et al., AAAI 2015) — start from the most
   disagreeing few, add the best of a random sample of candidates at each step.
3. *simulated annealing* with swap moves (one in, one out), geometric cooling, Metropolis acceptance.

Every move is scored incrementally. For the uncentred Grams K_a restricted to the set S (|S| = m) we keep
``T[a,b] = <K_a, K_b>_F``, the row sums ``r_a = K_a 1`` and ``s_a = 1'K_a 1``; the centred inner product is
``<H K_a H, H K_b H> = T[a,b] - 2/m r_a'r_b + s_a s_b / m^2`` (expand H = I - 11'/m). A swap changes one row
and column of every K_a, so T, r and s update from the swapped rows: O(M m) Gram entries and O(M^2 m)
arithmetic per step, instead of O(M^2 m^2) (or O(M m^2 d)) for a fresh evaluation. The state is recomputed
from scratch periodically to stop round-off drift, and the final score is recomputed with
:func:`~modelseek.align.linear_cka.cka_matrix`.

**Blue** — choose k of M models maximising the mean pairwise CKA (on the whole catalog): exhaustive when
C(M, k) is small, else greedy construction + best-improvement swap local search from the greedy start and
from seeded random restarts.

Both return a :class:`SolverResult` with the score trajectory and the baseline scores of the same run.
Randomness only through ``np.random.default_rng(seed)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import InputError
from ..core.progress import progress_bar
from .formats import StimulusCatalog, AlignSubmission, Team
from .linear_cka import EPS, cka_matrix
from .scoring import AlignData


@dataclass
class SolverResult:
    team: Team
    selection: list            # stimulus positions (red) or model names (blue)
    score: float               # the team's score of the selection (red: 1 - mean CKA; blue: mean CKA)
    trajectory: list[dict] = field(default_factory=list)  # {"step", "phase", "score", "best"}
    baselines: dict[str, float] = field(default_factory=dict)  # same-run comparison scores
    seconds: dict[str, float] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"team": self.team.value, "selection": list(self.selection), "score": self.score,
                "baselines": self.baselines, "seconds": self.seconds, "meta": self.meta,
                "trajectory": self.trajectory}

    def submission(self, catalog: StimulusCatalog | None = None) -> AlignSubmission:
        if self.team is Team.BLUE:
            return AlignSubmission(Team.BLUE, models=tuple(self.selection))
        if catalog is None:
            raise InputError("a Red submission needs the catalog to name its stimuli")
        return AlignSubmission(Team.RED, stimuli=tuple(catalog[i] for i in self.selection))


def _mean_offdiag_batched(H: np.ndarray) -> np.ndarray:
    """H [..., M, M] centred HSICs -> mean off-diagonal CKA [...] (eps convention: degenerate -> 0)."""
    d = np.diagonal(H, axis1=-2, axis2=-1)
    scale = np.abs(d).max(axis=-1, keepdims=True)
    ok = d > EPS * np.maximum(scale, 1e-300)
    safe = np.where(ok, d, 1.0)
    C = H / np.sqrt(safe[..., :, None] * safe[..., None, :])
    C = np.where(ok[..., :, None] & ok[..., None, :], C, 0.0)
    M = H.shape[-1]
    total = C.sum(axis=(-2, -1)) - np.diagonal(C, axis1=-2, axis2=-1).sum(-1)
    return total / (M * (M - 1))


def _hsic(T, R, s, m):
    return T - (2.0 / m) * R + (s[..., :, None] * s[..., None, :]) / (m * m)


class _GramSource:
    """Rows of the M per-model Grams over the pool: precomputed when they fit in memory, else on the fly."""

    def __init__(self, feats: list[np.ndarray], memory_bytes: int) -> None:
        self.M = len(feats)
        self.P = feats[0].shape[0]
        self.feats = feats
        self.G = None
        if self.M * self.P * self.P * 8 <= memory_bytes:
            self.G = np.stack([F @ F.T for F in feats])

    def rows(self, rows: int | np.ndarray, cols: np.ndarray) -> np.ndarray:
        """[M, len(rows), len(cols)] (rows may be an int: then [M, len(cols)])."""
        if self.G is not None:
            if isinstance(rows, (int, np.integer)):
                return self.G[:, rows, :][:, cols]
            return self.G[:, rows, :][:, :, cols]
        if isinstance(rows, (int, np.integer)):
            return np.stack([F[cols] @ F[rows] for F in self.feats])
        return np.stack([F[rows] @ F[cols].T for F in self.feats])

    def diag(self, idx) -> np.ndarray:
        if self.G is not None:
            return self.G[:, idx, idx]
        return np.stack([np.einsum("ij,ij->i", np.atleast_2d(F[idx]), np.atleast_2d(F[idx])) for F in self.feats]
                        ).reshape(self.M, *np.shape(idx))


class RedState:
    """The incremental state of a stimulus set S (pool positions) for the Red objective."""

    def __init__(self, src: _GramSource, S: Sequence[int]) -> None:
        self.src = src
        self.S = np.array(S, dtype=np.int64)
        self.recompute()

    def recompute(self) -> None:
        K = self.src.rows(self.S, self.S)  # [M, m, m]
        self.T = np.einsum("aij,bij->ab", K, K)
        self.r = K.sum(axis=2)             # [M, m]
        self.s = self.r.sum(axis=1)
        self.R = self.r @ self.r.T

    @property
    def m(self) -> int:
        return len(self.S)

    def objective(self) -> float:
        return float(_mean_offdiag_batched(_hsic(self.T, self.R, self.s, self.m)))

    def add_candidates(self, V: np.ndarray) -> np.ndarray:
        """Mean CKA after adding each candidate of V (not in S) -> [len(V)]."""
        kv = self.src.rows(V, self.S)                    # [M, c, m]
        kvv = self.src.diag(V)                           # [M, c]
        T = self.T[None] + 2 * np.einsum("acm,bcm->cab", kv, kv) + np.einsum("ac,bc->cab", kvv, kvv)
        rp = self.r[:, None, :] + kv                     # new row sums of the old members
        rv = kv.sum(-1) + kvv                            # row sum of the new member
        R = np.einsum("acm,bcm->cab", rp, rp) + np.einsum("ac,bc->cab", rv, rv)
        s = (self.s[:, None] + 2 * kv.sum(-1) + kvv).T   # [c, M]
        return _mean_offdiag_batched(_hsic(T, R, s, self.m + 1))

    def add(self, v: int) -> None:
        kv = self.src.rows(int(v), self.S)               # [M, m]
        kvv = self.src.diag(int(v))                      # [M]
        self.T = self.T + 2 * kv @ kv.T + np.outer(kvv, kvv)
        self.r = np.concatenate([self.r + kv, (kv.sum(-1) + kvv)[:, None]], axis=1)
        self.s = self.r.sum(axis=1)
        self.R = self.r @ self.r.T
        self.S = np.append(self.S, v)

    def swap_delta(self, p: int, v: int):
        """Objective after replacing S[p] by v, and the new (T, r) to commit with :meth:`commit`."""
        u = int(self.S[p])
        ku = self.src.rows(u, self.S)                    # [M, m]; ku[:, p] = K_uu
        kv = self.src.rows(int(v), self.S)               # [M, m]; kv[:, p] = K_vu
        kuu, kvu = ku[:, p], kv[:, p]
        kvv = self.src.diag(int(v))
        T = (self.T - 2 * ku @ ku.T + np.outer(kuu, kuu)
             + 2 * (kv @ kv.T - np.outer(kvu, kvu)) + np.outer(kvv, kvv))
        r = self.r - ku + kv
        r[:, p] = kv.sum(-1) - kvu + kvv
        s = r.sum(axis=1)
        R = r @ r.T
        return float(_mean_offdiag_batched(_hsic(T, R, s, self.m))), (T, r, s, R)

    def commit(self, p: int, v: int, new) -> None:
        self.T, self.r, self.s, self.R = new
        self.S = self.S.copy()
        self.S[p] = v


def _feats(features) -> list[np.ndarray]:
    if isinstance(features, AlignData):
        features = list(features.features.values())
    feats = [np.asarray(F, dtype=np.float64) for F in features]
    # CKA is invariant to scaling each model's features; scaling to a largest entry of 1 keeps the
    # incremental Gram sums far from float64 overflow whatever the features' units
    feats = [F / m if (m := float(np.max(np.abs(F))) if F.size else 0.0) > 0 and np.isfinite(m) else F
             for F in feats]
    if len(feats) < 2:
        raise InputError("the Red objective needs at least 2 models")
    n = feats[0].shape[0]
    if any(F.ndim != 2 or F.shape[0] != n for F in feats):
        raise InputError("all feature arrays must be 2-D with the same number of stimuli")
    return feats


def disagreement(features, n_ref: int = 512, seed: int = 0, chunk: int = 1024) -> np.ndarray:
    """Per-stimulus disagreement in [0, 2]: 1 - mean pairwise correlation (over model pairs) of the
    stimulus's similarity rows to a fixed random reference set."""
    feats = [F - F.mean(0) for F in _feats(features)]
    n, M = feats[0].shape[0], len(feats)
    rng = np.random.default_rng(seed)
    ref = np.sort(rng.choice(n, size=min(n, n_ref), replace=False))
    out = np.empty(n)
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        rows = np.stack([F[a:b] @ F[ref].T for F in feats])  # [M, c, r]
        rows -= rows.mean(-1, keepdims=True)
        norm = np.linalg.norm(rows, axis=-1, keepdims=True)
        rows = np.where(norm > 0, rows / np.where(norm > 0, norm, 1), 0)
        tot = rows.sum(0)
        pair_sum = (np.einsum("cr,cr->c", tot, tot) - np.einsum("acr,acr->c", rows, rows)) / 2
        out[a:b] = 1 - pair_sum / (M * (M - 1) / 2)
    return out


def red_objective(features, stimuli: Sequence[int] | np.ndarray, unbiased: bool = False) -> float:
    """Red score (1 - mean pairwise CKA) of a stimulus set, computed from scratch with cka_matrix."""
    feats = _feats(features)
    idx = np.asarray(stimuli)
    C = cka_matrix([F[idx] for F in feats], unbiased=unbiased)
    iu = np.triu_indices(len(feats), 1)
    return float(1 - C[iu].mean())


def greedy_blue(C: np.ndarray, k: int) -> list[int]:
    """The common Blue baseline: start from the most similar pair of models, then add the model most similar to
    those chosen (sum of CKA), until ``k``."""
    M = C.shape[0]
    i, j = np.unravel_index(int(np.argmax(C - np.eye(M) * 1e9)), C.shape)
    S = [int(i), int(j)]
    while len(S) < k:
        a = C[:, S].sum(axis=1)
        a[S] = -np.inf
        S.append(int(np.argmax(a)))
    return S


def _red_greedy(src: _GramSource, rank_in_pool, m: int, P: int, greedy_sample: int, rng, progress: bool,
                traj: list) -> tuple[RedState, np.ndarray]:
    """Greedy construction of the Red solver: start from the most disagreeing pool stimuli, then add the best of
    ``greedy_sample`` random candidates until ``m``; (state, in-set mask of the pool)."""
    start = min(m, 8)
    state = RedState(src, rank_in_pool[:start])
    in_set = np.zeros(P, dtype=bool)
    in_set[state.S] = True
    traj.append({"step": 0, "phase": "greedy", "score": 1 - state.objective(), "best": None})
    for step in progress_bar(range(start, m), desc="greedy", disable=not progress):
        free = np.flatnonzero(~in_set)
        cand = free if len(free) <= greedy_sample else rng.choice(free, size=greedy_sample, replace=False)
        vals = state.add_candidates(cand)
        v = int(cand[int(np.argmin(vals))])
        state.add(v)
        in_set[v] = True
        traj.append({"step": step + 1 - start, "phase": "greedy", "score": 1 - float(vals.min()), "best": None})
    return state, in_set


def _initial_temperature(state: RedState, cur: float, m: int, free_list, steps: int, p_start: float,
                         rng) -> float:
    """The temperature at which a typical worsening swap is accepted with probability ``p_start``."""
    deltas = []
    for _ in range(min(50, steps)):
        p, v = int(rng.integers(m)), int(free_list[rng.integers(len(free_list))])
        deltas.append(abs(state.swap_delta(p, v)[0] - cur))
    return max(float(np.median(deltas)), 1e-12) / math.log(1.0 / p_start)


#: the most annealing steps and local-search restarts a solver takes (200x and 500x their defaults): each is work
MAX_STEPS = 1_000_000
MAX_RESTARTS = 10_000


def _check_work(**counts: int) -> None:
    """Each of ``counts`` (steps, restarts) an integer in [0, its cap], checked before any work."""
    caps = {"steps": MAX_STEPS, "restarts": MAX_RESTARTS}
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= caps[name]:
            raise InputError(f"{name} must be an integer in [0, {caps[name]:,}], got {value}", field=name)


def optimize_red(features, m: int, *, pool: int | None = None, greedy_sample: int = 32, steps: int = 5000,
                 seed: int = 0, t0: float | None = None, p_start: float = 0.2, cooling_to: float = 1e-3,
                 recompute_every: int = 500, memory_bytes: int = 1 << 30, progress: bool = False,
                 log_every: int | None = None) -> SolverResult:
    """Choose ``m`` stimuli (catalog positions) maximising the Red score; see the module docstring."""
    _check_work(steps=steps)
    feats = _feats(features)
    n = feats[0].shape[0]
    if not 4 <= m <= n:
        raise InputError(f"m must be between 4 and the number of stimuli ({n}), got {m}")
    rng = np.random.default_rng(seed)
    clock = {}
    traj: list[dict] = []
    baselines = {}

    t = time.perf_counter()
    dis = disagreement(feats, seed=seed)
    P = min(n, pool if pool is not None else max(4 * m, 1024))
    if P < m:
        raise InputError(f"pool ({P}) must be at least m ({m})")
    order = np.argsort(-dis, kind="stable")
    pool_idx = np.sort(order[:P])
    rank_in_pool = np.argsort(-dis[pool_idx], kind="stable")  # pool positions by disagreement
    g = [F - F[pool_idx].mean(0) for F in feats]  # centring does not change CKA; it helps conditioning
    src = _GramSource([F[pool_idx] for F in g], memory_bytes)
    clock["screening"] = time.perf_counter() - t

    rand_sets = [rng.choice(n, size=m, replace=False) for _ in range(5)]
    baselines["random"] = float(np.mean([red_objective(feats, s) for s in rand_sets]))
    baselines["screening_top"] = red_objective(feats, pool_idx[rank_in_pool[:m]])

    # greedy construction
    t = time.perf_counter()
    state, in_set = _red_greedy(src, rank_in_pool, m, P, greedy_sample, rng, progress, traj)
    state.recompute()
    greedy_obj = state.objective()
    baselines["greedy"] = red_objective(feats, pool_idx[state.S])
    clock["greedy"] = time.perf_counter() - t
    g_steps = len(traj)

    # simulated annealing with swap moves
    t = time.perf_counter()
    cur = greedy_obj
    best, best_S = cur, state.S.copy()
    free_list = np.flatnonzero(~in_set)
    accepted = 0
    if steps > 0 and len(free_list) > 0:
        if t0 is None:  # a typical worsening move accepted with probability p_start at the start
            t0 = _initial_temperature(state, cur, m, free_list, steps, p_start, rng)
        alpha = cooling_to ** (1.0 / max(1, steps - 1))
        temp = t0
        log_every = log_every or max(1, steps // 200)
        for step in progress_bar(range(steps), desc="annealing", disable=not progress):
            p = int(rng.integers(m))
            k = int(rng.integers(len(free_list)))
            v = int(free_list[k])
            new, payload = state.swap_delta(p, v)
            d = new - cur
            if d <= 0 or rng.random() < math.exp(-d / temp):
                u = int(state.S[p])
                state.commit(p, v, payload)
                free_list[k] = u
                cur = new
                accepted += 1
                if accepted % recompute_every == 0:
                    state.recompute()
                    cur = state.objective()
                if cur < best:
                    best, best_S = cur, state.S.copy()
            temp *= alpha
            if (step + 1) % log_every == 0 or step == steps - 1:
                traj.append({"step": g_steps + step, "phase": "annealing", "score": 1 - cur, "best": 1 - best})
    clock["annealing"] = time.perf_counter() - t
    selection = np.sort(pool_idx[best_S]).tolist()
    score = red_objective(feats, selection)
    baselines["annealing"] = score
    return SolverResult(Team.RED, selection, score, traj, baselines, clock,
                        {"m": m, "pool": P, "steps": steps, "accepted": accepted, "t0": t0, "seed": seed,
                         "models": len(feats), "n_stimuli": n})


# ------------------------------------------------------------------ Blue


#: how far outside [-1, 1] a CKA value may lie (rounding); linear CKA is in [0, 1], its unbiased form in [-1, 1]
CKA_TOLERANCE = 1e-6


def cka_out_of_range(C: np.ndarray) -> tuple[int, int, float] | None:
    """The first entry (row, column, value) of ``C`` that is no CKA value (outside [-1, 1] beyond rounding), or
    None. A matrix of such values would make the objective meaningless (and, near 1e308, overflow)."""
    bad = np.argwhere(~(np.abs(C) <= 1.0 + CKA_TOLERANCE))
    if len(bad) == 0:
        return None
    i, j = (int(x) for x in bad[0])
    return i, j, float(C[i, j])


def _check_matrix(C) -> np.ndarray:
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise InputError(f"the CKA matrix must be square, got shape {C.shape}")
    if not np.all(np.isfinite(C)):
        raise InputError("the CKA matrix has NaN or infinite entries")
    bad = cka_out_of_range(C)
    if bad is not None:
        raise InputError(f"the CKA matrix entry ({bad[0]}, {bad[1]}) is {bad[2]:g}, not a CKA value (in [-1, 1])")
    if not np.allclose(C, C.T, atol=1e-8):
        raise InputError("the CKA matrix must be symmetric")
    return (C + C.T) / 2


def blue_objective(C: np.ndarray, S) -> float:
    """Mean pairwise CKA (off-diagonal mean) of the models at positions ``S``."""
    S = list(S)
    k = len(S)
    if k < 2:
        raise InputError("a Blue subset needs at least 2 models")
    sub = C[np.ix_(S, S)]
    return float((sub.sum() - np.trace(sub)) / (k * (k - 1)))


_blue_obj = blue_objective


def blue_upper_bound(C: np.ndarray, k: int) -> float:
    """An upper bound of the best mean pairwise CKA over all k-subsets, in O(M^2 log M).

    For a subset S, sum_{i in S} sum_{j in S, j != i} C_ij <= sum_{i in S} u_i with u_i the sum of the k-1
    largest off-diagonal entries of row i, and that is at most the sum of the k largest u_i. The bound is tight
    when the best subset is a clique whose members' k-1 largest neighbours are each other (planted clusters):
    the solver's value reaching it proves that subset optimal."""
    C = np.asarray(C, dtype=np.float64)
    M = C.shape[0]
    off = C.copy()
    np.fill_diagonal(off, -np.inf)
    top = -np.sort(-off, axis=1)[:, :k - 1]
    u = top.sum(axis=1)
    return float(np.sort(u)[::-1][:k].sum() / (k * (k - 1))) if M >= k else float("nan")


def _local_search(C: np.ndarray, S: list[int], trace: list[float] | None = None) -> list[int]:
    """Best-improvement swaps (one model out, one in) until none improves.

    Each swap raises the objective, so the search ends; the cap on swaps (far above what a matrix of CKA values
    needs: every swap gains at least 1e-15) guarantees it also where rounding could make two swaps undo each
    other."""
    M = C.shape[0]
    S = list(S)
    for _ in range(100 * M * max(1, len(S)) + 1000):
        inS = np.zeros(M, dtype=bool)
        inS[S] = True
        a = C[:, S].sum(axis=1)              # a[v] = sum_{j in S} C[v, j]
        out = np.flatnonzero(~inS)
        if len(out) == 0:
            return S
        Sarr = np.array(S)
        # gain of swapping u (in S) for v (out): (a[v] - C[v,u]) - (a[u] - C[u,u])
        gain = (a[out][None, :] - C[np.ix_(Sarr, out)]) - (a[Sarr] - C[Sarr, Sarr])[:, None]
        i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
        if not gain[i, j] > 1e-15:  # also a NaN gain: nothing measurable left to improve
            return S
        S[i] = int(out[j])
        if trace is not None:
            trace.append(blue_objective(C, S))
    return S


def _anneal_blue(C: np.ndarray, start: list[int], steps: int, rng: np.random.Generator, p_start: float = 0.2,
                 cooling_to: float = 1e-3) -> tuple[list[int], float, list[tuple[int, float, float]]]:
    """Simulated annealing over swaps. With a[v] = sum_{j in S} C[v, j] kept up to date, a swap's change of the
    ordered-pair sum is 2 ((a[v] - C[v,u]) - (a[u] - C[u,u])): O(1) per proposal, O(M) per accepted move."""
    M, k = C.shape[0], len(start)
    S = np.array(start)
    inS = np.zeros(M, dtype=bool)
    inS[S] = True
    out = np.flatnonzero(~inS)
    if len(out) == 0 or steps <= 0:
        return S.tolist(), blue_objective(C, S), []
    a = C[:, S].sum(axis=1)
    norm = k * (k - 1)
    total = float(a[S].sum() - np.trace(C[np.ix_(S, S)]))

    def delta(p, q):
        u, v = S[p], out[q]
        return 2.0 * ((a[v] - C[v, u]) - (a[u] - C[u, u]))

    sample = [abs(delta(int(rng.integers(k)), int(rng.integers(len(out))))) for _ in range(min(100, steps))]
    t0 = max(float(np.median(sample)), 1e-12) / math.log(1.0 / p_start)
    alpha = cooling_to ** (1.0 / max(1, steps - 1))
    temp, best, best_S, log = t0, total, S.copy(), []
    every = max(1, steps // 100)
    for step in range(steps):
        p, q = int(rng.integers(k)), int(rng.integers(len(out)))
        d = delta(p, q)
        if d >= 0 or rng.random() < math.exp(d / temp):
            u, v = S[p], out[q]
            a += C[:, v] - C[:, u]
            S[p], out[q] = v, u
            total += d
            if total > best + 1e-12:
                best, best_S = total, S.copy()
        temp *= alpha
        if (step + 1) % every == 0:
            log.append((step, total / norm, best / norm))
    return best_S.tolist(), blue_objective(C, best_S), log


def _exhaustive_blue(C: np.ndarray, k: int, chunk: int = 8192) -> tuple[float, list[int]]:
    """Every k-subset, in lexicographic order, scored in vectorised blocks (first best wins ties)."""
    from itertools import combinations, islice

    it = combinations(range(C.shape[0]), k)
    diag = np.diag(C)
    opt, opt_S = -math.inf, list[int]()
    while True:
        block = np.array(list(islice(it, chunk)), dtype=np.intp)
        if not len(block):
            return float(opt), opt_S
        vals = C[block[:, :, None], block[:, None, :]].sum(axis=(1, 2)) - diag[block].sum(axis=1)
        i = int(np.argmax(vals))
        if vals[i] / (k * (k - 1)) > opt:
            opt, opt_S = float(vals[i] / (k * (k - 1))), block[i].tolist()


def optimize_blue(C: np.ndarray, k: int, names: Sequence[str] | None = None, *, restarts: int = 20,
                  seed: int = 0, exhaustive_limit: int = 200_000, steps: int = 20_000) -> SolverResult:
    """Choose ``k`` models maximising the mean pairwise CKA of the symmetric matrix ``C``.

    Exhaustive when C(M, k) <= ``exhaustive_limit``; otherwise greedy, best-improvement local search from the
    greedy start and ``restarts`` seeded random starts, then simulated annealing (``steps`` swaps) from the
    best. ``meta`` holds the upper bound (:func:`blue_upper_bound`) and whether the result is proved optimal
    (exhaustive search, or the bound reached)."""
    _check_work(steps=steps, restarts=restarts)
    C = _check_matrix(C)
    M = C.shape[0]
    if not 2 <= k <= M:
        raise InputError(f"k must be between 2 and the number of models ({M}), got {k}")
    names = list(names) if names is not None else [str(i) for i in range(M)]
    if len(names) != M:
        raise InputError(f"{len(names)} names for a {M} x {M} matrix")
    rng = np.random.default_rng(seed)
    clock, traj, baselines = {}, [], {}
    baselines["random"] = float(np.mean([blue_objective(C, rng.choice(M, k, replace=False)) for _ in range(20)]))

    t = time.perf_counter()
    S = greedy_blue(C, k)
    greedy = blue_objective(C, S)
    baselines["greedy"] = greedy
    traj.append({"step": 0, "phase": "greedy", "score": greedy, "best": greedy})
    clock["greedy"] = time.perf_counter() - t

    t = time.perf_counter()
    trace: list[float] = []
    best_S = _local_search(C, S, trace)
    best = blue_objective(C, best_S)
    for v in trace:
        traj.append({"step": len(traj), "phase": "local_search", "score": v, "best": max(v, greedy)})
    for _ in range(restarts):
        S2 = _local_search(C, [int(x) for x in rng.choice(M, k, replace=False)])
        v = blue_objective(C, S2)
        if v > best + 1e-15:
            best, best_S = v, S2
        traj.append({"step": len(traj), "phase": "restart", "score": v, "best": best})
    baselines["local_search"] = best
    clock["local_search"] = time.perf_counter() - t
    t = time.perf_counter()
    S3, v, log = _anneal_blue(C, best_S, steps, rng)
    start = len(traj)
    for step, cur, b in log:
        traj.append({"step": start + step, "phase": "annealing", "score": cur, "best": max(b, best)})
    if v > best + 1e-15:
        best_S = _local_search(C, S3)  # polish: annealing ends cold, a last swap may still help
        best = blue_objective(C, best_S)
    baselines["annealing"] = best
    clock["annealing"] = time.perf_counter() - t

    exact = math.comb(M, k) <= exhaustive_limit
    if exact:
        t = time.perf_counter()
        opt, opt_S = _exhaustive_blue(C, k)
        baselines["exhaustive"] = float(opt)
        clock["exhaustive"] = time.perf_counter() - t
        if opt > best + 1e-15:
            best, best_S = float(opt), opt_S
    bound = blue_upper_bound(C, k)
    proved = exact or best >= bound - 1e-9
    sel = sorted(best_S)
    return SolverResult(Team.BLUE, [names[i] for i in sel], float(best), traj, baselines, clock,
                        {"k": k, "models": M, "exact": exact, "proved_optimal": bool(proved),
                         "upper_bound": bound, "restarts": restarts, "steps": steps, "seed": seed})
