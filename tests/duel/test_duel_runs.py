"""The duel leaderboard over model-retrieval runs (nDCG@5 t-tests per criticality tier)."""

import json

import numpy as np
import pytest

from modelseek.retrieval.data.run import Run, write_runs
from modelseek.retrieval.data.truth import GroundTruth
from modelseek.duel.runs import runs_tournament, tier_task
from modelseek.retrieval.evaluation import evaluate
from modelseek.core.stats import paired_ttest


def _runs(truth):
    """An oracle (ranks by true F1), its reverse, and a noisy oracle."""
    rng = np.random.default_rng(0)
    oracle, reverse, noisy = {}, {}, {}
    for t in truth.task_ids:
        f1 = truth.f1(t)
        oracle[t] = dict(f1)
        reverse[t] = {m: -v for m, v in f1.items()}
        noisy[t] = {m: v + rng.normal(0, 0.05) for m, v in f1.items()}
    return [Run.from_scores(oracle, "oracle"), Run.from_scores(reverse, "reverse"), Run.from_scores(noisy, "noisy")]


def test_runs_tournament_by_tier(tiny_layout):
    truth = GroundTruth.from_csv(tiny_layout / "ground-truth.csv")
    runs = _runs(truth)
    res = runs_tournament(runs, truth)
    tiers = [c for c in ("low", "medium", "high") if c in res.config.categories]
    assert tiers and res.config.categories == tiers
    for tier in tiers:
        vecs = {}
        for r in runs:
            df = evaluate(r, truth, ["ndcg@5"]).per_topic
            vecs[r.run_id] = df.loc[df["tier"] == tier, "ndcg@5"].to_numpy()
        wins = sum(paired_ttest(vecs["oracle"], vecs[o]) < 0.05 for o in ("reverse", "noisy"))
        assert res.scores["oracle"][tier] == pytest.approx(wins / 2 * 100)
        assert res.raw["oracle"][tier_task(tier)] == pytest.approx(vecs["oracle"].mean())
    assert res.scores["oracle"]["overall"] >= res.scores["reverse"]["overall"]
    assert res.scores["reverse"]["overall"] == 0.0


def test_cli_runs(cli, tiny_layout, tmp_path):
    truth = GroundTruth.from_csv(tiny_layout / "ground-truth.csv")
    path = tmp_path / "runs.txt"
    write_runs(path, _runs(truth))
    r = cli("duel", "runs", path, "--ground-truth", tiny_layout / "ground-truth.csv", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert set(out["scores"]) == {"oracle", "reverse", "noisy"}
    assert {d["a"] for d in out["duels"]} == {"oracle", "reverse", "noisy"}
    r = cli("duel", "runs", path, "--ground-truth", tiny_layout / "ground-truth.csv")
    assert r.code == 0 and "oracle" in r.out
