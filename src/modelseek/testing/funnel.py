"""A generated pool for the budgeted funnel (:func:`modelseek.select`): hundreds of candidates with a known
ground truth, simulated signals and simulated costs, so the funnel's real planning, state and selection code runs
at a scale no test machine could fine-tune.

Per model ``m``: a size (log-uniform parameters), a general quality ``q_m`` (bigger models somewhat better) and
per task ``t`` a task-specific fit ``a_tm``; the fine-tuned score is ``z_tm = 0.6 q_m + 0.8 a_tm`` and its F1
``0.55 + 0.05 z_tm``. The signals know it in different degrees:

* the inference-free **prior** knows only the general quality, noisily (``q_m + N(0, 0.5)``; corr. ~0.5);
* the frozen-feature **estimators** see the task-specific fit, noisily (``z_tm + N(0, 0.8)``; corr. ~0.8);
* **fine-tuning** gives validation F1 = test F1 + ``N(0, 0.003)``, and stops early after 40-100 % of its epochs.

Costs grow with size: load ``2 s + 0.02 s/M params``, features ``0.1 s/M params`` per 1,000 texts, fine-tuning
``1 s/M params`` per epoch per 1,000 texts. :class:`SimulatedBackend` serves one task of a world through the
funnel's backend interface, on a virtual clock that advances by those costs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..retrieval.data.pool import Candidate, Pool
from ..retrieval.data.task import Split, Task
from ..retrieval.data.truth import GroundTruth
from ..retrieval.funnel.costs import CostTable, ModelCost
from ..retrieval.funnel.plan import halving_rungs


@dataclass
class FunnelWorld:
    pool: Pool
    tasks: list[Task]
    f1: np.ndarray          # tasks x models, fine-tuned test F1 (the ground truth)
    val_f1: np.ndarray      # tasks x models, fine-tuned validation F1
    prior: np.ndarray       # tasks x models
    features: np.ndarray    # tasks x models
    early: np.ndarray       # tasks x models, the fraction of its epochs a fine-tuning runs
    costs: dict[str, ModelCost]

    def correlations(self) -> dict[str, float]:
        """Mean per-task Pearson correlation of each signal with the ground truth."""
        def mean_corr(x):
            return float(np.mean([np.corrcoef(x[t], self.f1[t])[0, 1] for t in range(len(self.tasks))]))
        return {"prior": mean_corr(self.prior), "features": mean_corr(self.features),
                "finetune": mean_corr(self.val_f1)}

    def truth(self):
        import pandas as pd  # lazy: pandas


        rows = [(t.id, c.id, float(self.f1[i, j])) for i, t in enumerate(self.tasks) for j, c in enumerate(self.pool)]
        return GroundTruth(pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]))


def make_funnel_world(n_models: int = 200, n_tasks: int = 20, n_texts: int = 2000, seed: int = 0) -> FunnelWorld:
    """A world of ``n_models`` candidates and ``n_tasks`` tasks of ``n_texts`` texts (train + validation)."""
    rng = np.random.default_rng(seed)
    params = np.exp(rng.uniform(np.log(5), np.log(600), n_models))
    size = (np.log(params) - np.log(params).mean()) / np.log(params).std()
    q = 0.45 * size + np.sqrt(1 - 0.45 ** 2) * rng.standard_normal(n_models)
    a = rng.standard_normal((n_tasks, n_models))
    z = 0.6 * q[None, :] + 0.8 * a
    f1 = np.clip(0.55 + 0.05 * z, 0.05, 0.99)
    val = np.clip(f1 + 0.003 * rng.standard_normal(f1.shape), 0.0, 1.0)
    prior = np.repeat((q + 0.5 * rng.standard_normal(n_models))[None, :], n_tasks, axis=0)
    feats = z + 0.8 * rng.standard_normal(z.shape)
    early = rng.uniform(0.4, 1.0, z.shape)
    ids = [f"sim/model-{j:03d}" for j in range(n_models)]
    pool = Pool([Candidate(id=i, hf_id=i, params_m=float(round(p, 1))) for i, p in zip(ids, params)], name="sim")
    n_val = max(2, n_texts // 5)
    tasks = []
    for t in range(n_tasks):
        texts = tuple(f"t{t} text {i}" for i in range(n_texts))
        labels = tuple(str(i % 2) for i in range(n_texts))
        tasks.append(Task(id=f"sim-{t:02d}", train=Split(texts[n_val:], labels[n_val:]),
                          val=Split(texts[:n_val], labels[:n_val])))
    costs = {i: ModelCost(load_s=2.0 + 0.02 * p, feature_s_per_1k=0.1 * p, finetune_s_per_epoch_1k=1.0 * p)
             for i, p in zip(ids, params)}
    return FunnelWorld(pool, tasks, f1, val, prior, feats, early, costs)


class SimulatedBackend:
    """One task of a :class:`FunnelWorld` behind the funnel's backend interface (a virtual clock)."""

    def __init__(self, world: FunnelWorld, task_index: int) -> None:
        self.w, self.t = world, task_index
        self.now = 0.0
        self.col = {c.id: j for j, c in enumerate(world.pool)}
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def clock(self) -> float:
        return self.now

    def _n(self, task: Task) -> int:
        return len(task.train.texts) + len(task.val.texts)

    def prior(self, task: Task, pool: Pool) -> dict[str, float]:
        self.calls.append(("prior", ()))
        self.now += 0.01 * len(pool)  # inference-free: a card lookup per candidate
        return {c.id: float(self.w.prior[self.t, self.col[c.id]]) for c in pool}

    def features(self, task: Task, cands: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, str]]:
        self.calls.append(("features", tuple(c.id for c in cands)))
        self.now += sum(self.w.costs[c.id].features(self._n(task)) for c in cands)
        return {c.id: float(self.w.features[self.t, self.col[c.id]]) for c in cands}, {}

    def _row(self, cid: str, epochs: int) -> dict[str, Any]:
        j = self.col[cid]
        return {"model_id": cid, "val_f1": float(self.w.val_f1[self.t, j]), "f1": float(self.w.f1[self.t, j]),
                "epochs": epochs, "status": "done", "error": None}

    def finetune(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        self.calls.append(("finetune", tuple(c.id for c in cands)))
        rows = []
        for c in cands:
            ran = max(1, int(round(epochs * self.w.early[self.t, self.col[c.id]])))  # noqa: RUF046 - numpy<2: a float
            self.now += self.w.costs[c.id].finetune(self._n(task), ran)
            rows.append(self._row(c.id, ran))
        return rows

    def halving(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        self.calls.append(("halving", tuple(c.id for c in cands)))
        alive = list(cands)
        rows: dict[str, dict] = {}
        for r, (n, e) in enumerate(halving_rungs(len(cands), epochs), start=1):
            alive = alive[:n]
            for c in alive:
                self.now += self.w.costs[c.id].finetune(self._n(task), e)
                rows[c.id] = {**self._row(c.id, e), "rung": r}
            alive.sort(key=lambda c: -self.w.val_f1[self.t, self.col[c.id]])
        return list(rows.values())

    def costs(self, task: Task, progress: bool) -> CostTable:
        return CostTable(self.w.costs)


def world_digest(world: FunnelWorld) -> str:
    """A hash of a world's numbers (same seed, same world)."""
    h = hashlib.sha256()
    for a in (world.f1, world.prior, world.features):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def make_family_truth(n_tasks: int = 40, n_models: int = 10, lead: float = 0.05, seed: int = 0):
    """A complete task x model ground truth where candidates co-vary by family, the structure a joint model of
    the candidates can use (:mod:`modelseek.retrieval.funnel.replay`'s sequential order): two families of ``n_models /
    2``;
    on each task one family (which one, at random) is ``2 * lead`` above the other, the task's level is uniform in
    [0.5, 0.9], quality rises by 0.004 with the model's index, and each score has N(0, 0.005) noise. The average
    rank cannot know which family leads; one fine-tuned candidate tells it."""
    import pandas as pd  # lazy: pandas

    rng = np.random.default_rng(seed)
    half = n_models // 2
    rows = []
    for t in range(n_tasks):
        sign, level = (1 if rng.random() < 0.5 else -1), rng.uniform(0.5, 0.9)
        rows += [(f"t{t}", f"m{j}", level + lead * sign * (1 if j < half else -1) + 0.004 * j
                  + rng.normal(0, 0.005)) for j in range(n_models)]
    return GroundTruth(pd.DataFrame(rows, columns=["task_id", "model_id", "f1"]), source="generated families")



class _FlatCosts:
    """Every candidate's fine-tuning costs ``finetune_s`` whatever its epochs; frozen features cost more than any
    budget (the funnel then walks the prior alone, as replay's prior policy does)."""

    def __init__(self, finetune_s: float) -> None:
        self.finetune_s = float(finetune_s)

    def cost(self, candidate: Candidate) -> ModelCost:
        return ModelCost(load_s=self.finetune_s, feature_s_per_1k=1e12, finetune_s_per_epoch_1k=0.0)


class RecordedBackend:
    """One task of a recorded ground truth behind the funnel's backend interface (a virtual clock): fine-tuning a
    candidate reveals its recorded score (as validation and test F1, as ``replay`` reveals it without noise) and
    takes ``finetune_s`` seconds, so a budget of ``k * finetune_s`` (plus less than one more) fine-tunes exactly the
    first ``k`` of the order walked. The prior is the policy's (``select`` asks the backend only for a pool the
    policy does not cover: an error here)."""

    def __init__(self, truth: GroundTruth, task_id: str, finetune_s: float = 60.0) -> None:
        self.f1 = {str(m): float(v) for m, v in truth.f1(task_id).items()}
        self.finetune_s = float(finetune_s)
        self.now = 0.0
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def clock(self) -> float:
        return self.now

    def prior(self, task: Task, pool: Pool) -> dict[str, float]:
        raise AssertionError("the recorded backend has no prior of its own: walk a policy that covers the pool")

    def features(self, task: Task, cands: Sequence[Candidate]) -> tuple[dict[str, float], dict[str, str]]:
        raise AssertionError("the recorded backend has no frozen features (they cost more than any budget)")

    def finetune(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        self.calls.append(("finetune", tuple(c.id for c in cands)))
        self.now += self.finetune_s * len(cands)
        return [{"model_id": c.id, "val_f1": self.f1[c.id], "f1": self.f1[c.id], "epochs": epochs, "status": "done",
                 "error": None} for c in cands]

    def halving(self, task: Task, cands: Sequence[Candidate], epochs: int) -> list[dict[str, Any]]:
        raise AssertionError("the recorded backend replays plain fine-tuning only")

    def costs(self, task: Task, progress: bool) -> _FlatCosts:
        return _FlatCosts(self.finetune_s)


def recorded_task(task_id: str) -> Task:
    """A stand-in task of a recorded ground truth: two texts per split (``select`` reads no text of it with a
    :class:`RecordedBackend`)."""
    two = Split(("a text", "another text"), ("a", "b"))
    return Task(id=task_id, train=two, val=two, test=two)
