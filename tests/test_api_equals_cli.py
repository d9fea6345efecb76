"""The API answers as the CLI does (#45 item 5): the same request through ``modelseek`` (the ``cli`` fixture) and
through ``import modelseek`` on the same inputs gives the same runs, reports and JSON, because the rules (a folder's
tasks and pool, the training truth found beside them, the card pool of a card-reading method, rank's verdicts) live
in the library and the commands only parse and print. Small generated layouts keep it a few seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import modelseek as ms
from modelseek.retrieval.bench import bench, check_refit, cross_validate
from modelseek.retrieval.data.folder import resolve_folder
from modelseek.retrieval.data.loaders import load_table_task
from modelseek.retrieval.data.run import read_run, read_runs
from modelseek.core.errors import InputError
from modelseek.retrieval.rankers.resolve import build, card_pool, with_card_pool
from modelseek.testing import make_ntcir_layout


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> Path:
    """A generated layout with 4 candidates (docIDs 1-4: not the 20 of the built-in ntcir19 pool)."""
    return make_ntcir_layout(tmp_path_factory.mktemp("api-cli") / "a", n_tasks=12, n_models=4, seed=3)


def _same_run(a, b) -> None:
    assert list(a) == list(b)
    for t in a:
        assert [e.doc for e in a[t]] == [e.doc for e in b[t]], t
        assert [e.score for e in a[t]] == pytest.approx([e.score for e in b[t]], abs=1e-4), t


def test_rank_folder_ranks_the_folders_candidates(cli, layout, tmp_path):
    out = tmp_path / "random.run"
    r = cli("rank", layout, "-m", "random", "-o", out)
    assert r.code == 0, r.err
    by_cli = read_run(out)
    by_api = ms.rank(layout, method="random")  # a path: the same folder rule
    by_resolved = ms.rank(resolve_folder(layout), method="random")  # the resolver's output too
    _same_run(by_cli, by_api)
    _same_run(by_api, by_resolved)
    assert {e.doc for t in by_api for e in by_api[t]} == {"1", "2", "3", "4"}  # models.csv, not ntcir19's 20
    assert len(list(by_api)) == 12


def test_rank_folder_json_equals_the_api_run(cli, layout):
    r = cli("rank", layout, "-m", "random", "--seed", "7", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    run = ms.rank(layout, method="random", seed=7)
    assert list(doc["random"]) == list(run)
    for t in run:
        assert [(e["doc"], e["rank"]) for e in doc["random"][t]] == [(e.doc, e.rank) for e in run[t]]
        assert [e["score"] for e in doc["random"][t]] == pytest.approx([e.score for e in run[t]])


def test_rank_folder_learner_refuses_alike(cli, layout):
    """avgrank on a folder whose ground truth holds only the tasks being ranked: the same refusal, the CLI naming
    its flag, the library its parameter."""
    r = cli("rank", layout, "-m", "avgrank")
    assert r.code == 1 and "holds only the tasks being ranked" in r.err and "--train-truth" in r.err, r.err
    with pytest.raises(InputError, match="holds only the tasks being ranked") as exc:
        ms.rank(layout, method="avgrank")
    assert exc.value.field == "train_truth"


def test_bench_and_rank_cv_use_one_card_pool(cli, layout, tmp_path):
    """bench (CLI), rank --cv (CLI) and bench.cross_validate (API) of a card-reading method: one card pool (the
    layout's models.csv, its candidates not being ntcir19's), so one run and one report."""
    folder = resolve_folder(layout)
    truth, pool = folder.truth(), folder.pool()
    assert card_pool(pool) == str(folder.models_csv)
    assert with_card_pool("metadata", {}, pool) == {"pool": str(folder.models_csv)}
    assert with_card_pool("avgrank", {}, pool) == {}
    tasks = folder.training_tasks(truth.task_ids)
    api = cross_validate("metadata", truth, pool, tasks=tasks, folds=3, seed=0,
                         method_params={"encoder": "hashing", "seed": 0})
    run_out = tmp_path / "bench.run"
    r = cli("bench", layout, "-m", "metadata", "avgrank", "-p", "encoder=hashing", "--folds", "3", "--json",
            "--run-out", run_out)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    want = api.report.mean()
    got = doc["methods"]["metadata"]["tiers"]["all"]
    for m in ("ndcg@1", "ndcg@3", "ndcg@5", "mrr"):
        assert got[m]["mean"] == pytest.approx(want[m]), m
    _same_run(read_runs(run_out)["metadata"], api.runs[0])
    cv_out = tmp_path / "cv.run"
    r = cli("rank", layout, "-m", "metadata", "--param", "encoder=hashing", "--cv", "3", "-o", cv_out)
    assert r.code == 0, r.err
    _same_run(read_run(cv_out), api.runs[0])
    avg = cross_validate("avgrank", truth, pool, folds=3, seed=0)
    assert doc["methods"]["avgrank"]["tiers"]["all"]["ndcg@5"]["mean"] == pytest.approx(avg.report.mean()["ndcg@5"])


@pytest.fixture(scope="module")
def organisers_root(tmp_path_factory) -> Path:
    """The organisers' repository form: ROOT holding data/ (ground-truth.csv, tasks.csv, models.csv, task-data/)."""
    root = tmp_path_factory.mktemp("api-cli-root") / "modelretrieval-1-subtask-a"
    make_ntcir_layout(root / "data", n_tasks=12, n_models=4, seed=5)
    return root


@pytest.mark.parametrize("form", ["layout", "root", "root/data", "csv"])
def test_bench_folder_equals_the_api(cli, layout, organisers_root, form):
    """bench PATH --json and bench.bench(PATH).to_json() (and cross_validate(method, PATH)): the same JSON for every
    form resolve_folder reads — a generated layout, the organisers' ROOT, ROOT/data, the ground-truth CSV; ROOT,
    ROOT/data and the CSV are the same data, so the same numbers."""
    path = {"layout": layout, "root": organisers_root, "root/data": organisers_root / "data",
            "csv": organisers_root / "data" / "ground-truth.csv"}[form]
    args = ["-m", "metadata", "random", "--baseline", "avgrank", "-p", "encoder=hashing", "--folds", "3",
            "--bootstrap", "200", "--seed", "2"]
    r = cli("bench", path, *args, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    res = bench(path, ["metadata", "random"], baseline="avgrank", params={"encoder": "hashing"}, folds=3,
                n_resamples=200, seed=2)
    assert doc == json.loads(json.dumps(res.to_json()))
    assert set(doc["methods"]) == {"metadata", "random"} and "vs_baseline" in doc["methods"]["random"]
    assert doc["path"] == str(path)
    folder = resolve_folder(path)
    assert len(res.pool) == 4 and res.truth.task_ids == folder.truth().task_ids  # its models.csv, not ntcir19's 20
    one = cross_validate("random", path, folds=3, seed=2, method_params={"seed": 2})
    assert doc["methods"]["random"]["tiers"]["all"]["ndcg@5"]["mean"] == pytest.approx(one.report.mean()["ndcg@5"])
    _same_run(one.runs[0], res.results["random"].runs[0])
    if form != "layout":  # ROOT, ROOT/data and the CSV: one data set, one answer
        again = bench(organisers_root, ["metadata", "random"], baseline="avgrank", params={"encoder": "hashing"},
                      folds=3, n_resamples=200, seed=2).to_json()
        assert again["methods"] == res.to_json()["methods"]


def test_bench_refuses_alike(cli, tmp_path):
    """A path that is not there, a file that is no ground truth, a folder without one: bench says what rank and
    train-ranker say (resolve_folder's errors), the API raises the same."""
    junk = tmp_path / "notes.csv"
    junk.write_text("a,b\n1,2\n")
    for path, msg in ((tmp_path / "nope", "no such file or folder"), (junk, "not a ground truth"),
                      (tmp_path, "no ground truth here")):
        r = cli("bench", path, "-m", "avgrank")
        t = cli("train-ranker", path, "-m", "avgrank")
        assert r.code == t.code == 1 and msg in r.err and r.err == t.err, (r.err, t.err)
        assert len(r.err.strip().splitlines()) == 1
        with pytest.raises(InputError, match=msg):
            bench(path, "avgrank")
        with pytest.raises(InputError, match=msg):
            cross_validate("avgrank", path)


def test_train_ranker_equals_the_library(cli, layout, tmp_path):
    """train-ranker --cv: the verdict printed is check_refit's; the artifact saved is the library's fit (same
    parameters, card pool included, and the same rankings)."""
    out = tmp_path / "metadata.json"
    r = cli("train-ranker", layout, "-m", "metadata", "-p", "encoder=hashing", "--cv", "3", "-o", out)
    assert r.code == 0, r.err
    folder = resolve_folder(layout)
    truth, pool = folder.truth(), folder.pool()
    tasks = folder.training_tasks(truth.task_ids)
    params = with_card_pool("metadata", {"encoder": "hashing", "seed": 0}, pool)
    check = check_refit("metadata", truth, pool, tasks=tasks, folds=3, seed=0, method_params=params)
    assert check.verdict() in r.out
    saved = json.loads(out.read_text())
    assert saved["params"]["pool"] == str(folder.models_csv)
    ranker = build("metadata", params)
    ranker.fit(tasks, truth, pool=pool)
    assert saved["params"] == {k: v for k, v in ranker.get_params().items() if k != "cache_dir"}
    _same_run(ms.rank(tasks, pool, method=str(out)), ranker.rank_tasks(list(tasks), pool, run_id="metadata"))


@pytest.mark.slow(reason="the budget curve replays the shipped history, CLI and API: 9 s on 2 shared cores")
def test_rank_explained_json_carries_the_verdicts(cli, layout, tmp_path):
    """rank's regret-rule verdict and budget curve: in ms.rank_explained()'s explanation (the one public
    rank_explained) and in --json, the same; the whole explanation is what --json prints."""
    task_csv = tmp_path / "task.csv"
    task_csv.write_text("text,label\n" + "".join(f"sample text {i} about topic {i % 3},{i % 3}\n" for i in range(30)))
    models = str(resolve_folder(layout).models_csv)
    r = cli("rank", task_csv, "-m", "adaptive", "--param", "encoder=hashing", "--train-truth", layout,
            "--pool", models, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    folder = resolve_folder(layout)
    truth = folder.truth()
    res = ms.rank_explained(load_table_task(task_csv), ms.load_pool(models), "adaptive", train_truth=truth,
                         train_tasks=folder.training_tasks(truth.task_ids), train_pool=folder.pool(),
                         encoder="hashing", seed=0)
    (tid, ex), = res.explanations.items()
    got = doc["explanations"]["adaptive"][tid]
    # the whole explanation, verdicts included; --json leaves out each candidate's rank and model (its run has them)
    lean = {**ex, "candidates": [{k: v for k, v in c.items() if k not in ("rank", "model")} for c in ex["candidates"]]}
    assert got == json.loads(json.dumps(lean))
    assert [c["doc"] for c in ex["candidates"]] == [c["doc"] for c in got["candidates"]]
    assert got["regret_rule"] == ex["regret_rule"]
    assert got["budget_curve"] == json.loads(json.dumps(ex["budget_curve"]))
    assert ex["regret_rule"]["tier"] in ("low", "medium", "high")
    assert ex["budget_curve"]["tier"] == ex["criticality"]["tier"]
    assert ex["budget_curve"]["points"][0]["k"] == 0
    assert [e["doc"] for e in doc["adaptive"][tid]] == [e.doc for e in res.run[tid]]


def test_library_errors_name_parameters_the_cli_its_flags(cli, layout):
    """A method parameter the method refuses: the library names the parameter (``params.KEY``), the CLI its flag
    (``--param KEY``); the message is the same."""
    with pytest.raises(InputError) as exc:
        ms.rank(layout, method="random", seed="x")
    assert exc.value.field == "params.seed"
    r = cli("rank", layout, "-m", "random", "--param", "seed=x")
    assert r.code == 1 and f"field '--param seed': {exc.value.message}" in r.err, r.err
    with pytest.raises(InputError) as exc:
        ms.rank(layout, method="random", nope=1)
    assert exc.value.field == "params" and "has no parameter 'nope'" in exc.value.message
    with pytest.raises(InputError, match="`split` takes a folder") as exc:
        ms.rank([], method="random", split="test")
    assert exc.value.field == "split"


@pytest.mark.parametrize("given", ["csv", "folder"])
def test_rank_with_a_training_truth_path(cli, layout, tmp_path, given):
    """--train-truth PATH (the CSV, or the folder it is in) and ms.rank(train_truth=PATH): the same truth, the same
    pool beside it, the same run."""
    task_csv = tmp_path / "task.csv"
    task_csv.write_text("text,label\n" + "".join(f"text {i},{i % 2}\n" for i in range(20)))
    truth = layout / "ground-truth.csv" if given == "csv" else layout
    models = resolve_folder(layout).models_csv
    out = tmp_path / "avg.run"
    r = cli("rank", task_csv, "-m", "avgrank", "--train-truth", truth, "--pool", models, "-o", out)
    assert r.code == 0, r.err
    api = ms.rank(load_table_task(task_csv), ms.load_pool(models), method="avgrank", train_truth=truth)
    _same_run(read_run(out), api)
    assert [e.doc for t in api for e in api[t]] != [] and len(api[next(iter(api))]) == 4


def test_evaluate_of_a_run_sharing_no_topic_is_refused_alike(cli, layout, tmp_path):
    """#56 item 2: a run sharing no topic with the ground truth would score 0 everywhere: the library refuses it
    (a Run or a run file), and the CLI says the same through it."""
    run = ms.Run.from_scores({"elsewhere": {"1": 2.0, "2": 1.0}}, "lost")
    path = tmp_path / "lost.run"
    run.write(path)
    truth = layout / "ground-truth.csv"
    with pytest.raises(InputError, match="run 'lost' shares no topic with the ground truth") as by_run:
        ms.evaluate(run, truth)
    assert by_run.value.field == "topicID"
    with pytest.raises(InputError) as by_path:
        ms.evaluate(path, truth)
    assert str(by_path.value.path) == str(path) and by_path.value.message == by_run.value.message
    r = cli("evaluate", path, "-g", truth)
    assert r.code == 1 and by_run.value.message in r.err and str(path) in r.err, r.err
    # topics named by the caller are scored as asked (a topic the run lacks scores as missing)
    some = ms.GroundTruth.from_csv(truth).task_ids[:2]
    assert list(ms.evaluate(run, truth, topics=some).per_topic.index) == some


@pytest.mark.parametrize("seed", [0, 5])
def test_rank_cv_is_the_librarys_cross_fitted_run(cli, layout, tmp_path, seed):
    """#56 item 2: ``rank PATH --cv K`` and ``ms.rank(PATH, cv=K)``: the same cross-fitted run; the refusals (no
    training tasks, this process only) live in the library, the CLI shows its flags."""
    out = tmp_path / "cv.run"
    r = cli("rank", layout, "-m", "avgrank", "--cv", "3", "--seed", seed, "-o", out)
    assert r.code == 0, r.err
    api = ms.rank(layout, method="avgrank", cv=3, seed=seed)
    _same_run(read_run(out), api)
    assert api.run_id == "avgrank" and len(list(api)) == 12
    with pytest.raises(InputError, match="it takes no `train_tasks`") as exc:
        ms.rank(layout, method="avgrank", cv=3, train_tasks=layout)
    assert exc.value.field == "cv"
    r = cli("rank", layout, "-m", "avgrank", "--cv", "3", "--train-tasks", layout, "-o", out)
    assert r.code == 1 and "field '--cv': --cv fits on the other folds of the tasks ranked; it takes no --train-tasks" \
        in r.err, r.err
    with pytest.raises(InputError, match="runs in this process") as exc:
        ms.rank(layout, method="avgrank", cv=3, executor="ray")
    r = cli("rank", layout, "-m", "avgrank", "--cv", "3", "--executor", "ray", "-o", out)
    assert r.code == 1 and "--cv runs in this process" in r.err, r.err
