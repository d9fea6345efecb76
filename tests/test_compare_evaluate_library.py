"""Issue #45 (item 5, compare and evaluate): the rules live in the library and the CLI maps them. ``compare_runs``
refuses one run, the same run twice and an unknown baseline in one line naming its parameter; ``evaluate`` takes
files and routes a Subtask B truth as ``modelseek evaluate`` does; both default to ``metrics.DEFAULT_METRICS``; the
API and the CLI give the same answers on the same files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import modelseek as ms
from modelseek.retrieval.comparison import check_comparison, compare_runs
from modelseek.retrieval.data.run import read_run
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.core.errors import InputError
from modelseek.retrieval.metrics import DEFAULT_METRICS, RANKING_METRICS


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> tuple[Path, Path, Path]:
    from modelseek.testing import make_ntcir_layout

    root = tmp_path_factory.mktemp("policy")
    layout = make_ntcir_layout(root / "ntcir", n_tasks=6, n_models=5, seed=4)
    truth = layout / "ground-truth.csv"
    rows = GroundTruth.from_csv(truth).frame
    a, b = root / "a.txt", root / "b.txt"
    lines_a, lines_b = [], []
    for t, g in rows.groupby("task_id", sort=True):
        ids = sorted(g["model_id"].astype(str))
        lines_a += [f"{t} Q0 {d} {k} {10 - k} first" for k, d in enumerate(ids, start=1)]
        lines_b += [f"{t} Q0 {d} {k} {10 - k} second" for k, d in enumerate(reversed(ids), start=1)]
    a.write_text("\n".join(lines_a) + "\n")
    b.write_text("\n".join(lines_b) + "\n")
    return a, b, truth


def test_compare_runs_checks_its_inputs_naming_parameters(files):
    a, b, truth = files
    rep = ms.evaluate(read_run(a), GroundTruth.from_csv(truth))
    other = ms.evaluate(read_run(b), GroundTruth.from_csv(truth))
    with pytest.raises(InputError, match=r"field 'reports': a comparison needs at least two runs, got 1 \(first\)"):
        compare_runs([rep], DEFAULT_METRICS)
    with pytest.raises(InputError, match=r"field 'reports': run id\(s\) 'first' given more than once"):
        compare_runs([rep, rep], DEFAULT_METRICS)
    with pytest.raises(InputError, match=r"field 'baseline': baseline 'nope' is not a run id .*first, second"):
        compare_runs([rep, other], DEFAULT_METRICS, baseline="nope")
    with pytest.raises(InputError, match=r"field 'metrics': run 'first' was not evaluated on regret@1"):
        compare_runs([rep, other], ["ndcg@5", "regret@1"])
    assert check_comparison(["x", "y"], " NDCG@5 ,mrr") == ["ndcg@5", "mrr"]
    res = compare_runs([rep, other], "ndcg@5,mrr", baseline="second")
    assert [(c["a"], c["b"]) for c in res["comparisons"]] == [("first", "second")] * 2


def test_the_cli_maps_the_library_errors_to_its_arguments(cli, files):
    a, b, truth = files
    r = cli("compare", a, "-g", truth)
    assert r.code == 1 and r.err.strip() == f"error: {a}: field 'RUN': a comparison needs at least two runs, got 1 (first)"
    r = cli("compare", a, b, "-g", truth, "--baseline", "nope")
    assert r.code == 1 and "field '--baseline': baseline 'nope' is not a run id" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_compare_api_equals_cli(cli, files):
    a, b, truth = files
    r = cli("compare", a, b, "-g", truth, "--json", "--baseline", "first")
    assert r.code == 0, r.err
    gt = GroundTruth.from_csv(truth)
    reports = [ms.evaluate(read_run(p), gt, pool="none") for p in (a, b)]
    # compare's paired tests default to the ranking metrics (nDCG@1,3,5, MRR): the same as before, API and CLI alike
    api = json.loads(json.dumps(compare_runs(reports, RANKING_METRICS, baseline="first")))
    assert json.loads(r.out) == api and api["settings"]["metrics"] == list(RANKING_METRICS)


def test_evaluate_api_equals_cli_with_the_same_defaults(cli, files):
    a, _, truth = files
    r = cli("evaluate", a, "-g", truth, "--json")
    assert r.code == 0, r.err
    by_file = ms.evaluate(a, truth)  # files, read as the command reads them
    by_object = ms.evaluate(read_run(a), GroundTruth.from_csv(truth))
    assert json.loads(r.out)["first"] == json.loads(json.dumps(by_file.to_dict())) \
        == json.loads(json.dumps(by_object.to_dict()))
    assert list(by_file.mean()) == list(DEFAULT_METRICS)


def test_evaluate_routes_a_subtask_b_truth_as_the_cli(cli, tmp_path):
    truth = tmp_path / "train.csv"
    truth.write_text("image_id,model_id\na.png,1\nb.png,2\nc.png,0003\nd.png,4\n")
    run = tmp_path / "run.txt"
    rankings = {"a": ["1", "2", "3", "4"], "b": ["1", "2", "3", "4"], "c": ["1", "2", "4", "3"]}
    run.write_text("".join(f"{q} Q0 {d} {k} {10 - k} r\n" for q, ds in rankings.items()
                           for k, d in enumerate(ds, start=1)))
    r = cli("evaluate", run, "--ground-truth", truth, "--json")
    assert r.code == 0, r.err
    score = ms.evaluate(run, truth)
    assert score.mrr == pytest.approx((1 + 1 / 2 + 1 / 4 + 0) / 4)
    assert json.loads(r.out)["r"] == json.loads(json.dumps(score.to_dict()))
    with pytest.raises(InputError, match="field 'run': the file holds 2 runs"):
        two = tmp_path / "two.txt"
        two.write_text(run.read_text() + run.read_text().replace(" r\n", " s\n"))
        ms.evaluate(two, truth)
