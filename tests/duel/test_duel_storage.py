"""Stored leaderboards: pre-submission, confirmation, immutability, concurrency, nothing stored on bad input."""

import copy
import json
import threading

import numpy as np
import pytest

from modelseek.duel.config import LeaderboardConfig
from modelseek.duel.engine import Settings
from modelseek.duel.storage import Store
from modelseek.duel.submission import validate_submission
from modelseek.duel.tournament import tournament
from modelseek.core.errors import InputError
from modelseek.testing.duel import publish_like_a_user, recompute_results

sa = pytest.importorskip("sqlalchemy")


def _b(d) -> bytes:
    return json.dumps(d).encode()


@pytest.fixture
def store(tmp_path, cfg):
    s = Store(tmp_path / "lb.db", config=cfg, settings=Settings(seed=3))
    yield s
    s.close()


def test_incremental_equals_full_tournament(store, cfg, sub_dicts):
    for d in sub_dicts[:4]:
        store.submit(_b(d))
    pv = store.presubmit(_b(sub_dicts[4]))
    full = tournament([validate_submission(d, cfg) for d in sub_dicts], cfg, Settings(seed=3))
    assert pv.scores == full.scores["model-04"]
    assert list(pv.table["model"]) == list(full.table()["model"])
    assert "model-04" not in set(store.leaderboard()["model"])      # not published before confirmation
    # the new model ran only its own 2 x N duels per task (pending: one row holds both directions)
    assert store.counts()["duels"] == len(cfg.task_ids) * 4 * 3
    assert store.counts()["pending_duels"] == len(cfg.task_ids) * 4
    store.confirm(pv.token)
    assert store.scores() == full.scores
    details = store.duel_details("model-04")
    assert len(details) == 4 * len(cfg.task_ids)
    row = details[(details.task == "task_acc") & (details.opponent == "model-00")].iloc[0]
    i, j = full.models.index("model-04"), full.models.index("model-00")
    assert row["p_value (beats opponent)"] == pytest.approx(full.pvalues["task_acc"][i, j], abs=1e-6)


def test_published_submissions_are_immutable(store, sub_dicts):
    pv = store.submit(_b(sub_dicts[0]))
    with pytest.raises(InputError, match="already published"):
        store.presubmit(_b(sub_dicts[0]))
    with pytest.raises(InputError, match="already published"):
        store.confirm(pv.token)
    with pytest.raises(InputError, match="already published"):
        store.discard(pv.token)
    with store.engine.begin() as c, pytest.raises(sa.exc.IntegrityError, match="immutable"):
        c.execute(sa.text("UPDATE submissions SET model = 'other'"))
    with store.engine.begin() as c, pytest.raises(sa.exc.IntegrityError, match="immutable"):
        c.execute(sa.text("DELETE FROM submissions"))
    store.submit(_b(sub_dicts[1]))
    for stmt in ("DELETE FROM profiles", "DELETE FROM duels", "UPDATE duels SET p_value = 0",
                 "UPDATE profiles SET raw = 0"):
        with store.engine.begin() as c, pytest.raises(sa.exc.IntegrityError, match="immutable"):
            c.execute(sa.text(stmt))
    pv = store.presubmit(_b(sub_dicts[2]))
    store.discard(pv.token)                      # pending rows can still be dropped
    assert store.submission("model-00").sha256 == validate_submission(sub_dicts[0], store.config).sha256


def test_discard_removes_pending(store, sub_dicts):
    store.submit(_b(sub_dicts[0]))
    before = store.counts()
    pv = store.presubmit(_b(sub_dicts[1]))
    store.discard(pv.token)
    assert store.counts() == before


@pytest.mark.parametrize("case", ["missing task", "sample count", "malformed", "oversized"])
def test_bad_input_stores_nothing(tmp_path, cfg, sub_dicts, case):
    store = Store(tmp_path / "lb.db", config=cfg, max_bytes=5_000_000)
    store.submit(_b(sub_dicts[0]))
    before = store.counts()
    d = copy.deepcopy(sub_dicts[1])
    if case == "missing task":
        d["predictions"].pop("task_rouge_raw_r2_mid_f")
        data, msg = _b(d), "missing task"
    elif case == "sample count":
        d["predictions"]["task_avg_mcauroc"] = d["predictions"]["task_avg_mcauroc"][:50]
        data, msg = _b(recompute_results(d, cfg)), "doc_id 50 is missing .*80 samples, this one 50"
    elif case == "malformed":
        data, msg = _b(d)[:-10], "malformed JSON"
    else:
        data, msg = b" " * 5_000_001, "too large"
    with pytest.raises(InputError, match=msg):
        store.presubmit(data)
    assert store.counts() == before
    store.close()


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_concurrent_presubmissions_and_confirmations(tmp_path, cfg, sub_dicts):
    url = f"sqlite:///{tmp_path / 'lb.db'}"
    Store(url, config=cfg).submit(_b(sub_dicts[0]))
    errors, tokens = [], {}

    def work(d):
        try:
            s = Store(url)                     # its own engine, as another server process would
            model, _ = publish_like_a_user(s, _b(d))
            tokens[model] = True
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(d,)) for d in sub_dicts[1:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    store = Store(url)
    full = tournament([validate_submission(d, cfg) for d in sub_dicts], cfg)
    assert store.scores() == full.scores          # every pair dueled exactly once, whatever the order
    n = len(sub_dicts)
    assert store.counts()["duels"] == len(cfg.task_ids) * n * (n - 1)


def test_reopen_checks_configuration(tmp_path, cfg):
    Store(tmp_path / "lb.db", config=cfg).close()
    assert Store(tmp_path / "lb.db").config.to_dict() == cfg.to_dict()
    with pytest.raises(InputError, match="another task configuration"):
        Store(tmp_path / "lb.db", config=LeaderboardConfig.load())


def test_cli_presubmit_confirm_leaderboard(cli, tmp_path, sub_files, meta_file):
    db = tmp_path / "cli.db"
    r = cli("duel", "presubmit", sub_files[0], "--db", db, "--metadata", meta_file, "--confirm")
    assert r.code == 0 and "published 'model-00'" in r.out
    r = cli("duel", "presubmit", sub_files[1], "--db", db, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["model"] == "model-01" and not out["published"]
    assert "model-01" not in cli("duel", "leaderboard", "--db", db).out
    assert cli("duel", "confirm", out["token"], "--db", db).code == 0
    board = json.loads(cli("duel", "leaderboard", "--db", db, "--json").out)
    assert {row["model"] for row in board} == {"model-00", "model-01"}
    r = cli("duel", "leaderboard", "--db", db, "--model", "model-01")
    assert r.code == 0 and "model-00" in r.out


@pytest.mark.slow(reason="1 s (setup and call) on 2 busy cores")
def test_publish_many_equals_one_by_one(tmp_path, cfg, sub_dicts):
    subs = [validate_submission(d, cfg) for d in sub_dicts]
    bulk = Store(tmp_path / "bulk.db", config=cfg)
    bulk.publish_many(subs[:2])
    bulk.publish_many(subs[2:])
    one = Store(tmp_path / "one.db", config=cfg)
    for s in subs:
        one.submit(s)
    assert bulk.scores() == one.scores()
    assert bulk.counts() == one.counts()
    with pytest.raises(InputError, match="already published"):
        bulk.publish_many(subs[:1])


def test_profile_bytes_round_trip_and_corruption(cfg, sub_dicts):
    from modelseek.duel.engine import Profile, profile

    s = validate_submission(sub_dicts[0], cfg)
    for t in cfg.task_ids:
        p = profile(cfg.spec(t), s.data[t], s.model)
        q = Profile.from_bytes(p.to_bytes())
        assert q.test is p.test and q.n == p.n and (q.observed == p.observed or np.isnan(p.observed))
        np.testing.assert_array_equal(q.vector, p.vector)
    with pytest.raises(InputError, match="corrupt"):
        Profile.from_bytes(p.to_bytes()[:-3])
