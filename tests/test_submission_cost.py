"""The submission's up-front cost estimate (issue #55): the probe's figures scaled to every run, and the cheap
alternative named for a long one. (How close the estimate comes on a real run: benchmarks/bench_submission.py.)"""

from __future__ import annotations

import pytest

from modelseek.retrieval.data.task import Split, Task
from modelseek.retrieval.submission_cost import LONG_S, Probe, advice, estimate


def _task(tid: str, n: int, classes: int) -> Task:
    labels = [f"c{i % classes}" for i in range(n)]
    return Task(tid, train=Split(tuple(f"text {i}" for i in range(n)), tuple(labels)))


def _probe(workers: int = 1) -> Probe:
    return Probe("1", "a", texts=10, classes=2, workers=workers, load_s=2.0, forward_s=1.0, read_s=0.01, job_s=0.05,
                 estimator_s={"logme": 0.1, "knn": 0.2}, method_s={"default": (3.0, 0.5), "avgrank": (0.0, 0.001)})


def test_the_first_feature_run_pays_the_forward_passes_the_later_ones_read_the_cache():
    tasks = [_task("a", 10, 2), _task("b", 40, 8)]
    methods = ["default", "avgrank", "logme", "knn", "rrf"]
    est = estimate(_probe(), methods, {"logme": ["logme"], "knn": ["knn"], "rrf": ["logme", "knn"]},
                   {m: tasks for m in methods}, n_candidates=20)
    assert est["default"] == pytest.approx(0.5 * 2) and est["avgrank"] == pytest.approx(0.002)  # set-up was the probe's
    # logme: (job + load + forward over 50 texts / 10 + logme on a (1x, 1x) and a (4x texts, 4x classes) task) x 20
    logme = 0.05 + 2.0 + 1.0 * 50 / 10 + 0.1 * (1 + (4 + 4) / 2)
    assert est["logme"] == pytest.approx(20 * logme)
    knn = 0.05 + 0.01 * 2 + 0.2 * (1 + 4 ** 1.5)  # no load, no forward pass: the features are in the cache
    assert est["knn"] == pytest.approx(20 * knn)
    assert est["rrf"] == pytest.approx(20 * (knn + 0.1 * (1 + 4)))
    halved = estimate(_probe(workers=2), ["logme"], {"logme": ["logme"]}, {"logme": tasks}, n_candidates=20)
    assert halved["logme"] == pytest.approx(est["logme"] / 2)  # the candidates on two threads


def test_a_long_run_names_the_cheap_alternative():
    assert advice("logme", LONG_S - 1, 20, 47, ["default", "avgrank"]) is None
    line = advice("logme", 1500.0, 20, 47, ["default", "avgrank"])
    assert line == ("logme: about 25m (20 candidates x 47 tasks on this machine); a GPU (--device cuda) shortens it; "
                    "the inference-free run(s) default and avgrank take seconds (--methods default avgrank)")
