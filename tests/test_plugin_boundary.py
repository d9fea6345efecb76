"""Issue #56 (item 3): a call boundary per kind. A plugin member (from an outside distribution) that raises while it
runs fails in one line naming its entry point, its distribution and the call, of every kind: estimator, fusion
combine and search, meta-model fit and predict, metric, executor and model source. A command that does not name it
(``fuse --optimize``, ``eevee search`` with its default meta-model) succeeds beside it, naming the left-out fusion
methods as it names broken ones. Built-ins' own errors keep behaving as before."""

from __future__ import annotations

import json
import subprocess
import sys
import os
from pathlib import Path

import pytest

from modelseek.testing.cli import assert_one_error_line, run_cli_subprocess
from modelseek.testing.plugins import install_distribution, plugin_env

RAISING = '''
import numpy as np

from modelseek.retrieval.vision.sources import ModelSource
from modelseek.retrieval.fusion.methods import FusionMethod, ordered_sum
from modelseek.retrieval.metrics import Metric


def boom_score(features, labels):
    """Raises while it runs."""
    raise ValueError("boom in the estimator")


def _boom_combine(values, weights):
    raise RuntimeError("boom in combine")


def _combine(values, weights):
    return ordered_sum(np.where(np.isnan(values), 0.0, values))


def _boom_search(space):
    raise KeyError("boom in search")


BOOM_COMBINE = FusionMethod("boom_combine", "raises in combine", uses_scores=True, takes_weights=False,
                            combine=_boom_combine, search=lambda space: [(0, space.build("boom_combine", "min-max"))])
BOOM_SEARCH = FusionMethod("boom_search", "raises in search", uses_scores=True, takes_weights=False,
                           combine=_combine, search=_boom_search)


class BoomRegressor:
    """A regressor whose fit raises."""

    def fit(self, X, y):
        raise ZeroDivisionError("boom in fit")

    def predict(self, X):
        return X


class BoomPredict:
    """A regressor whose predict raises."""

    def fit(self, X, y):
        return self

    def predict(self, X):
        raise IndexError("boom in predict")


class BoomMetric(Metric):
    cutoff = "none"

    def per_list(self, ranking, j, k):
        raise ArithmeticError("boom in the metric")


class BoomExecutor:
    name, in_process, concurrency = "boom_exec", True, "serial"

    def run(self, units, on_start, on_done):
        raise OSError("boom in run")


class BoomSource(ModelSource):
    """Raises while building."""

    name, package, extra = "boom_source", "numpy", "none"

    def build(self, entry, spec):
        raise LookupError("boom in build")
'''

ENTRY_POINTS = {
    "modelseek.estimators": {"boom_score": "ms_raising:boom_score"},
    "modelseek.fusion": {"boom_combine": "ms_raising:BOOM_COMBINE", "boom_search": "ms_raising:BOOM_SEARCH"},
    "modelseek.meta_models": {"boom_fit": "ms_raising:BoomRegressor", "boom_predict": "ms_raising:BoomPredict"},
    "modelseek.metrics": {"boom_metric": "ms_raising:BoomMetric"},
    "modelseek.executors": {"boom_exec": "ms_raising:BoomExecutor"},
    "modelseek.sources": {"boom_source": "ms_raising:BoomSource"},
}

DIST = "'ms-raising'"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install_distribution(tmp_path_factory.mktemp("site"), "ms-raising", {"ms_raising": RAISING}, ENTRY_POINTS)


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    from modelseek.testing import make_ntcir_layout

    return make_ntcir_layout(tmp_path_factory.mktemp("ntcir"), n_tasks=6, n_models=4, seed=2)


@pytest.fixture(scope="module")
def runs(site, layout, tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("runs")
    a, b = out / "a.txt", out / "b.txt"
    for path, method in ((a, "random"), (b, "avgrank")):
        extra = ("--cv", "3") if method == "avgrank" else ()
        r = _cli(site, "rank", layout, "-m", method, *extra, "-o", path, "--show", "0")
        assert r.code == 0, r.err
    return a, b


def _cli(site: Path, *args):
    return run_cli_subprocess(*args, env=plugin_env(site))


def _named(r, call: str, name: str, raised: str) -> None:
    """One error line naming the member, its entry point, the distribution, the call and what it raised."""
    assert "Traceback" not in r.out
    assert_one_error_line(r, f"{name!r}", "'ms_raising:", DIST, f"{call} raised", raised)


@pytest.mark.slow(reason="four fresh interpreters (about 6 s)")
def test_a_fusion_method_raising_fails_in_one_line_and_the_optimiser_goes_on_without_it(site, layout, runs, tmp_path):
    a, b = runs
    _named(_cli(site, "fuse", a, b, "--method", "boom_combine", "-o", tmp_path / "f.txt"), "combine",
           "boom_combine", "RuntimeError: boom in combine")
    r = _cli(site, "fuse", a, b, "--optimize", "-g", layout / "ground-truth.csv", "--folds", "2", "--step", "0.5",
             "-o", tmp_path / "opt.txt", "--json")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    notes = " ".join(json.loads(r.out)["notes"])
    for name, call, raised in (("boom_combine", "combine", "boom in combine"),
                               ("boom_search", "search", "boom in search")):
        assert f"fusion method {name!r} of the entry point 'ms_raising:" in notes and f"{call} raised" in notes
        assert raised in notes
    assert (tmp_path / "opt.txt").read_text().count("\n") == 6 * 4  # every candidate of every topic, fused


@pytest.mark.slow(reason="three fresh interpreters, EEVEE searches (about 8 s)")
def test_a_meta_model_raising_fails_in_one_line_and_the_default_runs_beside_it(site, layout):
    search = ("eevee", "search", "--ground-truth", layout / "ground-truth.csv", "-k", "2", "--generations", "1",
              "--population", "5", "--workers", "1", "--json")
    _named(_cli(site, *search, "--meta-model", "boom_fit"), "fit", "boom_fit", "ZeroDivisionError: boom in fit")
    _named(_cli(site, *search, "--meta-model", "boom_predict"), "predict", "boom_predict",
           "IndexError: boom in predict")
    r = _cli(site, *search)
    assert r.code == 0 and "Traceback" not in r.err, r.err
    assert json.loads(r.out)["top"]


@pytest.mark.slow(reason="two fresh interpreters (about 3 s)")
def test_a_metric_raising_fails_in_one_line(site, layout, runs):
    a, _ = runs
    truth = layout / "ground-truth.csv"
    _named(_cli(site, "evaluate", a, "-g", truth, "--metrics", "ndcg@5,boom_metric"), "per_list", "boom_metric",
           "ArithmeticError: boom in the metric")
    r = _cli(site, "evaluate", a, "-g", truth, "--json")
    assert r.code == 0, r.err


def test_a_model_source_raising_fails_in_one_line(site):
    code = ("from modelseek.retrieval.vision.sources import get_source\n"
            "from modelseek.core.registry import PluginError\n"
            "try:\n    get_source('boom_source').build(None, None)\n"
            "except PluginError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **plugin_env(site)})
    line = out.stdout.strip()
    assert "\n" not in line and "model source 'boom_source' of the entry point 'ms_raising:BoomSource'" in line, \
        out.stderr
    assert DIST in line and "build raised LookupError" in line


@pytest.fixture(scope="module")
def task_and_pool(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("transformers")
    from modelseek.testing import make_text_task, write_task_table
    from modelseek.testing.tiny_models import write_tiny_pool

    root = tmp_path_factory.mktemp("boundary-task")
    table = write_task_table(make_text_task("t1", 3, 60, 20, 20, seed=1), root / "task.csv")
    return table, write_tiny_pool(root, hf_ids=[f"tiny/bert-{'x' * i}" for i in (1, 2, 3)])


@pytest.mark.slow(reason="two fresh interpreters that load torch and three tiny BERTs (about 8 s)")
def test_an_estimator_and_an_executor_raising_fail_in_one_line(site, task_and_pool, tmp_path):
    table, pool = task_and_pool
    r = _cli(site, "rank", table, "-m", "boom_score", "--pool", pool, "-o", tmp_path / "r.txt")
    _named(r, "the estimator function", "boom_score", "ValueError: boom in the estimator")
    assert "candidate(s) failed" not in r.err
    r = _cli(site, "rank", table, "-m", "logme", "--pool", pool, "--executor", "boom_exec", "-o", tmp_path / "e.txt")
    _named(r, "run", "boom_exec", "OSError: boom in run")


def test_a_built_in_raising_keeps_its_own_error():
    """The boundary changes nothing for a built-in: its error reaches the caller as it was raised."""
    import numpy as np

    from modelseek.retrieval.fusion.methods import FUSION_METHODS

    with pytest.raises(ZeroDivisionError), FUSION_METHODS.calling("rrf", "combine"):
        raise ZeroDivisionError("a built-in's own")
    from modelseek.core.errors import InputError
    import modelseek.retrieval.estimators as est

    with pytest.raises(InputError, match="finite"):
        est.info("hscore").fn(np.full((6, 2), np.nan), ["a", "b"] * 3)
