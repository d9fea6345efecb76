"""``ltr`` — gradient-boosted LambdaRank (LightGBM) over task x candidate features; optionally fused with
inference-based estimator scores.

One row per (task, candidate); one query group per task; labels are the official NTCIR graded relevance
(0..3, from normalized F1) with the official gains 2^rel - 1 as ``label_gain``, so the objective optimises
the nDCG the benchmark reports. Features:

* task meta-features (:data:`modelseek.retrieval.taskrep.META_FEATURES`);
* ``candidate`` — the candidate's index (categorical: lets trees learn per-model priors and their
  interactions with task properties);
* ``prior`` — the candidate's mean normalized F1 on the training tasks;
* ``knn`` — the :mod:`task_knn <modelseek.retrieval.rankers.task_knn>` prediction for the candidate;
* ``card_sim``, ``label_card_sim`` — cosine of the task's mean text / mean label-name embedding with the
  candidate's model card, z-scored over the pool;
* ``est:<name>`` — for each estimator run given in ``estimator_runs`` (TREC run files whose scores come from
  an inference-based estimator such as LogME), the candidate's score z-scored within the task; a task the run
  lacks gets missing values (LightGBM routes them). This is the fusion of inference-free and
  inference-based ranking.

``prior`` and ``knn`` of a training task are computed leave-one-task-out, so that no training row sees its
own target.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.pool import Pool
from ..data.run import Run, read_run
from ..data.task import Task
from ..data.truth import GradingScheme
from ..taskrep import META_FEATURES, TaskRep
from ._learned import LearnedRanker
from ...core.kinds import register
from .task_knn import knn_predict, task_vector


def _z(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


@register("ranker")
class LTRRanker(LearnedRanker):
    name = "ltr"

    def __init__(self, n_estimators: int = 300, learning_rate: float = 0.03, num_leaves: int = 7,
                 min_child_samples: int = 20, knn_k: int = 10, knn_temperature: float = 0.05,
                 estimator_runs: dict | None = None, pool: str = "ntcir19", encoder: str = "minilm",
                 max_texts: int = 256, cache_dir: str | None = "auto", seed: int = 0) -> None:
        super().__init__(encoder, max_texts, cache_dir, seed)
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.knn_k = knn_k
        self.knn_temperature = knn_temperature
        self.estimator_runs = estimator_runs
        self.pool = pool

    # ------------------------------------------------------------------------------------------ features
    @property
    def feature_names(self) -> list[str]:
        est = [f"est:{n}" for n in sorted(self.estimator_runs or {})]
        return [*META_FEATURES, "candidate", "prior", "knn", "card_sim", "label_card_sim", *est]

    def _estimators(self) -> dict[str, Any]:
        if getattr(self, "_est_runs", None) is None:
            self._est_runs = {n: (r if isinstance(r, Run) else read_run(r))
                              for n, r in sorted((self.estimator_runs or {}).items())}
        return self._est_runs

    def _rows(self, task_id: str, rep: TaskRep, pool: Pool, idx: np.ndarray, prior: np.ndarray,
              knn: np.ndarray) -> np.ndarray:
        cards = self.card_embeddings(pool)
        q = rep.mean / max(float(np.linalg.norm(rep.mean)), 1e-12)
        lab = rep.label_emb.mean(axis=0)
        lab = lab / max(float(np.linalg.norm(lab)), 1e-12)
        cols = [np.repeat(rep.meta[None, :], len(idx), axis=0), idx[:, None].astype(float), prior[idx, None],
                knn[idx, None], _z(cards @ q)[:, None], _z(cards @ lab)[:, None]]
        for run in self._estimators().values():
            if task_id in run:
                s = run.scores(task_id)
                v = np.array([s.get(c.id, np.nan) for c in pool], float)
                ok = np.isfinite(v)
                if ok.sum() > 1:
                    v[ok] = _z(v[ok])
            else:
                v = np.full(len(idx), np.nan)
            cols.append(v[:, None])
        return np.hstack(cols)

    # ------------------------------------------------------------------------------------------ fit/rank
    def _params(self) -> dict[str, Any]:
        return dict(objective="lambdarank", n_estimators=int(self.n_estimators),
                    learning_rate=float(self.learning_rate), num_leaves=int(self.num_leaves),
                    min_child_samples=int(self.min_child_samples),
                    label_gain=[GradingScheme.NTCIR.gain(g) for g in range(GradingScheme.NTCIR.max_grade + 1)],
                    lambdarank_truncation_level=10, subsample=0.8, subsample_freq=1, colsample_bytree=0.8,
                    random_state=int(self.seed), deterministic=True, force_row_wise=True, n_jobs=1, verbose=-1)

    def _fit(self, tasks, reps, y, progress) -> None:
        import lightgbm as lgb  # lazy: lightgbm

        pool = self._cards_pool("the model cards")
        idx = np.arange(len(self.model_ids_))
        self.keys_ = np.stack([task_vector(r, "mean") for r in reps])
        self.targets_ = y
        n = len(reps)
        xs, labels = [], []
        for i, (t, r) in enumerate(zip(tasks, reps)):
            others = np.arange(n) != i
            prior = y[others].mean(axis=0)
            knn = knn_predict(self.keys_[i], self.keys_[others], y[others], int(self.knn_k),
                              float(self.knn_temperature))
            xs.append(self._rows(t.id, r, pool, idx, prior, knn))
            labels.append([GradingScheme.NTCIR.grade(v) for v in y[i]])
        model = lgb.LGBMRanker(**self._params())
        model.fit(np.vstack(xs), np.concatenate(labels), group=[len(idx)] * n,
                  feature_name=[f.replace(":", "_") for f in self.feature_names],
                  categorical_feature=[self.feature_names.index("candidate")])
        self.booster_ = model.booster_

    def _scores(self, task: Task, rep: TaskRep, pool: Pool, idx: np.ndarray) -> np.ndarray:
        prior = self.targets_.mean(axis=0)
        knn = knn_predict(task_vector(rep, "mean"), self.keys_, self.targets_, int(self.knn_k),
                          float(self.knn_temperature))
        x = self._rows(task.id, rep, pool, idx, prior, knn)
        return np.asarray(self.booster_.predict(x, num_threads=1))

    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return ({"keys": self.keys_.astype(np.float32), "targets": self.targets_.astype(np.float32)},
                {"booster": self.booster_.model_to_string()})

    def _set_state(self, arrays, extra) -> None:
        import lightgbm as lgb  # lazy: lightgbm

        self.keys_, self.targets_ = arrays["keys"].astype(np.float64), arrays["targets"].astype(np.float64)
        self.booster_ = lgb.Booster(model_str=extra["booster"])
