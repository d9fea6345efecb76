"""A throwaway member of each pluggable kind, written here and nowhere else, works end to end.

Each is registered by a fixture (and removed after the test): a ranker that learns each model's mean
normalised F1 (persistable through the one mixin), a fusion method that takes the best normalised score, an
estimator (Fisher's between/within-class ratio), and a meta-model that delegates to ridge and counts its calls.
Nothing in ``src/`` names them: registering is all they take.
"""

from __future__ import annotations

import json
from numbers import Real
from typing import Any, ClassVar

import numpy as np
import pytest

import modelseek as ms
from modelseek.core.config import Interval
from modelseek.retrieval.data.pool import Pool
from modelseek.retrieval.data.task import Task, TaskSet
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek import register
from modelseek.retrieval.rankers import RANKERS
from modelseek.retrieval.rankers._artifact import Persistable
from modelseek.retrieval.rankers.base import Constraints, Trained


# ------------------------------------------------------------------------------------------ a ranker
class MyTestRanker(Persistable):
    """Score = (1 - shrink) x the model's mean normalised F1 on the training tasks + shrink x 0.5."""

    name = "my-test-ranker"
    _parameter_constraints: ClassVar[Constraints] = {"shrink": [Interval(Real, 0, 1, closed="both")]}

    def __init__(self, shrink: float = 0.0) -> None:
        self.shrink = shrink

    def _learn(self, tasks: TaskSet | None, truth: GroundTruth, *, pool: Pool | None, progress: bool) -> None:
        y = truth.matrix("normalized_f1")
        self.trained_ = Trained.from_truth([str(m) for m in y.columns], pool)
        self.fitted_task_ids_ = list(truth.task_ids)
        self.prior_ = y.mean(axis=0).to_numpy(float)

    def rank(self, task: Task, pool: Pool) -> dict[str, float]:
        self._check_fitted()
        idx = self.trained_.index(pool, self.name, self.artifact_)
        return {c.id: (1 - self.shrink) * float(self.prior_[j]) + self.shrink * 0.5 for c, j in zip(pool, idx)}

    def _state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        return {"prior": self.prior_}, {}

    def _set_state(self, arrays: dict[str, np.ndarray], extra: dict[str, Any]) -> None:
        self.prior_ = arrays["prior"]


@pytest.fixture
def my_ranker():
    register("ranker", MyTestRanker)
    yield MyTestRanker
    RANKERS.unregister(MyTestRanker.name)


@pytest.fixture(scope="module")
def layout(tmp_path_factory):
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path_factory.mktemp("ntcir"), n_tasks=8, n_models=5, seed=0, n_train=30)


def test_throwaway_ranker_through_the_api_and_the_cli(my_ranker, layout, cli, tmp_path):
    from modelseek.retrieval.data.loaders import load_ntcir_tasks
    from modelseek.retrieval.data.pool import load_pool

    tasks, truth, pool = load_ntcir_tasks(layout), GroundTruth.from_csv(layout / "ground-truth.csv"), \
        load_pool(layout / "models.csv")
    want = truth.matrix("normalized_f1").mean(axis=0)
    run = ms.rank(list(tasks), pool, method="my-test-ranker", train_truth=truth, shrink=0.5)
    assert run.run_id == "my-test-ranker" and list(run) == [t.id for t in tasks]
    got = run.scores(tasks[0].id)
    assert got == pytest.approx({str(m): 0.5 * want[m] + 0.25 for m in want.index})
    with pytest.raises(InputError, match=r"field 'shrink': shrink must be a number in \[0, 1\], got 2"):
        ms.rank(list(tasks), pool, method="my-test-ranker", train_truth=truth, shrink=2)
    with pytest.raises(InputError, match=r"has no parameter 'shrnk'\. Did you mean 'shrink'\?"):
        ms.rank(list(tasks), pool, method="my-test-ranker", train_truth=truth, shrnk=0.1)
    # the CLI: rank with it, train an artifact, rank from the artifact (the one mixin's save/load)
    gt = layout / "ground-truth.csv"
    r = cli("rank", layout, "-m", "my-test-ranker", "--train-truth", gt, "--param", "shrink=0.5", "--json")
    assert r.code == 0, r.err
    cli_scores = {e["doc"]: e["score"] for e in json.loads(r.out)["my-test-ranker"][tasks[0].id]}
    assert cli_scores == pytest.approx(got)
    art = tmp_path / "mine.json"
    r = cli("train-ranker", layout, "-m", "my-test-ranker", "-p", "shrink=0.5", "-o", art)
    assert r.code == 0, r.err
    assert json.loads(art.read_text())["params"] == {"shrink": 0.5}
    r = cli("rank", layout, "-m", str(art), "--json")
    assert r.code == 0, r.err
    assert {e["doc"]: e["score"] for e in json.loads(r.out)["my-test-ranker"][tasks[0].id]} == pytest.approx(got)
    assert "explanations" not in json.loads(r.out)  # explain's default: nothing beyond the scores


# ------------------------------------------------------------------------------------------ a fusion method
@pytest.fixture
def my_fusion():
    from modelseek.retrieval.fusion.methods import FUSION_METHODS, FusionMethod

    def combine(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return np.where(np.isnan(values), -np.inf, values).max(axis=0)

    def search(space):
        return [(0, space.build("my-test-max", n)) for n in space.norms]

    m = register("fusion method", FusionMethod("my-test-max", "the best normalised score", uses_scores=True,
                                                takes_weights=False, combine=combine, search=search))
    yield m
    FUSION_METHODS.unregister("my-test-max")


def _runs():
    from modelseek.retrieval.data.run import Run

    topics = [f"t{i}" for i in range(8)]
    rng = np.random.default_rng(0)
    a = Run.from_scores({t: {f"{d}": float(rng.random()) for d in range(1, 6)} for t in topics}, "a")
    b = Run.from_scores({t: {f"{d}": float(rng.random()) for d in range(1, 6)} for t in topics}, "b")
    return a, b


def test_throwaway_fusion_method_is_fused_searched_and_offered_by_the_cli(my_fusion, cli, tmp_path):
    from modelseek.retrieval.data.run import write_runs
    from modelseek.retrieval.fusion import candidate_fusions, optimize_fusion

    a, b = _runs()
    fused = ms.fuse([a, b], method="my-test-max", norm="none")
    for t in a:
        want = {d: max(a.scores(t)[d], b.scores(t)[d]) for d in a.scores(t)}
        assert fused.scores(t) == pytest.approx(want)
    grid = candidate_fusions(["a", "b"], step=0.5)
    assert [g.norm.value for g in grid if g.method is my_fusion] == ["min-max", "zmuv", "rank", "sum"]
    # the optimiser searches it: the ground truth is the best raw score, which max under 'none' reproduces
    rows = ["task_id,model_id,f1"] + [f"{t},{d},{max(a.scores(t)[d], b.scores(t)[d]):.6f}" for t in a
                                      for d in a.scores(t)]
    (tmp_path / "gt.csv").write_text("\n".join(rows) + "\n")
    truth = GroundTruth.from_csv(tmp_path / "gt.csv")
    learned = optimize_fusion([a, b], truth, folds=None, methods=["my-test-max"], norms=["none", "min-max"],
                              selection="best")
    assert learned.fusion.method is my_fusion and learned.train_score == pytest.approx(1.0)
    write_runs(tmp_path / "a.run", [a])
    write_runs(tmp_path / "b.run", [b])
    r = cli("fuse", tmp_path / "a.run", tmp_path / "b.run", "--method", "my-test-max", "--norm", "none",
            "-o", tmp_path / "out.run")
    assert r.code == 0, r.err
    out = ms.read_run(tmp_path / "out.run")  # a run file holds 6 decimals
    assert out.run_id == "fused-my-test-max" and out.scores("t0") == pytest.approx(fused.scores("t0"), abs=1e-6)


# ------------------------------------------------------------------------------------------ an estimator
def fisher_ratio(features, labels) -> float:
    """Between-class over within-class variance, summed over the feature dimensions (a throwaway)."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels)
    mu = x.mean(axis=0)
    between = sum((y == c).sum() * ((x[y == c].mean(axis=0) - mu) ** 2).sum() for c in np.unique(y))
    within = sum(((x[y == c] - x[y == c].mean(axis=0)) ** 2).sum() for c in np.unique(y))
    return float(between / max(within, 1e-12))


@pytest.fixture
def my_estimator():
    from modelseek.retrieval.estimators import ESTIMATORS

    register("estimator", fisher_ratio, name="my_test_fisher")
    yield fisher_ratio
    ESTIMATORS.unregister("my_test_fisher")


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_throwaway_estimator_ranks_through_the_api(my_estimator, tmp_path):
    pytest.importorskip("transformers")
    from modelseek.retrieval.data.pool import Candidate
    from modelseek.retrieval.features import extract_features
    from modelseek.testing import make_text_task
    from modelseek.testing.tiny_models import make_tiny_bert

    assert "my_test_fisher" in ms.retrieval.rankers.names()
    task = make_text_task("t1", n_train=40, n_val=20, n_classes=3, seed=0)
    bert = make_tiny_bert(tmp_path / "bert")
    pool = Pool([Candidate(id="1", path=str(bert)),
                 Candidate(id="2", path=str(bert), options={"pooling": "cls"})], name="tiny")
    run = ms.rank(task, pool, method="my_test_fisher", cache_dir=tmp_path / "cache")
    assert run.run_id == "my_test_fisher"
    texts = list(task.train.texts) + list(task.val.texts)
    labels = list(task.train.labels) + list(task.val.labels)
    for cand in pool:
        feats = extract_features(texts, cand, cache_dir=False, progress=False,
                                 **{k: v for k, v in cand.options.items() if k == "pooling"})
        assert run.scores(task.id)[cand.id] == pytest.approx(fisher_ratio(feats, labels), rel=1e-6)


# ------------------------------------------------------------------------------------------ a meta-model
@pytest.fixture
def my_meta_model():
    pytest.importorskip("torch")
    from modelseek.eevee.kernels import ridge_block
    from modelseek.eevee.meta_models.ridge import RidgeParams
    from modelseek.eevee.models import META_MODELS, MetaModel

    calls: list[int] = []

    def counted_ridge(d, cfg, cand, split, idx, mask, fan, return_pred=False):
        calls.append(len(cand))
        return ridge_block(d, cfg, cand, split, idx, mask, fan, return_pred)

    register("meta-model", MetaModel("my-test-ridge", "ridge, counting its calls (a throwaway)", seeded=False,
                                     parallel=False, fit=counted_ridge, params=RidgeParams))  # the kernel's parameters
    yield calls
    META_MODELS.unregister("my-test-ridge")


def test_throwaway_meta_model_is_used_by_eevee(my_meta_model, cli, tmp_path):
    rng = np.random.default_rng(1)
    q = rng.normal(size=10)
    vals = np.stack([q + 0.1 * rng.normal(size=10), q ** 2, -0.5 * q, rng.normal(size=10)], axis=1)
    lines = ["Model,b1,b2,b3,b4", "Metric,acc,acc,acc,acc"]
    lines += [f"model{i}," + ",".join(repr(float(v)) for v in row) for i, row in enumerate(vals)]
    table = tmp_path / "gate.csv"
    table.write_text("\n".join(lines) + "\n")
    tiny = ("--population", "6", "--keep", "3", "--children", "2", "--generations", "1", "--workers", "1")
    r = cli("eevee", "search", "--help")
    assert "my-test-ridge" in r.out
    mine = cli("eevee", "search", "--table", table, "-k", "2", *tiny, "--json", "--meta-model", "my-test-ridge")
    assert mine.code == 0, mine.err
    assert sum(my_meta_model) > 0  # eevee fitted its networks with the throwaway's kernel
    ridge = cli("eevee", "search", "--table", table, "-k", "2", *tiny, "--json", "--meta-model", "ridge")
    assert json.loads(mine.out)["top"] == json.loads(ridge.out)["top"]
