"""Issue #44, a leaderboard whose order means something: copies, near-copies and clones do not rank (refused, or
held for review naming the entry copied) and move no one; duels against near-copies count once; ties share a
rank; plausibility in each metric's own terms; look-alike names over the whole confusables table. SQLite and
PostgreSQL (``db_url``)."""

import copy
import json

import numpy as np
import pytest

from modelseek.duel.reference import Reference
from modelseek.duel.storage import Store, create_board
from modelseek.duel.submission import validate_submission
from modelseek.core.errors import InputError
from modelseek.testing.duel import make_submission_dicts, recompute_results
from modelseek.testing.duel_attacks import flipped as flip_samples


@pytest.fixture(scope="module")
def board_dicts(cfg):
    """Six models with 400 samples per task (1.5 % of a task is 6 samples)."""
    return make_submission_dicts(cfg, n_models=6, n_samples=400, seed=11)


def _perturb(d: dict, cfg, name: str, share: float, seed: int, worse: bool = False) -> dict:
    """``d``'s predictions with ``share`` of each task's samples changed; ``worse``: only correct answers made wrong
    (a slightly worse clone) — the attacker's uploads shipped in :mod:`modelseek.testing.duel_attacks`."""
    return flip_samples(d, cfg, name, share, seed, worse)


def _b(d: dict) -> bytes:
    return json.dumps(d, ensure_ascii=False).encode()


def _board(store) -> list[tuple]:
    return [tuple(r) for r in store.leaderboard()[["rank", "model", "overall"]].itertuples(index=False)]


def test_copies_near_copies_and_clones_are_refused_naming_the_entry(db_url, cfg, board_dicts):
    store = Store(db_url, config=cfg)
    for d in board_dicts[:5]:
        store.submit(_b(d))
    before = _board(store)
    leader = before[0][1]
    src = next(d for d in board_dicts if d["metadata"]["model"] == leader)
    exact = copy.deepcopy(src)
    exact["metadata"]["model"] = "exact-copy"
    with pytest.raises(InputError, match=f"near-copy of the published '{leader}'.*identical predictions") as exc:
        store.presubmit(_b(exact))
    assert exc.value.field == "predictions" and "\n" not in str(exc.value)
    flipped = _perturb(src, cfg, "leader-flipped", 0.015, seed=1)        # 6 of 400 answers per task
    with pytest.raises(InputError, match=f"near-copy of the published '{leader}'"):
        store.presubmit(_b(flipped))
    victim = before[2][1]                                                # clones of the third model
    base = next(d for d in board_dicts if d["metadata"]["model"] == victim)
    for k in range(4):
        clone = _perturb(base, cfg, f"clone-{k}", 0.03, seed=10 + k, worse=True)
        with pytest.raises(InputError, match=f"near-copy of the published '{victim}'"):
            store.presubmit(_b(clone))
    assert _board(store) == before and store.counts()["pending"] == 0
    # a genuinely different model is accepted
    pv = store.presubmit(_b(board_dicts[5]))
    assert pv.model == board_dicts[5]["metadata"]["model"] and not any("near-copy" in w for w in pv.warnings)
    store.close()


def test_on_a_review_board_near_copies_are_held_and_counted_once(db_url, cfg, board_dicts, cli):
    ref = Reference.from_submission(validate_submission(board_dicts[0], cfg))
    store = create_board(db_url, cfg, ref, review=True)
    for d in board_dicts[:4]:
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    before = _board(store)
    victim = before[1][1]
    base = next(d for d in board_dicts if d["metadata"]["model"] == victim)
    tokens = []
    for k in range(4):
        pv = store.presubmit(_b(_perturb(base, cfg, f"clone-{k}", 0.03, seed=20 + k, worse=True)))
        assert any(f"near-copy of the published '{victim}'" in w and "held for the reviewer" in w for w in pv.warnings)
        store.confirm(pv.token)
        tokens.append(pv.token)
    queue = store.review_queue()
    assert len(queue) == 4 and all(any(f"near-copy of the published '{victim}'" in f for f in q["flags"])
                                   for q in queue)
    assert _board(store) == before                                     # held: nothing moved
    r = cli("duel", "review", "list", "--db", db_url)
    assert r.code == 0 and f"near-copy of the published '{victim}'" in r.out and "id " in r.out and "metrics:" in r.out
    # the reviewer publishes all four anyway: duels against the group {victim, clones} count once
    for q in queue:
        store.approve(q["id"], "carol")
    assert store.verify() == []
    copies = store.near_copies()
    assert set(copies[victim]) == {f"clone-{k}" for k in range(4)}
    after = store.leaderboard()
    originals = [m for _, m, _ in before]
    order = [m for m in after["model"] if m in originals]
    assert order == originals                                          # no original changed places
    r = cli("duel", "leaderboard", "--db", db_url)
    assert r.code == 0 and "Families count once" in r.out and f"{victim} ~ " in r.out
    store.close()


def test_duels_against_near_copies_count_once_and_ties_share_a_rank(cfg):
    from modelseek.duel.leaderboard import leaderboard_frame
    from modelseek.duel.scoring import win_scores

    names = ["a", "b", "c1", "c2", "c3", "c4"]
    win = np.full((6, 6), 0.5)
    np.fill_diagonal(win, np.nan)
    win[0, 2:] = 0.001          # a beats the four clones c1..c4
    win[1, 0] = 0.001           # b beats a
    P = {t: win.copy() for t in cfg.task_ids}
    plain = win_scores(P, names, cfg)
    grouped = win_scores(P, names, cfg, groups=[0, 1, 2, 2, 2, 2])
    assert plain["a"]["overall"] == pytest.approx(80.0)                # 4 of 5 opponents
    assert grouped["a"]["overall"] == pytest.approx(50.0)              # the clones are one opponent: 1 of 2
    assert grouped["b"]["overall"] == pytest.approx(50.0)              # b beats a: 1 of {a, c}
    table = leaderboard_frame(grouped, {}, cfg)
    assert table.set_index("model").loc[["a", "b"], "rank"].tolist() == [1, 1]     # a tie shares rank 1
    assert table.set_index("model").loc["c1", "rank"] == 3


def test_the_offline_tournament_applies_the_rule(cfg, board_dicts):
    from modelseek.duel.tournament import tournament

    subs = [validate_submission(d, cfg) for d in board_dicts[:4]]
    res = tournament(subs, cfg)
    base = board_dicts[1]
    clones = [validate_submission(_perturb(base, cfg, f"clone-{k}", 0.03, seed=30 + k, worse=True), cfg)
              for k in range(4)]
    res2 = tournament(subs + clones, cfg)
    assert res2.copies[base["metadata"]["model"]] == [f"clone-{k}" for k in range(4)]
    order = [m for m in res2.table()["model"] if m in res.models]
    assert order == res.table()["model"].tolist()


def test_agreement_bound_separates_genuine_models_from_copies(cfg, board_dicts):
    from modelseek.duel.copies import TAU, agreement, answer_vectors, independent_disagreement

    x, y = np.array([0, 1, 1, 0, 1.0]), np.array([1, 1, 0, 0, 0.0])
    p, q = x.mean(), y.mean()
    assert independent_disagreement(x, y) == pytest.approx(p * (1 - q) + q * (1 - p))   # exact, 0/1 answers
    z = np.random.default_rng(0).random(50)
    w = np.random.default_rng(1).random(60)
    assert independent_disagreement(z, w) == pytest.approx(np.abs(z[:, None] - w[None, :]).mean())
    vecs = [answer_vectors(validate_submission(d, cfg).data) for d in board_dicts]
    ratios = [agreement(vecs[i], vecs[j]).upper for i in range(6) for j in range(i + 1, 6)]
    assert min(ratios) > 2 * TAU                                        # independent models: far from a copy
    flipped = answer_vectors(validate_submission(_perturb(board_dicts[0], cfg, "f", 0.015, 1), cfg).data)
    ag = agreement(vecs[0], flipped)
    assert ag.near_copy and ag.ratio < 0.1


# ------------------------------------------------------------------------------------ plausibility
def _one_line_refusal(cli, tmp_path, meta_file, d, match):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    r = cli("duel", "validate", p, "--metadata", meta_file)
    assert r.code != 0 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    assert match in r.err and str(p) in r.err, r.err


def test_implausible_numbers_are_refused_in_one_line(cli, tmp_path, meta_file, sub_dicts):
    d = copy.deepcopy(sub_dicts[1])
    d["predictions"]["task_word_perplexity"][0]["word_perplexity"][1] = 1e300
    _one_line_refusal(cli, tmp_path, meta_file, d, "number of words must be a whole number")
    for words in (1e-300, 12.5):
        d = copy.deepcopy(sub_dicts[1])
        d["predictions"]["task_word_perplexity"][3]["word_perplexity"][1] = words
        _one_line_refusal(cli, tmp_path, meta_file, d, "predictions.task_word_perplexity[3]")
    for probs, match in (([-5, 3, 3], "outside [0, 1]"), ([0.9, 0.9, 0.9], "sum to 2.7"),
                         ([9, 9, 9], "outside [0, 1]")):
        d = copy.deepcopy(sub_dicts[1])
        d["predictions"]["task_avg_mcauroc"][2]["avg_mcauroc"][1] = probs
        _one_line_refusal(cli, tmp_path, meta_file, d, match)
    for n in (-1, 0, 1e300):
        d = copy.deepcopy(sub_dicts[1])
        d["metadata"]["n_params"] = n
        _one_line_refusal(cli, tmp_path, meta_file, d, "metadata.n_params")


def test_word_counts_are_the_references(db_url, cfg, sub_dicts):
    store = create_board(db_url, cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)))
    d = copy.deepcopy(sub_dicts[1])
    rec = d["predictions"]["task_word_perplexity"][4]
    rec["word_perplexity"] = [rec["word_perplexity"][0], rec["word_perplexity"][1] * 1000]   # more words: lower ppl
    d = recompute_results(d, cfg)
    with pytest.raises(InputError, match="word counts are the reference's") as exc:
        store.presubmit(_b(d))
    assert exc.value.field == "predictions.task_word_perplexity[4]"
    assert store.counts()["pending"] == 0
    store.close()


def test_a_small_board_still_flags_the_implausible(tmp_path, cfg):
    from modelseek.duel.review import plausibility_flags

    published = {f"m{k}": {"task_acc": 0.55 + 0.04 * k, "task_avg_mcauroc": 0.62 + 0.03 * k,
                           "task_word_perplexity": 30 - 2 * k, "task_rouge_raw_r2_mid_f": 0.12 + 0.01 * k,
                           "task_exact_match": 0.3 + 0.02 * k} for k in range(7)}        # best AUROC 0.80
    genuine = {"task_acc": 0.82, "task_avg_mcauroc": 0.81, "task_word_perplexity": 17.5,
               "task_rouge_raw_r2_mid_f": 0.185, "task_exact_match": 0.40}     # a new best, not on every task
    assert plausibility_flags(genuine, published, cfg) == []
    fake = {**genuine, "task_avg_mcauroc": 0.999}
    flags = plausibility_flags(fake, published, cfg)
    assert any("far beyond the best" in f and "task_avg_mcauroc" in f for f in flags), flags
    for task, value in (("task_word_perplexity", 9.0), ("task_rouge_raw_r2_mid_f", 0.36)):   # half / twice the best
        flags = plausibility_flags({**genuine, task: value}, published, cfg)
        assert any(task in f for f in flags), (task, flags)


def test_an_implausible_upload_is_flagged_in_the_queue(tmp_path, cfg, sub_dicts):
    ref = Reference.from_submission(validate_submission(sub_dicts[0], cfg))
    store = create_board(tmp_path / "q.db", cfg, ref, review=True)
    dicts = make_submission_dicts(cfg, n_models=7, n_samples=80, seed=0)
    for d in dicts[:5]:
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    fake = copy.deepcopy(dicts[5])
    fake["metadata"]["model"] = "too-good-auroc"
    for r in fake["predictions"]["task_avg_mcauroc"]:
        g, probs = r["avg_mcauroc"]
        k = len(probs)
        r["avg_mcauroc"] = [g, [0.998 if c == g else 0.002 / (k - 1) for c in range(k)]]
    fake = recompute_results(fake, cfg)
    store.confirm(store.presubmit(_b(fake)).token)
    (q,) = store.review_queue()
    assert q["metrics"]["task_avg_mcauroc"] > 0.99
    assert any("far beyond the best" in f and "task_avg_mcauroc" in f for f in q["flags"]), q["flags"]
    store.close()


def test_category_view_is_ordered_by_the_category_and_exports_are_formula_safe(cfg):
    from modelseek.duel.leaderboard import board_csv, board_json, formula_safe, leaderboard_frame

    scores = {"a": {"overall": 60.0, "Cat A": 90.0, "Cat B": 30.0},
              "b": {"overall": 70.0, "Cat A": 40.0, "Cat B": 100.0},
              "c": {"overall": 50.0, "Cat A": 40.0, "Cat B": 60.0}}
    for s in scores.values():
        s.update({t: 0.0 for t in cfg.task_ids})
    overall = leaderboard_frame(scores, {}, cfg, "overall")
    assert overall["model"].tolist() == ["b", "a", "c"]
    cat = leaderboard_frame(scores, {}, cfg, "Cat A")
    assert cat["model"].tolist() == ["a", "b", "c"] and cat["rank"].tolist() == [1, 2, 2]     # b, c tie
    for bad in ("=1+1", "+SUM(A1)", "-2+3", "@SUM(A1)", "\tx"):
        assert formula_safe(bad) == "'" + bad
    assert formula_safe("model-1") == "model-1" and formula_safe(-0.5) == -0.5
    df = overall.assign(model=["=HYPERLINK(\"x\")", "@SUM(1)", "plain"])
    assert "'=HYPERLINK" in board_csv(df) and "'@SUM(1)" in board_json(df) and ",-" not in board_csv(df)
