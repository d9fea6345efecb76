"""A generated model zoo whose truth is known, for testing and benchmarking fusion.

Every model has a general quality ``q_m`` and every (task, model) pair a task-specific fit ``u_tm``; the true
score (the ground truth's f1 column) is ``clip(0.85 + 0.04 q_m + 0.04 u_tm, 0.01, 1)``. Three runs, as a
practitioner would have them:

* ``prior``  -- what a model did on the *other* tasks (its mean true score elsewhere, plus noise): knows
  ``q_m``, blind to ``u_tm`` (like ``rank --method avgrank --train-truth``);
* ``est_a``  -- an estimator that sees ``u_tm`` well but ``q_m`` weakly, scores on a LogME-like scale
  (negative, a task-dependent offset);
* ``est_b``  -- another estimator with its own noise, on a 0..100 scale, and failing (absent) on a few
  candidates.

Every task also has a generated size (training rows, log-uniform in 50..5000; :func:`zoo_task_features`). With
``size_noise=True`` (generated, not measured: a stand-in for an estimator that needs data) ``est_a``'s noise
at task ``t`` is ``est_a_noise * sqrt(median size / size_t)`` -- proportional to ``1 / sqrt(size)``, the
median task as noisy as without it -- so the best balance of ``prior`` and ``est_a`` depends on the task
size; otherwise the sizes carry no information about any run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..retrieval.data.run import Run
from ..retrieval.data.truth import GroundTruth


def zoo_task_features(n_tasks: int = 60, seed: int = 0) -> dict[str, dict[str, float]]:
    """``{"size": {task: rows}}`` of the zoo's tasks (generated, log-uniform in 50..5000; its own seeded stream,
    so the zoo's scores are the same whether or not they depend on the sizes)."""
    rng = np.random.default_rng([seed, 7])
    sizes = np.round(np.exp(rng.uniform(np.log(50), np.log(5000), size=n_tasks)))
    return {"size": {f"t{i:03d}": float(n) for i, n in enumerate(sizes, start=1)}}


def make_fusion_zoo(n_tasks: int = 60, n_models: int = 20, seed: int = 0, prior_noise: float = 0.3,
                    est_a_noise: float = 0.8, est_b_noise: float = 1.0, fail_rate: float = 0.03,
                    hf_ids: bool = False, size_noise: bool = False) -> tuple[GroundTruth, dict[str, Run]]:
    """(ground truth, {run id: run}) over ``n_tasks`` tasks ``t001...`` and ``n_models`` models; with
    ``size_noise`` ``est_a``'s noise follows ``1 / sqrt`` of the task size (see the module docstring)."""
    import pandas as pd  # lazy: pandas

    rng = np.random.default_rng(seed)
    tasks = [f"t{i:03d}" for i in range(1, n_tasks + 1)]
    models = [f"org/model-{j}" if hf_ids else str(j) for j in range(1, n_models + 1)]
    q = rng.normal(size=n_models)
    u = rng.normal(size=(n_tasks, n_models))
    true = np.clip(0.85 + 0.04 * q[None, :] + 0.04 * u, 0.01, 1.0)
    truth = GroundTruth(pd.DataFrame([(t, m, float(true[i, j])) for i, t in enumerate(tasks)
                                      for j, m in enumerate(models)], columns=["task_id", "model_id", "f1"]))
    others = (true.sum(axis=0, keepdims=True) - true) / max(n_tasks - 1, 1)
    prior = others + prior_noise * 0.04 * rng.normal(size=true.shape)
    noise_a = np.full((n_tasks, 1), est_a_noise)
    if size_noise:
        size = np.array(list(zoo_task_features(n_tasks, seed)["size"].values()))
        noise_a = est_a_noise * np.sqrt(np.median(size) / size)[:, None]
    est_a = (-50.0 + 10.0 * rng.normal(size=(n_tasks, 1))
             + (0.3 * q[None, :] + u + noise_a * rng.normal(size=true.shape)))
    est_b = 50.0 + 10.0 * (0.6 * q[None, :] + 0.6 * u + est_b_noise * rng.normal(size=true.shape))
    failed = rng.random(size=true.shape) < fail_rate

    def run(matrix: np.ndarray, name: str, mask: np.ndarray | None = None) -> Run:
        return Run.from_scores({t: {m: float(matrix[i, j]) for j, m in enumerate(models)
                                    if mask is None or not mask[i, j]} for i, t in enumerate(tasks)}, name)

    return truth, {"prior": run(prior, "prior"), "est_a": run(est_a, "est_a"), "est_b": run(est_b, "est_b", failed)}


def write_fusion_zoo(folder: str | Path, **zoo) -> tuple[GroundTruth, dict[str, Run], dict[str, Path], Path]:
    """:func:`make_fusion_zoo` (``zoo``: its arguments) written to ``folder``: one TREC file per run
    (``NAME.txt``) and the ground truth (``gt.csv``). Returns (truth, runs, run paths by name, truth path)."""
    folder = Path(folder)
    truth, runs = make_fusion_zoo(**zoo)
    paths = {}
    for name, run in runs.items():
        paths[name] = folder / f"{name}.txt"
        run.write(paths[name])
    gt = folder / "gt.csv"
    truth.to_csv(gt)
    return truth, runs, paths, gt
