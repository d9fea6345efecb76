"""Per-task fusion (issue #21): each run's spread, task features, gated weights, their selection, persistence and
CLI. The zoos here are generated (``modelseek.testing.fusion_zoo``): in one an estimator's noise follows
1/sqrt(task size) by construction, in the other the task sizes carry no information."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import modelseek as ms
from modelseek.core.errors import InputError
from modelseek.retrieval.fusion import Fusion, LearnedFusion, optimize_fusion
from modelseek.retrieval.fusion.core import make_block
from modelseek.retrieval.fusion.features import TaskFeatures, read_task_features, task_features_from_tasks
from modelseek.retrieval.fusion.gates import Gate, candidate_gates
from modelseek.retrieval.fusion.learned import LEARNED, PLAIN_RRF
from modelseek.testing.fusion_zoo import make_fusion_zoo, zoo_task_features

OLD_FILE = Path(__file__).parent / "data" / "fusion-v1-main-e010ce0.json"  # saved by modelseek before gates


# ------------------------------------------------------------------------------------------ the spread
def _spread_runs():
    a = ms.Run.from_scores({"t1": {"x": 3.0, "y": 1.0},                 # sd 1
                            "t2": {"x": 4.0, "y": 2.0, "z": 0.0},       # sd sqrt(8/3)
                            "t3": {"x": 7.0},                           # one candidate: undefined
                            "t4": {"x": 5.0, "y": 5.0},                 # flat: 0
                            "t5": {"x": 2.0, "y": 1e308, "z": 0.0}}, "a")  # a failed candidate is not held: sd 1
    b = ms.Run.from_scores({t: {"x": 1.0, "y": 0.0} for t in ("t1", "t2", "t3", "t4", "t5")}, "b")  # sd 0.5
    return a, b


def test_spread_by_hand():
    a, b = _spread_runs()
    block = make_block([a, b])
    sd = block.spread()
    assert block.topics == ["t1", "t2", "t3", "t4", "t5"]
    np.testing.assert_allclose(sd[0], [1.0, math.sqrt(8 / 3), np.nan, 0.0, 1.0])
    np.testing.assert_allclose(sd[1], [0.5] * 5)
    # references: the median over topics with a defined, positive sd
    gates = candidate_gates(block, gammas=(1.0,))
    assert gates == [Gate.build("spread", 1.0, {"a": 1.0, "b": 0.5})]
    g = gates[0].factors(block)
    # t3 (undefined) gets 1; t4 (flat: 0) is clipped to 1/8; b never moves from its median
    np.testing.assert_allclose(g[0], [1.0, math.sqrt(8 / 3), 1.0, 1 / 8, 1.0])
    np.testing.assert_allclose(g[1], [1.0] * 5)


def test_spread_of_huge_scores_does_not_overflow():
    run = ms.Run.from_scores({"t": {"x": 3e300, "y": 1e300}}, "a")
    assert make_block([run]).spread()[0, 0] == pytest.approx(1e300)


# ------------------------------------------------------------------------------------------ a gated fusion
def _two_runs():
    a = ms.Run.from_scores({"t1": {"x": 1.0, "y": 0.0}, "t2": {"x": 1.0, "y": 0.0}, "t3": {"x": 1.0, "y": 0.0}},
                           "a")
    b = ms.Run.from_scores({"t1": {"x": 0.0, "y": 1.0}, "t2": {"x": 0.0, "y": 1.0}, "t3": {"x": 0.0, "y": 1.0}},
                           "b")
    return a, b


SIZES = {"size": {"t1": 100.0, "t2": 400.0, "t3x": 5.0}}   # t3 has no size; t3x is not a topic of the runs


def test_gated_fusion_by_hand():
    a, b = _two_runs()
    f = Fusion.build(["a", "b"], "wsum", "none", [0.5, 0.5], gate=Gate.build("size", 0.5, {"b": 200.0}))
    fused = f.apply([a, b], features=SIZES)
    # t1: b's weight 0.5 * sqrt(100/200); t2: 0.5 * sqrt(2); t3 (no size): the base weights
    assert fused.scores("t1") == pytest.approx({"x": 0.5, "y": 0.5 * math.sqrt(0.5)})
    assert fused.scores("t2") == pytest.approx({"x": 0.5, "y": 0.5 * math.sqrt(2.0)})
    assert fused.scores("t3") == pytest.approx({"x": 0.5, "y": 0.5})
    assert fused.ranking("t1") == ["x", "y"] and fused.ranking("t2") == ["y", "x"]  # the balance moves with size
    assert f.describe() == "wsum norm=none weights a=0.5 b=0.5 x (size/200)^0.5 on b"
    # the factor is clipped to [1/8, 8]^gamma
    huge = f.apply([a, b], features={"size": {"t1": 1e9}})
    assert huge.scores("t1")["y"] == pytest.approx(0.5 * math.sqrt(8.0))


def test_gated_fusion_is_invariant_to_run_and_topic_order():
    a, b = _two_runs()
    rev_a = ms.Run({t: a[t] for t in reversed(list(a))}, "a")
    f = Fusion.build(["a", "b"], "rrf", None, [1.0, 2.0], gate=Gate.build("size", -1.0, {"a": 200.0}))
    one = f.apply([a, b], features=SIZES)
    two = f.apply([b, rev_a], features=SIZES)
    assert one == two
    g = Fusion.build(["b", "a"], "rrf", None, [2.0, 1.0], gate=Gate.build("size", -1.0, {"a": 200.0}))
    assert g.apply([a, b], features=SIZES) == one


def test_gated_fusion_needs_its_task_feature(tmp_path, cli):
    from modelseek.retrieval.fusion.learned import LearnedFusion

    a, b = _two_runs()
    f = Fusion.build(["a", "b"], "wsum", "none", [0.5, 0.5], gate=Gate.build("size", 1.0, {"a": 10.0}))
    with pytest.raises(InputError, match="task feature size; give `features` \\(the tasks, or a task features"):
        f.apply([a, b])
    # the CLI names the options that give the library's `features`
    LearnedFusion(f, "ndcg@5", "ntcir", ["t1"], 0.5).save(tmp_path / "fusion.json")
    a.write(tmp_path / "a.txt")
    b.write(tmp_path / "b.txt")
    r = cli("fuse", tmp_path / "a.txt", tmp_path / "b.txt", "--apply", tmp_path / "fusion.json", "-o",
            tmp_path / "out.txt")
    assert r.code == 1 and "give --tasks DIR or --task-features CSV (the tasks" in r.err, r.err
    with pytest.raises(InputError, match="takes no weights; a gate"):
        Fusion.build(["a", "b"], "combsum", gate=Gate.build("size", 1.0, {"a": 10.0}))
    with pytest.raises(InputError, match="gates run"):
        Fusion.build(["a", "b"], "wsum", gate=Gate.build("size", 1.0, {"c": 10.0}))
    with pytest.raises(InputError, match="finite and > 0"):
        Gate.build("size", 1.0, {"a": 0.0})


# ------------------------------------------------------------------------------------------ task features
def test_task_features_file(tmp_path):
    p = tmp_path / "f.csv"
    p.write_text("topic,size,classes\nt1,100,2\nt2,,4\n")
    feats = read_task_features(p)
    assert feats.values == {"size": {"t1": 100.0}, "classes": {"t1": 2.0, "t2": 4.0}}
    p.write_text("task_id,size\n7,10\n")
    assert read_task_features(p).values == {"size": {"7": 10.0}}


@pytest.mark.parametrize("text, where", [
    ("name,size\nt1,1\n", r"f\.csv:1: field 'topic': missing column"),
    ("topic\nt1\n", r"f\.csv:1: no feature column"),
    ("topic,size\nt1,10\nt2,ten\n", r"f\.csv:3: field 'size': not a number: 'ten'"),
    ("topic,size\nt1,-3\n", r"f\.csv:2: field 'size': must be a finite number > 0"),
    ("topic,size\nt1,nan\n", r"f\.csv:2: field 'size': must be a finite number > 0"),
    ("topic,size\nt1,1\nt1,2\n", r"f\.csv:3: field 'topic': topic 't1' is listed again \(first on line 2\)"),
    ("topic,size\n,1\n", r"f\.csv:2: field 'topic': empty topic id"),
    ("topic,spread\nt1,1\n", r"f\.csv:1: field 'spread': 'spread' is the runs' own feature"),
])
def test_bad_task_features_file_is_one_located_error(tmp_path, text, where):
    p = tmp_path / "f.csv"
    p.write_text(text)
    with pytest.raises(InputError, match=where) as exc:
        read_task_features(p)
    assert "\n" not in str(exc.value)


def _task_folders(root: Path) -> None:
    tasks = {"11": [("a", "x"), ("b", "y"), ("c", "z")], "12": [("a", "x"), ("b", "y"), ("c", "x"), ("d", "y")]}
    for tid, rows in tasks.items():
        d = root / tid
        d.mkdir(parents=True)
        for split in ("train", "val"):
            (d / f"{split}.jsonl").write_text("".join(json.dumps({"text": t, "labels": y}) + "\n" for t, y in rows))


def test_task_features_from_task_folders(tmp_path):
    _task_folders(tmp_path / "tasks")
    feats = task_features_from_tasks(tmp_path / "tasks")
    assert feats.values == {"size": {"11": 3.0, "12": 4.0}, "classes": {"11": 3.0, "12": 2.0}}
    with pytest.raises(InputError, match="given twice"):
        feats.merged(TaskFeatures({"size": {"11": 1.0}}))


# ------------------------------------------------------------------------------------------ selection
@pytest.fixture(scope="module")
def size_zoo():
    """Generated: est_a's noise is proportional to 1/sqrt(task size) (see modelseek.testing.fusion_zoo)."""
    truth, runs = make_fusion_zoo(100, 20, 0, est_a_noise=1.5, size_noise=True)
    return truth, list(runs.values()), zoo_task_features(100, 0)


@pytest.mark.slow(reason="10 s (setup and call) on 2 busy cores")
def test_per_task_fusion_is_chosen_and_beats_the_global_one_where_size_matters(size_zoo):
    truth, runs, feats = size_zoo
    glob = optimize_fusion(runs, truth, folds=5, seed=0, features=feats, per_task=False)
    per = optimize_fusion(runs, truth, folds=5, seed=0, features=feats)
    assert glob.fusion.gate is None
    gate = per.fusion.gate
    assert gate is not None and gate.feature == "size" and gate.gamma > 0 and [r for r, _ in gate.refs] == ["est_a"]
    assert "x (size/" in per.fusion.describe() and per.info["task_features"] == ["size"]
    assert per.info["grid_size"] > glob.info["grid_size"]
    g_cv, p_cv = glob.cv.per_topic, per.cv.per_topic
    assert p_cv[LEARNED].mean() > g_cv[LEARNED].mean() + 0.01     # measured: 0.801 vs 0.777
    summ = per.cv.summary(seed=0)
    assert summ.loc[PLAIN_RRF, "diff_low"] > 0                    # beats plain RRF, interval above 0


@pytest.mark.slow(reason="5 s (setup and call) on 2 busy cores")
def test_uninformative_task_features_fall_back_to_the_global_choice():
    truth, runs = make_fusion_zoo(100, 20, 1)       # sizes generated independently of every run
    feats = zoo_task_features(100, 1)
    glob = optimize_fusion(list(runs.values()), truth, folds=5, seed=0, per_task=False)
    per = optimize_fusion(list(runs.values()), truth, folds=5, seed=0, features=feats)
    assert per.fusion == glob.fusion and per.fusion.gate is None
    assert [f.fusion for f in per.cv.folds] == [f.fusion for f in glob.cv.folds]   # every fold falls back
    pt = per.cv.per_topic
    assert pt[LEARNED].mean() >= pt[PLAIN_RRF].mean()


def test_the_one_se_rule_prefers_an_ungated_fusion_on_a_tie():
    from modelseek.retrieval.fusion.learned import choose

    plain = Fusion.build(["a", "b"], "wsum", "min-max", [0.5, 0.5])
    gated = plain.with_gate(Gate.build("size", 1.0, {"a": 1.0}))
    M = np.array([[0.5, 0.6, 0.7, 0.8], [0.52, 0.58, 0.73, 0.8]])   # gated better by less than one SE
    assert choose(M, [0, 1, 2, 3], [plain, gated], "1se") == 0
    assert choose(M, [0, 1, 2, 3], [plain, gated], "best") == 1


# ------------------------------------------------------------------------------------------ persistence
@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_gated_fusion_saves_loads_and_applies(tmp_path, size_zoo):
    truth, runs, feats = size_zoo
    learned = optimize_fusion(runs, truth, folds=None, features=feats, selection="1se")
    assert learned.fusion.gate is not None
    path = tmp_path / "f.json"
    learned.save(path)
    doc = json.loads(path.read_text())
    assert doc["fusion"]["gate"]["feature"] == "size" and doc["describe"] == learned.fusion.describe()
    back = LearnedFusion.load(path)
    assert back.fusion == learned.fusion
    assert back.apply(runs, features=feats) == learned.apply(runs, features=feats)
    with pytest.raises(InputError, match="task feature size"):
        back.apply(runs)


def test_a_file_saved_before_gates_still_loads():
    old = LearnedFusion.load(OLD_FILE)
    assert old.fusion.gate is None and old.fusion.describe() == "wsum norm=zmuv weights est_a=0.5 est_b=0 prior=0.5"
    truth, runs = make_fusion_zoo(24, 6, 3)
    assert list(old.apply(list(runs.values()))) == truth.task_ids


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_a_damaged_gate_is_a_located_error(tmp_path, size_zoo):
    from modelseek.retrieval.fusion.persist import _digest

    truth, runs, feats = size_zoo
    learned = optimize_fusion(runs, truth, folds=None, features=feats, selection="1se")
    path = tmp_path / "f.json"
    learned.save(path)
    doc = json.loads(path.read_text())
    doc["fusion"]["gate"]["refs"] = {"nope": 3.0}
    doc["sha256"] = _digest(doc)         # a consistent file whose gate names a run the fusion lacks
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"f\.json: field 'gate\.refs': gates run\(s\) nope"):
        LearnedFusion.load(path)


# ------------------------------------------------------------------------------------------ the CLI
@pytest.mark.slow(reason="20 s (setup and call) on 2 busy cores")
def test_cli_learns_saves_and_applies_a_per_task_fusion(cli, tmp_path, size_zoo):
    truth, runs, feats = size_zoo
    for r in runs:
        r.write(tmp_path / f"{r.run_id}.txt")
    truth.to_csv(tmp_path / "gt.csv")
    (tmp_path / "feat.csv").write_text("topic,size\n" + "".join(f"{t},{v:g}\n" for t, v in feats["size"].items()))
    files = [tmp_path / f"{r.run_id}.txt" for r in runs]
    r = cli("fuse", *files, "-o", tmp_path / "out.txt", "--optimize", "-g", tmp_path / "gt.csv",
            "--task-features", tmp_path / "feat.csv", "--save", tmp_path / "f.json")
    assert r.code == 0, r.err
    assert "learned fusion: " in r.out and "x (size/" in r.out
    line = next(x for x in r.out.splitlines() if x.startswith("learned − plain RRF on held-out topics: +"))
    assert "[95% interval +" in line
    r2 = cli("fuse", *files, "-o", tmp_path / "again.txt", "--apply", tmp_path / "f.json",
             "--task-features", tmp_path / "feat.csv")
    assert r2.code == 0, r2.err
    assert ms.read_run(tmp_path / "again.txt") == ms.read_run(tmp_path / "out.txt")
    r3 = cli("fuse", *files, "-o", tmp_path / "x.txt", "--apply", tmp_path / "f.json")
    assert r3.code == 1 and "task feature size" in r3.err and len(r3.err.strip().splitlines()) == 1


def test_cli_notes_task_features_covering_part_of_the_topics(cli, tmp_path):
    """Issue #36: task features for 1 of 24 topics were accepted without a word; the topics left out (base weights
    there) are now named, in text and JSON, for --optimize and --apply."""
    truth, runs = make_fusion_zoo(24, 6, 3)
    files = []
    for r in runs.values():
        r.write(tmp_path / f"{r.run_id}.txt")
        files.append(tmp_path / f"{r.run_id}.txt")
    truth.to_csv(tmp_path / "gt.csv")
    first = truth.task_ids[0]
    (tmp_path / "feat.csv").write_text(f"topic,size\n{first},100\n")
    base = ["fuse", *files, "--optimize", "-g", tmp_path / "gt.csv", "--task-features", tmp_path / "feat.csv",
            "--folds", "2", "--step", "0.5"]
    r = cli(*base, "-o", tmp_path / "o.txt", "--save", tmp_path / "f.json")
    assert r.code == 0, r.err
    left = sorted(set(truth.task_ids) - {first})
    note = next(x for x in r.out.splitlines() if x.startswith("note: "))
    assert note.startswith("note: task feature 'size' covers 1 of 24 topics; left out (base weights there): ")
    assert ", ".join(left[:10]) + " and 13 more" in note
    r = cli(*base, "-o", tmp_path / "o2.txt", "--json")
    assert r.code == 0, r.err
    (note,) = json.loads(r.out)["notes"]
    assert "covers 1 of 24 topics" in note
    r = cli("fuse", *files, "-o", tmp_path / "o3.txt", "--apply", tmp_path / "f.json", "--task-features",
            tmp_path / "feat.csv", "--json")
    assert r.code == 0, r.err
    assert ["covers 1 of 24 topics" in n for n in json.loads(r.out)["notes"]] == [True]
    full = tmp_path / "full.csv"
    full.write_text("topic,size\n" + "".join(f"{t},{i + 1}\n" for i, t in enumerate(truth.task_ids)))
    r = cli("fuse", *files, "-o", tmp_path / "o4.txt", "--apply", tmp_path / "f.json", "--task-features", full,
            "--json")
    assert r.code == 0 and json.loads(r.out)["notes"] == [], r.err


def test_cli_bad_feature_inputs(cli, tmp_path):
    a, b = _two_runs()
    a.write(tmp_path / "a.txt")
    b.write(tmp_path / "b.txt")
    (tmp_path / "bad.csv").write_text("topic,size\nt1,1\nt2,x\n")
    r = cli("fuse", tmp_path / "a.txt", tmp_path / "b.txt", "-o", tmp_path / "o.txt", "--task-features",
            tmp_path / "bad.csv")
    assert r.code == 1 and "needs --optimize or --apply" in r.err
    (tmp_path / "gt.csv").write_text("task_id,model_id,f1\nt1,x,0.5\nt1,y,0.9\n")
    r = cli("fuse", tmp_path / "a.txt", tmp_path / "b.txt", "-o", tmp_path / "o.txt", "--optimize", "-g",
            tmp_path / "gt.csv", "--task-features", tmp_path / "bad.csv", "--folds", "2")
    assert r.code == 1 and "bad.csv:3: field 'size': not a number: 'x'" in r.err
    assert len(r.err.strip().splitlines()) == 1


def test_cli_tasks_folder_gives_size_and_classes(cli, tmp_path):
    _task_folders(tmp_path / "tasks")
    rng = np.random.default_rng(0)
    topics = ["11", "12"]
    a = ms.Run.from_scores({t: {str(d): float(rng.random()) for d in range(6)} for t in topics}, "a")
    b = ms.Run.from_scores({t: {str(d): float(rng.random()) for d in range(6)} for t in topics}, "b")
    a.write(tmp_path / "a.txt")
    b.write(tmp_path / "b.txt")
    (tmp_path / "gt.csv").write_text("task_id,model_id,f1\n" + "".join(f"{t},{d},{rng.random():.4f}\n"
                                                                      for t in topics for d in range(6)))
    r = cli("fuse", tmp_path / "a.txt", tmp_path / "b.txt", "-o", tmp_path / "o.txt", "--optimize", "-g",
            tmp_path / "gt.csv", "--tasks", tmp_path / "tasks", "--folds", "2", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["cv"]["summary"][PLAIN_RRF]["diff"] is not None
    learned = optimize_fusion([a, b], ms.GroundTruth.from_csv(tmp_path / "gt.csv"), folds=None,
                              features=task_features_from_tasks(tmp_path / "tasks"))
    assert learned.info["task_features"] == ["size", "classes"]
