"""``modelseek demo`` shows the default ranker's score as what it is (issue #48 item 6): the expected rank, said."""

from __future__ import annotations

from modelseek import read_runs


def test_demo_shows_the_expected_rank_and_says_what_the_score_is(tmp_path, cli):
    r = cli("demo", "--out", tmp_path)
    assert r.code == 0, r.err
    assert "exp. rank" in r.out and "the run file's score is its negative" in r.out
    run = next(iter(read_runs(tmp_path / "demo-run.txt").values()))
    rows = [ln.split() for ln in r.out.splitlines() if ln[:4].strip().isdigit()]
    shown = {doc: float(v) for _, doc, v, *_ in rows}
    assert len(shown) == 20 and all(v >= 1.0 for v in shown.values())  # ranks, not negative scores
    assert all(abs(shown[e.doc] + e.score) < 0.006 for e in run["demo"])
