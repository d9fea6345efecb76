"""A broken fusion plugin fails alone (#45 item 2): ``fuse --optimize`` searches every usable method (the built-ins
and each plugin that loads) and names, in one note, the plugin members it left out; naming a broken member is a
one-line error naming its distribution. The same for a whole-registry listing of estimators (the regression
estimators a refusal names). The outside distribution is a folder of files on PYTHONPATH (a module and its
``dist-info``), run in fresh interpreters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import modelseek as ms
from modelseek.retrieval.data.run import read_run, write_runs
from modelseek.retrieval.fusion.learned import optimize_fusion
from modelseek.testing import make_ntcir_layout
from modelseek.testing.cli import assert_one_error_line, message_lines, run_cli_subprocess
from modelseek.testing.plugins import install_distribution, plugin_env

PLUGIN = '''
import numpy as np

from modelseek.retrieval.fusion.methods import FusionMethod, ordered_sum


def _max(values, weights):
    return np.nanmax(np.where(np.isnan(values), -np.inf, values), axis=0)


def _search(space):
    return [(0, space.build("maxfuse", n)) for n in space.norms]


#: a working plugin: searched by --optimize like a built-in
MAXFUSE = FusionMethod("maxfuse", "the best normalised score", uses_scores=True, takes_weights=False,
                       combine=_max, search=_search)
#: named as the built-in rrf: the plugin is the broken member, the built-in stays
RRF = FusionMethod("rrf", "a second rrf", uses_scores=True, takes_weights=False,
                   combine=lambda values, weights: ordered_sum(np.nan_to_num(values)), search=lambda space: [])
'''

ENTRY_POINTS = """[modelseek.fusion]
maxfuse = ms_fbad:MAXFUSE
rrf = ms_fbad:RRF
broken_fusion = ms_fbad_missing:THING

[modelseek.estimators]
broken_estimator = ms_fbad_missing:score
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return install_distribution(tmp_path_factory.mktemp("fbad-site"), "ms-fbad", {"ms_fbad": PLUGIN}, ENTRY_POINTS)


def _cli(site: Path, *args):
    return run_cli_subprocess(*args, env=plugin_env(site))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("fbad-runs")
    layout = make_ntcir_layout(root / "ntcir", n_tasks=8, n_models=4, seed=4)
    a, b = root / "a.run", root / "b.run"
    write_runs(a, [ms.rank(layout, method="random", seed=1).with_id("a")])
    write_runs(b, [ms.rank(layout, method="random", seed=2).with_id("b")])
    return a, b, layout / "ground-truth.csv"


@pytest.mark.slow(reason="four fresh interpreters and a learned fusion (about 9 s on 2 shared cores)")
def test_fuse_optimize_leaves_broken_plugins_out_with_one_note(site, runs, tmp_path):
    a, b, truth = runs
    out, saved = tmp_path / "fused.run", tmp_path / "fusion.json"
    r = _cli(site, "fuse", a, b, "--optimize", "-g", truth, "--folds", "2", "-o", out, "--save", saved, "--json")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    doc = json.loads(r.out)
    left = [n for n in doc["notes"] if "left out of the search" in n]
    assert len(left) == 1, doc["notes"]
    note = left[0]
    for needle in ("'ms_fbad:RRF'", "clashes with the built-in fusion method", "'ms_fbad_missing:THING'",
                   "No module named 'ms_fbad_missing'", "'ms-fbad'"):
        assert needle in note, (needle, note)
    search = json.loads(saved.read_text())["search"]
    assert sorted(search["left_out"]) == ["broken_fusion", "rrf"]
    # the loadable plugin was searched beside every built-in, the built-in rrf among them
    assert search["methods"] == ["combmnz", "combsum", "maxfuse", "rrf", "wsum"]
    # the plain-RRF baseline of the CV is the built-in's: the same as without any plugin
    plain = optimize_fusion({"a": read_run(a), "b": read_run(b)}, ms.GroundTruth.from_csv(truth), folds=2)
    assert doc["cv"]["summary"] == json.loads(json.dumps(plain.cv.to_dict()["summary"]))
    # the text output says it in one note line too
    r = _cli(site, "fuse", a, b, "--optimize", "-g", truth, "--folds", "2", "-o", tmp_path / "f2.run")
    assert r.code == 0 and "Traceback" not in r.err, r.err
    notes = [line for line in r.out.splitlines() if line.startswith("note: ") and "left out" in line]
    assert len(notes) == 1 and "broken_fusion" in notes[0] and "'ms-fbad'" in notes[0]
    # listed once each, the clashing rrf beside the built-in included, and none imported to list them
    h = _cli(site, "fuse", "--help")
    assert h.code == 0 and "{rrf,combsum,combmnz,wsum,broken_fusion,maxfuse}" in h.out, h.out
    # naming the broken member is the one command that fails, in one line naming its distribution
    bad = _cli(site, "fuse", a, b, "--method", "broken_fusion", "-o", tmp_path / "f3.run")
    assert_one_error_line(bad, "fusion method 'broken_fusion'", "'ms_fbad_missing:THING'", "'ms-fbad'")


@pytest.mark.slow(reason="one fresh interpreter (about 3 s on 2 shared cores)")
def test_a_broken_estimator_plugin_is_not_listed_among_the_regression_estimators(site, tmp_path):
    """The refusal of a class-only estimator on a regression task lists the estimators for regression; a broken
    estimator plugin is left out of that list instead of replacing the message with its own error."""
    task = tmp_path / "reg.csv"
    task.write_text("text,label\n" + "".join(f"sample {i} words,{(i * 7) % 11 / 10:.1f}\n" for i in range(40)))
    pool = tmp_path / "pool.csv"
    pool.write_text("model_id,hf_id\n1,tiny/a\n2,tiny/b\n")
    r = _cli(site, "rank", task, "--pool", pool, "-m", "hscore", "--label-kind", "number")
    assert_one_error_line(r, "hscore needs class labels; estimators for regression: knn_loo, logme")
    assert "broken_estimator" not in message_lines(r.err)[0]
