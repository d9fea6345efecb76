"""Issue #35, the board's trust model: the operator's reference fixes each task's samples and gold labels
(squatting and fabricated labels refused), numbers are finite (inf perplexity refused), look-alike names
across scripts are one model, a team belongs to the identity that first published under it, and with
``--review`` a confirmed upload waits for ``duel review approve``. SQLite and PostgreSQL (``db_url``)."""

import copy
import json

import pytest

from modelseek.duel.reference import Reference
from modelseek.duel.storage import Store, create_board
from modelseek.core.errors import InputError
from modelseek.testing.duel import renamed
from modelseek.testing.duel import recompute_results


def _squatter(sub: dict, cfg) -> dict:
    """The issue's squatting upload: 3 fabricated doc_ids per task (1000000...), results recomputed."""
    bad = copy.deepcopy(sub)
    bad["metadata"]["model"] = "squatter"
    for t in cfg.task_ids:
        bad["predictions"][t] = [{**r, "doc_id": 1000000 + k} for k, r in enumerate(bad["predictions"][t][:3])]
        for k, r in enumerate(bad["predictions"][t]):
            if "avg_mcauroc" in r:
                r["avg_mcauroc"] = [k, r["avg_mcauroc"][1]]         # one sample of each class
    return recompute_results(bad, cfg)


@pytest.fixture
def ref_file(tmp_path, sub_dicts):
    p = tmp_path / "reference.json"
    p.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")       # a submission the operator trusts
    return p


def test_squatting_upload_is_refused_on_a_board_with_a_reference(cli, tmp_path, db_url, cfg, sub_dicts, ref_file,
                                                                 meta_file):
    r = cli("duel", "db", "init", "--db", db_url, "--metadata", meta_file, "--reference", ref_file)
    assert r.code == 0, r.err
    assert "reference fixed" in r.out
    squat = tmp_path / "squat.json"
    squat.write_text(json.dumps(_squatter(sub_dicts[1], cfg)), encoding="utf-8")
    r = cli("duel", "presubmit", squat, "--db", db_url, "--confirm")
    assert r.code != 0
    assert "doc_id 0 is missing" in r.err and "reference has 80 samples, this upload 3" in r.err
    assert str(squat) in r.err and "predictions.task_acc" in r.err and len(r.err.strip().splitlines()) == 1
    good = tmp_path / "good.json"
    good.write_text(json.dumps(sub_dicts[2]), encoding="utf-8")
    r = cli("duel", "presubmit", good, "--db", db_url, "--confirm")          # the genuine one is published
    assert r.code == 0, r.err
    store = Store(db_url)
    assert [m for _, m in store.published()] == ["model-02"] and store.verify() == []
    store.close()


def test_gold_labels_and_class_count_come_from_the_reference(db_url, cfg, sub_dicts):
    store = create_board(db_url, cfg, Reference.from_submission(_validated(sub_dicts[0], cfg)))
    task = "task_avg_mcauroc"
    liar = copy.deepcopy(sub_dicts[1])        # gold = the model's argmax: AUROC fabricated upwards
    for r in liar["predictions"][task]:
        probs = r["avg_mcauroc"][1]
        r["avg_mcauroc"][0] = probs.index(max(probs))
    liar = recompute_results(liar, cfg)
    with pytest.raises(InputError, match=r"has gold class \d, the operator's reference \d") as exc:
        store.presubmit(json.dumps(liar).encode(), "liar.json")
    assert exc.value.field.startswith(f"predictions.{task}[")
    wide = copy.deepcopy(sub_dicts[1])        # 5,000 classes where the benchmark has 3
    for r in wide["predictions"][task]:
        r["avg_mcauroc"][1] = r["avg_mcauroc"][1] + [0.0] * (5000 - len(r["avg_mcauroc"][1]))
    wide = recompute_results(wide, cfg)
    with pytest.raises(InputError, match="5000 class probabilities per sample, the operator's reference has 3"):
        store.presubmit(json.dumps(wide).encode(), "wide.json")
    assert store.counts()["pending"] == 0
    store.close()


def _validated(d, cfg):
    from modelseek.duel.submission import validate_submission

    return validate_submission(d, cfg)


def test_gold_file_reference_and_its_errors(tmp_path, cfg, sub_dicts):
    sub = _validated(sub_dicts[0], cfg)
    ref = Reference.from_submission(sub)
    p = tmp_path / "gold.json"
    p.write_text(ref.to_json(), encoding="utf-8")
    again = Reference.load(p, cfg)
    assert again.to_json() == ref.to_json() and again.tasks["task_avg_mcauroc"].n_classes == 3
    obj = json.loads(ref.to_json())
    obj["reference"]["task_acc"]["gold"] = [0] * 80
    p.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(InputError, match="only checked on avg_mcauroc tasks") as exc:
        Reference.load(p, cfg)
    assert exc.value.field == "reference.task_acc" and str(p) in str(exc.value)
    obj = json.loads(ref.to_json())
    obj["reference"]["task_avg_mcauroc"]["gold"][7] = 3
    p.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(InputError, match=r"class index in 0\.\.2, got 3") as exc:
        Reference.load(p, cfg)
    assert exc.value.field == "reference.task_avg_mcauroc.gold[7]"
    obj["reference"]["task_avg_mcauroc"]["gold"][7] = 2
    del obj["reference"]["task_exact_match"]
    p.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(InputError, match="missing task 'task_exact_match'"):
        Reference.load(p, cfg)


def test_serve_refuses_a_board_without_reference_except_the_demo(cli, tmp_path, cfg, sub_dicts, meta_file):
    db = tmp_path / "plain.db"
    Store(db, config=cfg).close()
    r = cli("duel", "serve", "--db", db, "--metadata", meta_file, "--port", "1")
    assert r.code != 0 and "has no reference" in r.err and "duel db init" in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = cli("duel", "db", "init", "--db", db, "--metadata", meta_file, "--reference", tmp_path / "none.json")
    assert r.code != 0 and "no such reference file" in r.err
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    r = cli("duel", "db", "init", "--db", db, "--metadata", meta_file, "--reference", ref)
    assert r.code != 0 and "a board already exists here" in r.err
    r = cli("duel", "example", tmp_path / "ex", "--db", tmp_path / "ex" / "demo.db")
    assert r.code == 0, r.err
    demo = Store(tmp_path / "ex" / "demo.db")
    assert demo.demo and demo.reference is None and len(demo.published()) == 3
    demo.check_servable()                                    # the demo board needs no reference
    demo.close()
    from modelseek.duel.config import LeaderboardConfig

    ex_cfg = LeaderboardConfig.load(tmp_path / "ex" / "metadata.json")
    board = create_board(tmp_path / "ex" / "board.db", ex_cfg, tmp_path / "ex" / "reference.json")
    board.check_servable()
    assert board.reference is not None and set(board.reference.tasks) == set(ex_cfg.task_ids)
    board.close()


def test_a_reference_is_fixed_at_creation(tmp_path, cfg, sub_dicts):
    ref = Reference.from_submission(_validated(sub_dicts[0], cfg))
    Store(tmp_path / "a.db", config=cfg).close()
    with pytest.raises(InputError, match="this board has none"):
        Store(tmp_path / "a.db", reference=ref)
    store = create_board(tmp_path / "b.db", cfg, ref)
    store.close()
    again = Store(tmp_path / "b.db")
    assert again.reference is not None and again.reference.to_json() == ref.to_json() and again.verify() == []
    again.close()


def test_inf_perplexity_upload_is_refused(db_url, cfg, sub_dicts):
    bad = copy.deepcopy(sub_dicts[1])
    bad["predictions"]["task_word_perplexity"][0]["word_perplexity"] = [-1e308, 1]
    store = Store(db_url, config=cfg)
    with pytest.raises(InputError, match="perplexity overflows a float") as exc:
        store.presubmit(json.dumps(bad).encode(), "inf.json")
    assert exc.value.field == "predictions.task_word_perplexity[0].word_perplexity"
    # the largest per-word loss that is accepted keeps every computed value finite
    edge = copy.deepcopy(sub_dicts[1])
    edge["predictions"]["task_word_perplexity"][0]["word_perplexity"] = [-699.0, 1]
    edge = recompute_results(edge, cfg)
    pv = store.presubmit(json.dumps(edge).encode(), "edge.json")
    import math

    assert all(math.isfinite(v) for v in pv.scores.values())
    assert store.counts()["pending"] == 1
    store.close()


def test_perplexity_cross_check_is_absolute(cfg, sub_dicts):
    from modelseek.duel.submission import CROSS_CHECK_PERPLEXITY_ABS, validate_submission

    d = copy.deepcopy(sub_dicts[1])
    res = d["results"]["task_word_perplexity"]
    res["word_perplexity"] += 0.9 * CROSS_CHECK_PERPLEXITY_ABS
    validate_submission(d, cfg)
    res["word_perplexity"] += 0.2 * CROSS_CHECK_PERPLEXITY_ABS     # 1 % of ~16 would still have passed
    with pytest.raises(InputError, match=r"tolerance 0\.05"):
        validate_submission(d, cfg)


_named = renamed  # an upload under another name (and team)


@pytest.mark.parametrize("look_alike", ["vi\u0441tim-model",      # Cyrillic es
                                        "victim-m\u03bfdel",      # Greek omicron
                                        "VICTIM-MODE1"])          # case + digit one for l
def test_look_alikes_across_scripts_are_refused(db_url, cfg, sub_dicts, look_alike):
    store = Store(db_url, config=cfg)
    store.submit(_named(sub_dicts[0], "victim-model"))
    # a name mixing scripts is refused as such (#44); a look-alike in one script as a look-alike
    with pytest.raises(InputError, match=r"looks like the published 'victim-model'|must be written in one script"
                       ) as exc:
        store.presubmit(_named(sub_dicts[1], look_alike))
    assert exc.value.field == "metadata.model"
    assert [m for _, m in store.published()] == ["victim-model"] and store.counts()["pending"] == 0
    store.close()


def test_team_is_bound_to_the_identity_that_first_published_under_it(db_url, cfg, sub_dicts):
    store = Store(db_url, config=cfg)
    pv = store.presubmit(_named(sub_dicts[0], "gpt-x", team="OpenAI"), session="s" * 40, identity="alice")
    store.confirm(pv.token, session="s" * 40, identity="alice")
    for k, team in enumerate(("OpenAI", "openai", "\u041epenAI")):       # same, case, Cyrillic O
        with pytest.raises(InputError, match=r"belongs to the signed-in user who first published|in one script") as exc:
            store.presubmit(_named(sub_dicts[1], f"mallory-{k}", team=team), session="m" * 40, identity="mallory")
        assert exc.value.field == "metadata.team"
    pv = store.presubmit(_named(sub_dicts[2], "gpt-y", team="OpenAI"), session="s" * 40, identity="alice")
    store.confirm(pv.token, session="s" * 40, identity="alice")
    pv = store.presubmit(_named(sub_dicts[3], "mallory-own", team="Mallory Labs"), session="m" * 40,
                         identity="mallory")
    store.confirm(pv.token, session="m" * 40, identity="mallory")
    assert [m for _, m in store.published()] == ["gpt-x", "gpt-y", "mallory-own"] and store.verify() == []
    store.close()


def test_review_queue_publishes_only_approved_submissions(cli, tmp_path, db_url, cfg, sub_dicts, ref_file,
                                                          meta_file):
    r = cli("duel", "db", "init", "--db", db_url, "--metadata", meta_file, "--reference", ref_file, "--review")
    assert r.code == 0 and "publication after review" in r.out, r.err
    files = []
    for d in sub_dicts[:3]:
        files.append(tmp_path / f"{d['metadata']['model']}.json")
        files[-1].write_text(json.dumps(d), encoding="utf-8")
    for f in files:
        r = cli("duel", "presubmit", f, "--db", db_url, "--confirm")
        assert r.code == 0 and "awaiting review" in r.out, r.err
    r = cli("duel", "leaderboard", "--db", db_url, "--json")
    assert r.code == 0 and json.loads(r.out) == []                     # nothing published before approval
    r = cli("duel", "review", "list", "--db", db_url, "--json")
    queue = json.loads(r.out)
    assert [q["model"] for q in queue] == ["model-00", "model-01", "model-02"]
    r = cli("duel", "review", "approve", "model-01", "--db", db_url, "--by", "carol")
    assert r.code == 0 and "approved and published 'model-01'" in r.out, r.err
    r = cli("duel", "review", "reject", "model-02", "--db", db_url, "--by", "carol")
    assert r.code != 0 and "--why" in r.err                             # a rejection says why
    r = cli("duel", "review", "reject", "model-02", "--db", db_url, "--by", "carol", "--why", "fabricated")
    assert r.code == 0, r.err
    r = cli("duel", "review", "approve", "model-02", "--db", db_url, "--by", "carol")
    assert r.code != 0 and "no submission 'model-02' awaits review" in r.err
    r = cli("duel", "review", "approve", "model-00", "--db", db_url, "--by", "dave")
    assert r.code == 0, r.err
    r = cli("duel", "leaderboard", "--db", db_url, "--json")
    assert sorted(row["model"] for row in json.loads(r.out)) == ["model-00", "model-01"]
    store = Store(db_url)
    assert store.verify() == [] and store.counts()["pending"] == 0
    with store.engine.connect() as c:
        rows = c.execute(store._sa.select(store.t["reviews"].c.model, store.t["reviews"].c.decision,
                                          store.t["reviews"].c.reviewer)
                         .order_by(store.t["reviews"].c.decided_at)).all()
    assert [tuple(x) for x in rows] == [("model-01", "approved", "carol"), ("model-02", "rejected", "carol"),
                                        ("model-00", "approved", "dave")]
    # the approval is in the hash chain: changing the reviewer is detected
    with store.engine.connect() as c:
        chain_rows = c.execute(store._sa.select(store.t["chain"].c.seq)).all()
    assert len(chain_rows) == 3
    store.close()
    r = cli("duel", "db", "verify", "--db", db_url)
    assert r.code == 0, r.err


def test_approval_is_chained_and_flags_shown(tmp_path, cfg, sub_dicts):
    import sqlite3

    from modelseek.duel.submission import validate_submission

    db = tmp_path / "rv.db"
    store = create_board(db, cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)), review=True)
    for d in sub_dicts[:4]:
        pv = store.presubmit(json.dumps(d).encode())
        store.confirm(pv.token)
        assert store.awaits_review(d["metadata"]["model"])
    for m in ("model-00", "model-01", "model-02"):
        store.approve(m, "carol")
    best = copy.deepcopy(sub_dicts[4])            # the fabricated upload: everything correct
    best["metadata"]["model"] = "too-good"
    for t in ("task_acc", "task_exact_match"):
        for r in best["predictions"][t]:
            r[t.split("_", 1)[1]] = 1
    best = recompute_results(best, cfg)
    pv = store.presubmit(json.dumps(best).encode())
    store.confirm(pv.token)
    flags = {q["model"]: q["flags"] for q in store.review_queue()}
    assert any("at the metric's bound on 2 task(s)" in f for f in flags["too-good"]), flags
    assert store.leaderboard()["model"].tolist().count("too-good") == 0
    store.close()
    conn = sqlite3.connect(db)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'reviews%'"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE reviews SET reviewer = 'mallory' WHERE model = 'model-01'")
    conn.commit()
    conn.close()
    problems = Store(db).verify()
    assert any("chain row 2" in p and "model-01" in p for p in problems), problems
    assert any("reviews_no_update is missing" in p for p in problems)


def test_a_confirm_recomputes_its_preview_at_most_once(db_url, cfg, sub_dicts):
    """Under load the board changes between every recomputation and the next confirm: the confirm after one
    recomputation publishes (its duels against the models published meanwhile computed in the confirm)."""
    from modelseek.duel.publish import StalePreview
    from modelseek.duel.tournament import tournament
    from modelseek.duel.submission import validate_submission

    store = Store(db_url, config=cfg)
    pv = store.presubmit(json.dumps(sub_dicts[0]).encode(), session="s" * 40)
    store.submit(json.dumps(sub_dicts[1]).encode())
    with pytest.raises(StalePreview):
        store.confirm(pv.token, session="s" * 40)
    store.refresh(pv.token, session="s" * 40)
    store.submit(json.dumps(sub_dicts[2]).encode())              # published after the recomputation
    assert store.confirm(pv.token, session="s" * 40) == "model-00"
    full = tournament([validate_submission(d, cfg) for d in sub_dicts[:3]], cfg)
    assert store.scores() == full.scores and store.verify() == []
    store.close()


def test_a_large_bootstrap_plan_in_chunks_equals_the_whole_plan(cfg):
    """Plans over PLAN_CELLS are generated in chunks: the same resampling counts as the whole plan, so the
    profile equals the bootstrap of the whole plan (up to the BLAS's rounding of a shorter product)."""
    import numpy as np

    from modelseek.duel import engine
    from modelseek.duel.submission import TaskSamples
    from modelseek.core.stats import bootstrap
    from modelseek.core.stats.seeding import derive_rng

    spec = cfg.spec("task_rouge_raw_r2_mid_f")
    settings = engine.Settings(n_resamples=1000)
    n = engine.PLAN_CELLS // settings.n_resamples + 7                # just over the cached size
    values = np.random.default_rng(3).random(n)
    got = engine.profile(spec, TaskSamples(spec.metric, values=values), "m", settings)
    counts = bootstrap.resample_counts(n, settings.n_resamples, derive_rng(settings.seed, spec.task, "bootstrap-plan"))
    assert np.allclose(got.vector, bootstrap.resampled_mean(values, counts), rtol=1e-13, atol=0)
    ppl = cfg.spec("task_word_perplexity")
    ll, w = -np.random.default_rng(4).random(n) * 50, np.random.default_rng(5).integers(1, 30, n).astype(float)
    got = engine.profiles(ppl, [TaskSamples(ppl.metric, loglik=ll, words=w)] * 2, ["a", "b"], settings)
    c2 = bootstrap.resample_counts(n, settings.n_resamples, derive_rng(settings.seed, ppl.task, "bootstrap-plan"))
    assert np.allclose(got[0].vector, bootstrap.resampled_perplexity(ll, w, c2), rtol=1e-13, atol=0)


def test_canonical_json_written_from_arrays_equals_json_dumps_of_the_records():
    """The canonical form (stored, hashed) is written task by task from the arrays; it is byte for byte the
    sorted-keys JSON of the records, with integer and name doc_ids and non-ASCII text."""
    from modelseek.duel.submission import validate_submission
    from modelseek.testing.duel import make_submission_dicts, small_config

    cfg = small_config(("acc", "avg_mcauroc", "word_perplexity", "rouge_raw_r2_mid_f", "exact_match", "ndcg@5"))
    for d in make_submission_dicts(cfg, n_models=2, n_samples=40, seed=2):
        for variant in (d, copy.deepcopy(d)):
            if variant is not d:
                variant["metadata"]["description"] = "é ünï \u2603"
                for t in variant["predictions"]:
                    for k, r in enumerate(variant["predictions"][t]):
                        r["doc_id"] = f"dóc-{k}" if k % 2 else k
            s = validate_submission(variant, cfg)
            assert s.to_json() == json.dumps(s.to_dict(), sort_keys=True, separators=(",", ":"))
            ids = [r["doc_id"] for r in json.loads(s.to_json())["predictions"]["task_acc"]]
            assert ids[:2] == ([0, 1] if variant is d else [0, 2]) and ("dóc-1" in ids) == (variant is not d)


def test_validate_against_a_reference_before_uploading(cli, tmp_path, cfg, sub_dicts, ref_file, meta_file):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(sub_dicts[1]), encoding="utf-8")
    squat = tmp_path / "squat.json"
    squat.write_text(json.dumps(_squatter(sub_dicts[2], cfg)), encoding="utf-8")
    r = cli("duel", "validate", good, "--metadata", meta_file, "--reference", ref_file)
    assert r.code == 0 and ": ok" in r.out
    r = cli("duel", "validate", squat, "--metadata", meta_file, "--reference", ref_file)
    assert r.code == 1 and str(squat) in r.err and "the operator's reference has 80 samples" in r.err
