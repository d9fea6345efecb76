"""``modelseek fuse`` and ``modelseek evaluate`` through the command line, on runs written by other tools."""

from __future__ import annotations

import json
import math

import pytest

import modelseek as ms
from modelseek.testing.fusion_zoo import write_fusion_zoo


@pytest.fixture
def foreign(tmp_path):
    """Runs as other tools write them: ranx's 'q_id Q0 doc_id rank score run_name', tabs, extra spaces,
    CRLF line ends, a byte-order mark; docIDs that are Hugging Face ids or numbers."""
    a = tmp_path / "a.txt"
    a.write_bytes(("\ufeffq1 Q0 org/bert-base 1 0.9 ranx_a\r\n"
                   "q1\tQ0\torg/roberta\t2\t0.5\tranx_a\r\n"
                   "q1  Q0   7   3  0.1   ranx_a\r\n").encode("utf-8"))
    b = tmp_path / "b.txt"
    b.write_text("q1 Q0 org/roberta 1 12.0 ranx_b\nq1 Q0 7 2 11.0 ranx_b\nq2 Q0 org/bert-base 1 3 ranx_b\n")
    return a, b


def test_foreign_runs_are_read(foreign):
    a, _ = foreign
    run = ms.read_run(a)
    assert list(run) == ["q1"] and run.run_id == "ranx_a"
    assert run.ranking("q1") == ["org/bert-base", "org/roberta", "7"]


def test_fuse_rrf_of_foreign_files(cli, foreign, tmp_path):
    a, b = foreign
    out = tmp_path / "fused.txt"
    r = cli("fuse", a, b, "-o", out)
    assert r.code == 0, r.err
    fused = ms.read_run(out)
    assert fused.run_id == "fused-rrf"
    # q1: bert 1/61; roberta 1/62 + 1/61; '7' 1/63 + 1/62; q2 from ranx_b alone
    assert fused.ranking("q1") == ["org/roberta", "7", "org/bert-base"]
    assert fused.scores("q1")["org/roberta"] == pytest.approx(1 / 62 + 1 / 61, rel=1e-5)
    assert fused.ranking("q2") == ["org/bert-base"]


def test_fuse_wsum_with_weights_and_norm(cli, foreign, tmp_path):
    a, b = foreign
    out = tmp_path / "fused.txt"
    r = cli("fuse", a, b, "-o", out, "--method", "wsum", "--norm", "min-max", "--weights", "0.2,0.8",
            "--run-id", "mine")
    assert r.code == 0, r.err
    fused = ms.read_run(out)
    # a: bert 1, roberta .5, 7 0 ; b: roberta 1, 7 0
    assert fused.scores("q1") == pytest.approx({"org/bert-base": 0.2, "org/roberta": 0.1 + 0.8, "7": 0.0})
    assert fused.run_id == "mine"


@pytest.mark.parametrize("args, match", [
    (["--method", "rrf", "--norm", "zmuv"], "rrf fuses ranks"),
    (["--method", "combsum", "--weights", "1,2"], "takes no weights"),
    (["--method", "wsum", "--weights", "1,x"], "not a number"),
    (["--method", "wsum", "--weights", "1"], "1 weight"),
    (["--optimize"], "--optimize needs --ground-truth"),
    (["--optimize", "--method", "wsum"], "cannot be combined"),
    (["--names", "a"], "1 name"),
])
def test_fuse_bad_options_exit_1_with_one_line(cli, foreign, tmp_path, args, match):
    a, b = foreign
    r = cli("fuse", a, b, "-o", tmp_path / "o.txt", *args)
    assert r.code == 1 and match in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_fuse_same_run_ids_need_names(cli, foreign, tmp_path):
    a, _ = foreign
    r = cli("fuse", a, a, "-o", tmp_path / "o.txt")
    assert r.code == 1 and "--names" in r.err
    r = cli("fuse", a, a, "-o", tmp_path / "o.txt", "--names", "x,y")
    assert r.code == 0, r.err


def test_fuse_malformed_input_is_located(cli, foreign, tmp_path):
    a, _ = foreign
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 Q0 d1 1 0.5 r\nq1 Q0 d2 2 high r\n")
    r = cli("fuse", a, bad, "-o", tmp_path / "o.txt")
    assert r.code == 1 and f"{bad}:2: field 'Score'" in r.err


def _write_zoo(tmp_path, n_tasks=30, hf_ids=True):
    return write_fusion_zoo(tmp_path, n_tasks=n_tasks, n_models=10, seed=2, hf_ids=hf_ids)


@pytest.mark.slow(reason="2 s (setup and call) on 2 busy cores")
def test_optimize_save_and_apply_to_new_topics(cli, tmp_path):
    truth, runs, paths, _ = _write_zoo(tmp_path)
    known = truth.task_ids[:24]                   # ground truth for 24 topics; 6 new ones
    gt = tmp_path / "gt-known.csv"
    truth.subset(known).to_csv(gt)
    out, saved = tmp_path / "fused.txt", tmp_path / "fusion.json"
    r = cli("fuse", *paths.values(), "-o", out, "--optimize", "-g", gt, "--folds", "3", "--step", "0.5",
            "--save", saved)
    assert r.code == 0, r.err
    assert "learned fusion:" in r.out and "ndcg@5 on held-out topics (3 folds" in r.out
    for name in ("prior", "est_a", "est_b", "plain rrf", "learned − it"):
        assert name in r.out
    fused = ms.read_run(out)
    assert list(fused) == truth.task_ids          # every topic, new ones included
    # apply the saved fusion to the new topics only
    new_paths = []
    for name, run in runs.items():
        p = tmp_path / f"new-{name}.txt"
        run.restrict(truth.task_ids[24:]).write(p)
        new_paths.append(p)
    out2 = tmp_path / "applied.txt"
    r = cli("fuse", *new_paths, "-o", out2, "--apply", saved, "--json")
    assert r.code == 0, r.err
    info = json.loads(r.out)
    assert info["new_topics"] == 6
    applied = ms.read_run(out2)
    for t in truth.task_ids[24:]:
        assert applied.ranking(t) == fused.ranking(t)


def test_optimize_json_reports_folds(cli, tmp_path):
    truth, _, paths, gt = _write_zoo(tmp_path, hf_ids=False)
    r = cli("fuse", *paths.values(), "-o", tmp_path / "o.txt", "--optimize", "-g", gt, "--folds", "3",
            "--step", "0.5", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    folds = doc["cv"]["folds"]
    assert len(folds) == 3
    for f in folds:
        assert not set(f["fitted"]) & set(f["held_out"])
    assert set().union(*(set(f["held_out"]) for f in folds)) == set(truth.task_ids)
    s = doc["cv"]["summary"]
    assert s["learned fusion"]["low"] <= s["learned fusion"]["mean"] <= s["learned fusion"]["high"]


def test_apply_refuses_a_tampered_file(cli, tmp_path):
    _, _, paths, gt = _write_zoo(tmp_path)
    saved = tmp_path / "fusion.json"
    assert cli("fuse", *paths.values(), "-o", tmp_path / "o.txt", "--optimize", "-g", gt, "--folds", "2",
               "--step", "0.5", "--save", saved).code == 0
    doc = json.loads(saved.read_text())
    doc["fitted_topics"] = []
    saved.write_text(json.dumps(doc))
    r = cli("fuse", *paths.values(), "-o", tmp_path / "o2.txt", "--apply", saved)
    assert r.code == 1 and "checksum mismatch" in r.err


# ------------------------------------------------------------------------------------------ evaluate
@pytest.fixture
def accuracy_zoo(tmp_path):
    """A published zoo's records: accuracy in %, Hugging Face model ids."""
    gt = tmp_path / "zoo.csv"
    gt.write_text("task_id,model_id,f1\nT,org/a,80\nT,org/b,78\nT,org/c,60\n")
    run = tmp_path / "run.txt"
    run.write_text("T Q0 org/b 1 3 mine\nT Q0 org/a 2 2 mine\nT Q0 org/c 3 1 mine\n")
    return gt, run


def test_evaluate_any_score_hand_computed(cli, accuracy_zoo):
    gt, run = accuracy_zoo
    r = cli("evaluate", run, "-g", gt, "--any-score", "--json")
    assert r.code == 0, r.err
    mean = json.loads(r.out)["mine"]["mean"]
    # normalised: a 80/80 = 1 (grade 3, gain 7), b 78/80 = 0.975 (grade 2, gain 3), c 0.75 (grade 0)
    assert mean["ndcg@1"] == pytest.approx(3 / 7)
    dcg = 3 + 7 / math.log2(3)
    idcg = 7 + 3 / math.log2(3)
    assert mean["ndcg@3"] == pytest.approx(dcg / idcg)
    assert mean["ndcg@5"] == pytest.approx(dcg / idcg)
    assert mean["mrr"] == 1.0
    # weighted tau (hyperbolic weights 1/(r+1), additive pair weights, mean of the two rank orders):
    # by truth a,b,c: pairs ab -1 (w 1+1/2), ac +1 (1+1/3), bc +1 (1/2+1/3) -> (2/3) / (11/3) = 2/11;
    # by the run b,a,c the same weights arise -> 2/11
    assert mean["kendall"] == pytest.approx(2 / 11)


def test_evaluate_table_shows_kendall_by_default(cli, accuracy_zoo):
    gt, run = accuracy_zoo
    r = cli("evaluate", run, "-g", gt, "--any-score")
    assert r.code == 0 and "kendall" in r.out and "0.1818" in r.out


def test_evaluate_scores_outside_unit_range_need_any_score(cli, accuracy_zoo):
    gt, run = accuracy_zoo
    r = cli("evaluate", run, "-g", gt)
    assert r.code == 1 and f"{gt}:2: field 'f1'" in r.err and "--any-score" in r.err


def test_evaluate_nonpositive_best_score_is_located(cli, tmp_path, accuracy_zoo):
    _, run = accuracy_zoo
    gt = tmp_path / "neg.csv"
    gt.write_text("task_id,model_id,f1\nT,org/a,-1\nT,org/b,-2\n")
    r = cli("evaluate", run, "-g", gt, "--any-score")
    assert r.code == 1 and f"{gt}:2: field 'f1'" in r.err and "positive best" in r.err


def test_evaluate_mismatched_ids_is_an_error(cli, tmp_path, accuracy_zoo):
    gt, _ = accuracy_zoo
    run = tmp_path / "numeric.txt"
    run.write_text("T Q0 1 1 3 mine\nT Q0 2 2 2 mine\n")
    r = cli("evaluate", run, "-g", gt, "--any-score")
    assert r.code == 1 and "no docID matches" in r.err
    other = tmp_path / "other.txt"
    other.write_text("U Q0 org/a 1 3 mine\n")
    r = cli("evaluate", other, "-g", gt, "--any-score")
    assert r.code == 1 and "shares no topic" in r.err


def test_kendall_of_a_missing_topic_is_null_in_json(cli, tmp_path, accuracy_zoo):
    gt, run = accuracy_zoo
    gt2 = tmp_path / "zoo2.csv"
    gt2.write_text(gt.read_text() + "U,org/a,50\nU,org/b,40\n")
    r = cli("evaluate", run, "-g", gt2, "--any-score", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)["mine"]
    assert doc["per_topic"]["U"]["kendall"] is None and doc["per_topic"]["U"]["ndcg@5"] == 0.0
    assert doc["mean"]["kendall"] == pytest.approx(2 / 11)


@pytest.mark.parametrize("args, code, match", [
    (["--seed", "-1"], 2, "--seed"),                     # option types: argparse usage errors
    (["--folds", "1"], 2, "--folds"),
    (["--step", "nan"], 2, "--step"),
    (["--rrf-k", "nan"], 2, "--rrf-k"),
    (["--rrf-k", "-1"], 2, "--rrf-k"),
    (["--folds", "1000"], 1, "folds must be between 2"),  # depends on the data: exit 1
    (["--step", "0.3"], 1, "step must divide 1"),
    (["--metric", "mrr"], 1, "nDCG at a cut-off"),
])
def test_optimize_bad_numbers(cli, tmp_path, args, code, match):
    _, _, paths, gt = _write_zoo(tmp_path, n_tasks=12)
    r = cli("fuse", *paths.values(), "-o", tmp_path / "o.txt", "--optimize", "-g", gt, *args)
    assert r.code == code and match in r.err and "Traceback" not in r.err


def test_folders_instead_of_files(cli, tmp_path, foreign):
    a, b = foreign
    for args in ([a, b, tmp_path, "-o", tmp_path / "o.txt"], [a, b, "-o", tmp_path / "o.txt", "--apply", tmp_path]):
        r = cli("fuse", *args)       # inputs: the located readers' error, exit 1
        assert r.code == 1 and "is a directory" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("fuse", a, b, "-o", tmp_path)    # an output that is a folder: a usage error
    assert r.code == 2 and "is a directory" in r.err
    r = cli("evaluate", a, "-g", tmp_path)
    assert r.code == 1 and "is a directory" in r.err
