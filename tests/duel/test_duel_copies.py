"""Issue #53, items 1 and 2: copies judged on what each metric sees, per task (disguised copies, task-by-task mixes,
5 % and 10 % flips are refused or held naming the entry copied), and families that count once (an army of sparring
partners moves no one; an approved copy never lowers its original nor ranks above it). SQLite and PostgreSQL
(``db_url``), through the library and the CLI."""

import json

import numpy as np
import pytest

from modelseek.duel.copies import TAU, answer_vectors, compare_task, find_copies, task_view
from modelseek.duel.reference import Reference
from modelseek.duel.storage import Store, create_board
from modelseek.duel.submission import TaskSamples, validate_submission
from modelseek.core.errors import InputError
from modelseek.testing.duel import make_submission_dicts, small_config
from modelseek.testing.duel_attacks import disguised, flipped, task_mix


@pytest.fixture(scope="module")
def board_dicts(cfg):
    """Six models with 400 samples per task."""
    return make_submission_dicts(cfg, n_models=6, n_samples=400, seed=11)


def _b(d: dict) -> bytes:
    return json.dumps(d, ensure_ascii=False).encode()


def _board(store) -> dict:
    return {m: (r, s) for r, m, s in store.leaderboard()[["rank", "model", "overall"]].itertuples(index=False)}


def _by_rank(board: dict, k: int) -> str:
    return sorted(board, key=lambda m: (board[m][0], m))[k]


def _src(dicts, model):
    return next(d for d in dicts if d["metadata"]["model"] == model)


def _attacks(cfg, lead: dict, second: dict) -> dict:
    tasks = cfg.task_ids
    return {"disguised": disguised(lead, cfg, "disguised", seed=3),
            "mix": task_mix({t: (lead, second)[k % 2] for k, t in enumerate(tasks)}, cfg, "mix"),
            "flip5": flipped(lead, cfg, "flip5", 0.05, seed=4),
            "flip10": flipped(lead, cfg, "flip10", 0.10, seed=5)}


def test_disguised_copies_mixes_and_flips_are_refused_naming_the_entry(db_url, cfg, board_dicts, cli, tmp_path):
    store = Store(db_url, config=cfg)
    for d in board_dicts[:5]:
        store.submit(_b(d))
    before = _board(store)
    lead, second = _by_rank(before, 0), _by_rank(before, 1)
    attacks = _attacks(cfg, _src(board_dicts, lead), _src(board_dicts, second))
    for d in attacks.values():                  # every metric the leader's (the disguise) or close to it
        assert validate_submission(d, cfg).model == d["metadata"]["model"]
    for name, d in attacks.items():
        with pytest.raises(InputError, match=f"near-copy of the published '{lead}'") as exc:
            store.presubmit(_b(d))
        msg = str(exc.value)
        assert exc.value.field == "predictions" and "\n" not in msg, msg
        if name == "mix":                       # a mix names both entries and the tasks taken from each
            assert f"the published '{second}'" in msg and cfg.task_ids[1] in msg and cfg.task_ids[0] in msg
    assert "identical predictions" not in str(exc.value)
    assert _board(store) == before and store.counts()["pending"] == 0
    p = tmp_path / "disguised.json"
    p.write_text(json.dumps(attacks["disguised"]), encoding="utf-8")
    r = cli("duel", "presubmit", p, "--db", db_url)
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    assert f"near-copy of the published '{lead}'" in r.err and str(p) in r.err
    pv = store.presubmit(_b(board_dicts[5]))    # a genuinely different model is accepted
    assert not any("near-copy" in w for w in pv.warnings)
    store.close()


def test_a_transform_the_metric_cannot_see_leaves_the_verdict_unchanged():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, 200)
    probs = rng.dirichlet(np.ones(3), 200)
    a = TaskSamples(small_config().spec("task_avg_mcauroc").metric, gold=gold, probs=probs)
    sharp = TaskSamples(a.metric, gold=gold, probs=probs ** 4)          # each class column keeps its order
    assert compare_task(task_view(sharp), task_view(a)).identical       # the AUROC's view: identical
    words = rng.integers(20, 400, 200).astype(float)
    ll = -rng.uniform(1, 4, 200) * words
    ppl = small_config().spec("task_word_perplexity").metric
    moved = compare_task(task_view(TaskSamples(ppl, loglik=rng.permutation(ll), words=words)),
                         task_view(TaskSamples(ppl, loglik=ll, words=words)))
    assert moved.how == "reordered" and moved.ratio == 0.0 and moved.upper < TAU   # the same total: a copy
    other = TaskSamples(ppl, loglik=-rng.uniform(1, 4, 200) * words, words=words)
    assert compare_task(task_view(other), task_view(TaskSamples(ppl, loglik=ll, words=words))).upper > TAU


def test_on_a_review_board_they_are_held_naming_the_entry(tmp_path, cfg, board_dicts, cli):
    db = f"sqlite:///{tmp_path / 'rv.db'}"
    store = create_board(db, cfg, Reference.from_submission(validate_submission(board_dicts[0], cfg)), review=True)
    for d in board_dicts[:4]:
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    before = _board(store)
    lead, second = _by_rank(before, 0), _by_rank(before, 1)
    for name, d in _attacks(cfg, _src(board_dicts, lead), _src(board_dicts, second)).items():
        pv = store.presubmit(_b(d))
        assert any(f"near-copy of the published '{lead}'" in w and "held for the reviewer" in w
                   for w in pv.warnings), (name, pv.warnings)
        store.confirm(pv.token)
    queue = store.review_queue()
    assert len(queue) == 4 and all(any(f"near-copy of the published '{lead}'" in f for f in q["flags"])
                                   for q in queue)
    mix = next(q for q in queue if q["model"] == "mix")
    assert any(f"near-copy of the published '{second}'" in f for f in mix["flags"])
    r = cli("duel", "review", "list", "--db", db)
    assert r.code == 0 and f"near-copy of the published '{lead}'" in r.out
    assert _board(store) == before
    store.close()


def test_an_army_of_sparring_partners_moves_no_one(db_url, cfg, board_dicts, cli, tmp_path):
    ref = Reference.from_submission(validate_submission(board_dicts[0], cfg))
    store = create_board(db_url, cfg, ref, review=True)
    for d in board_dicts[:5]:
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    before = _board(store)
    third = _by_rank(before, 2)                 # six sparring partners of the third model: it beats them
    base = _src(board_dicts, third)
    army = [flipped(base, cfg, f"partner-{k}", 0.1 + 0.03 * k, seed=40 + k, worse=True) for k in range(6)]
    plain = Store(f"sqlite:///{tmp_path / 'plain.db'}", config=cfg)
    for d in board_dicts[:5]:
        plain.submit(_b(d))
    for d in army:                              # without review: refused naming the model they derive from
        with pytest.raises(InputError, match=f"near-copy of the published '{third}'"):
            plain.presubmit(_b(d))
    plain.close()
    for d in army:                              # with review: held naming it, then published by the reviewer
        pv = store.presubmit(_b(d))
        assert any(f"'{third}'" in w and "held for the reviewer" in w for w in pv.warnings), pv.warnings
        store.confirm(pv.token)
        store.approve(d["metadata"]["model"], "carol")
    assert store.verify() == []
    after = _board(store)
    assert {m: after[m] for m in before} == before          # every other entry's rank and score, and the model's
    assert all(after[f"partner-{k}"][0] >= after[third][0] and after[f"partner-{k}"][1] <= after[third][1]
               for k in range(6))
    r = cli("duel", "leaderboard", "--db", db_url)
    assert r.code == 0 and "Families count once" in r.out and f"partner-0 ~ {third}" in r.out
    store.close()


def test_approving_a_copy_leaves_the_original_unchanged(tmp_path, cfg, board_dicts):
    db = f"sqlite:///{tmp_path / 'rv.db'}"
    store = create_board(db, cfg, Reference.from_submission(validate_submission(board_dicts[0], cfg)), review=True)
    for d in board_dicts[:5]:
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    before = _board(store)
    lead = _by_rank(before, 0)
    exact = json.loads(json.dumps(_src(board_dicts, lead)))
    exact["metadata"]["model"] = "exact-copy"
    for d in (exact, disguised(_src(board_dicts, lead), cfg, "disguised", seed=3)):
        store.confirm(store.presubmit(_b(d)).token)
        store.approve(d["metadata"]["model"], "carol")
    after = _board(store)
    assert {m: after[m] for m in before} == before          # the leader's score and rank, and everyone else's
    for copy_ in ("exact-copy", "disguised"):
        assert after[copy_][1] <= after[lead][1] and after[copy_][0] >= after[lead][0]
    table = store.leaderboard()
    assert table["model"].tolist().index(lead) < table["model"].tolist().index("exact-copy")
    store.close()


def test_families_count_once_in_the_scores():
    """Win scores by hand: an army of clones that ``a`` beats and its rival ``b`` does not changes no score of
    anyone else, nor ``a``'s; without families it would lift ``a`` above ``b``."""
    from modelseek.duel.leaderboard import leaderboard_frame
    from modelseek.duel.scoring import win_scores

    cfg = small_config(("acc",))
    names = ["b", "a", "c", "d"]
    win = np.full((4, 4), 0.5)
    np.fill_diagonal(win, np.nan)
    win[0, 1:] = 0.001, 0.5, 0.001          # b beats a and d
    win[1, 2:] = 0.001, 0.001               # a beats c and d
    win[2, 3] = 0.001                       # c beats d
    base = win_scores({"task_acc": win}, names, cfg)
    army = np.full((10, 10), 0.5)
    np.fill_diagonal(army, np.nan)
    army[:4, :4] = win
    army[1, 4:] = 0.001                     # a beats its six clones; nobody else does
    names2 = names + [f"a{k}" for k in range(6)]
    plain = win_scores({"task_acc": army}, names2, cfg)
    assert plain["a"]["overall"] > plain["b"]["overall"]                      # the attack, without families
    fam = win_scores({"task_acc": army}, names2, cfg, groups=[0, 1, 2, 3] + [1] * 6)
    assert {m: fam[m] for m in names} == base
    t0, t1 = leaderboard_frame(base, {}, cfg), leaderboard_frame(fam, {}, cfg)
    ranks0, ranks1 = dict(zip(t0["model"], t0["rank"])), dict(zip(t1["model"], t1["rank"]))
    assert {m: ranks1[m] for m in names} == ranks0
    assert all(ranks1[f"a{k}"] >= ranks1["a"] and fam[f"a{k}"]["overall"] <= fam["a"]["overall"] for k in range(6))


@pytest.mark.parametrize("n_samples, spread", [((40, 80), 0.15), (400, 0.15), (30, 0.6)])
def test_no_false_positive_among_independent_models(n_samples, spread):
    """Boards of independent models (own random streams, shared sample difficulty; skills 0.5 +- 0.15, similar, or
    +- 0.6, where a weaker model is worse on nearly every sample): no upload is called a copy of the others (the
    benchmark measures the rate over more seeds)."""
    from modelseek.duel.examples import example_config

    cfg = example_config() if n_samples == (40, 80) else small_config()
    flagged = 0
    for seed in range(4):
        skills = list(0.5 + np.random.default_rng(seed).normal(0.0, spread, 6))
        subs = make_submission_dicts(cfg, n_models=6, n_samples=n_samples, seed=1000 + seed, skills=skills)
        vecs = [answer_vectors(validate_submission(d, cfg).data) for d in subs]
        for j in range(6):
            flagged += bool(find_copies(vecs[j], [(str(i), vecs[i]) for i in range(6) if i != j]))
    assert flagged == 0
