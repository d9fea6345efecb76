"""Tournaments and win scores through the API and the CLI."""

import json

import numpy as np
import pytest

from modelseek.duel.config import LeaderboardConfig
from modelseek.duel.engine import Settings
from modelseek.duel.scoring import win_scores
from modelseek.duel.submission import validate_submission
from modelseek.duel.tournament import tournament
from modelseek.core.errors import InputError


def _acc_config():
    return LeaderboardConfig.from_dict({"tasks": {
        "t1": {"category": "C1", "metric": "acc"}, "t2": {"category": "C1", "metric": "acc"},
        "t3": {"category": "C2", "metric": "exact_match"}}})


def _sub(model, vecs):
    keys = {"t1": "acc", "t2": "acc", "t3": "exact_match"}
    return {"metadata": {"model": model},
            "results": {t: {keys[t]: float(np.mean(v))} for t, v in vecs.items()},
            "predictions": {t: [{"doc_id": i, keys[t]: int(x)} for i, x in enumerate(v)] for t, v in vecs.items()}}


def test_win_scores_by_hand():
    cfg = _acc_config()
    ones, zeros, half = [1] * 10, [0] * 10, [1, 0] * 5
    subs = [validate_submission(_sub("A", {"t1": ones, "t2": ones, "t3": zeros}), cfg),
            validate_submission(_sub("B", {"t1": zeros, "t2": half, "t3": zeros}), cfg),
            validate_submission(_sub("C", {"t1": zeros, "t2": zeros, "t3": zeros}), cfg)]
    res = tournament(subs, cfg)
    s = res.scores
    # t1: A beats B and C (constant difference), B = C identical -> no win
    assert (s["A"]["t1"], s["B"]["t1"], s["C"]["t1"]) == (100.0, 0.0, 0.0)
    # t2: the half-right model B against all-right A and all-wrong C: as the t-test decides
    from modelseek.core.stats import paired_ttest
    b_beats_c = paired_ttest(half, zeros) < 0.05
    a_beats_b = paired_ttest(ones, half) < 0.05
    assert s["A"]["t2"] == 50.0 * (1 + a_beats_b)
    assert s["B"]["t2"] == 50.0 * b_beats_c
    # t3: everyone identical -> nobody wins
    assert all(s[m]["t3"] == 0.0 for m in "ABC")
    assert s["A"]["C1"] == (s["A"]["t1"] + s["A"]["t2"]) / 2
    assert s["A"]["overall"] == (s["A"]["C1"] + s["A"]["C2"]) / 2
    assert res.raw["B"]["t2"] == 0.5
    duels = res.duels()
    assert len(duels) == 3 * 3 * 2
    d = next(x for x in duels if x["task"] == "t1" and x["a"] == "A" and x["b"] == "B")
    assert d == {"task": "t1", "a": "A", "b": "B", "significant": True, "p_value": 0.0}


def test_competitors_capped_at_top_k():
    cfg = LeaderboardConfig.from_dict({"tasks": {"t": {"category": "c", "metric": "acc"}}})
    models = ["m0", "m1", "m2", "m3"]
    # m0 beats everyone, m1 beats m2 and m3, m2 beats m3
    P = np.ones((4, 4))
    for i in range(4):
        for j in range(i + 1, 4):
            P[i, j] = 0.0
    np.fill_diagonal(P, np.nan)
    full = win_scores({"t": P}, models, cfg)
    assert [full[m]["t"] for m in models] == pytest.approx([100, 200 / 3, 100 / 3, 0])
    capped = win_scores({"t": P}, models, cfg, max_competitors=2)  # competitors: top 2 = m0, m1
    assert capped["m0"]["t"] == 100.0      # one competitor (m1), beaten
    assert capped["m1"]["t"] == 0.0        # one competitor (m0), lost
    assert capped["m2"]["t"] == 0.0 and capped["m3"]["t"] == 0.0


def test_fdr_only_removes_wins(cfg, sub_dicts):
    subs = [validate_submission(d, cfg) for d in sub_dicts]
    plain = tournament(subs, cfg)
    fdr = tournament(subs, cfg, fdr=True)
    for m in plain.scores:
        for k, v in plain.scores[m].items():
            assert fdr.scores[m][k] <= v + 1e-9


def test_sample_count_mismatch_is_an_error(cfg, sub_dicts):
    import copy

    d = copy.deepcopy(sub_dicts[1])
    d["predictions"]["task_acc"] = d["predictions"]["task_acc"][:-1]
    with pytest.raises(InputError, match="task 'task_acc': model 'model-01' has 79 samples"):
        tournament([validate_submission(sub_dicts[0], cfg), validate_submission(d, cfg)], cfg)


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_cli_tournament_json_shape_and_reproducible(cli, sub_files, meta_file):
    r = cli("duel", "tournament", *sub_files, "--metadata", meta_file, "--seed", "7", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert set(out) == {"duels", "scores", "near_copies"} and out["near_copies"] == {}   # #44: none among these
    assert len(out["duels"]) == 5 * 5 * 4
    assert set(out["duels"][0]) == {"task", "a", "b", "significant", "p_value"}
    tasks = json.loads(meta_file.read_text())["tasks"]
    cats = {v["category"] for v in tasks.values()}
    assert set(out["scores"]["model-00"]) == set(tasks) | cats | {"overall"}
    again = cli("duel", "tournament", *sub_files, "--metadata", meta_file, "--seed", "7", "--json")
    assert again.out == r.out
    other = json.loads(cli("duel", "tournament", *sub_files, "--metadata", meta_file, "--seed", "8", "--json").out)
    p = {(d["task"], d["a"], d["b"]): d["p_value"] for d in out["duels"]}
    q = {(d["task"], d["a"], d["b"]): d["p_value"] for d in other["duels"]}
    # Monte-Carlo tests move with the seed, the t-test does not
    assert any(p[k] != q[k] for k in p if k[0] == "task_avg_mcauroc")
    assert all(p[k] == q[k] for k in p if k[0] == "task_acc")


def test_cli_tournament_table_and_errors(cli, sub_files, meta_file, tmp_path):
    r = cli("duel", "tournament", *sub_files, "--metadata", meta_file)
    assert r.code == 0 and "overall" in r.out.splitlines()[0]
    bad = tmp_path / "bad.json"
    bad.write_text("{nope", encoding="utf-8")
    r = cli("duel", "tournament", sub_files[0], bad, "--metadata", meta_file)
    assert r.code == 1 and "bad.json:1" in r.err and "malformed JSON" in r.err
    r = cli("duel", "validate", *sub_files, "--metadata", meta_file)
    assert r.code == 0 and r.out.count(": ok") == 5


@pytest.mark.slow(reason="4 s (setup and call) on 2 busy cores")
def test_default_settings_pvalues_identical_across_runs(cfg, sub_dicts):
    subs = [validate_submission(d, cfg) for d in sub_dicts[:3]]
    a = tournament(subs, cfg, Settings(seed=11))
    b = tournament(subs, cfg, Settings(seed=11))
    for t in cfg.task_ids:
        np.testing.assert_array_equal(a.pvalues[t], b.pvalues[t])
