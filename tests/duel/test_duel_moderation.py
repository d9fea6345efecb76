"""Issue #44: names over the whole confusables table, moderation (approval by id with the team's ownership, the
uploader's verdict, withdrawal in the chain), the keyed chain, the server's refusal to publish on a tampered board,
masked passwords and one-line errors on a damaged database. SQLite and PostgreSQL (``db_url``)."""

import json
import string
import unicodedata

import pytest

from modelseek.duel import chain
from modelseek.duel.reference import Reference
from modelseek.duel.storage import Store, create_board
from modelseek.duel.submission import validate_submission
from modelseek.duel.text import confusable_pairs, look_alike, mixed_scripts
from modelseek.duel.tournament import tournament
from modelseek.testing.duel import renamed
from modelseek.core.errors import InputError

LATIN_AND_DIGITS = set(string.ascii_letters + string.digits)


_named = renamed  # an upload under another name (and team)


# ------------------------------------------------------------------------------------------------ names
def test_every_look_alike_of_a_latin_letter_or_digit_is_the_same_name():
    """Generated over the confusables table: every single-character look-alike of an ASCII letter or digit (both
    directions of each pair), as a whole name and inside one, in the case it is written and in the other case."""
    pairs = [(a, b) for a, b in confusable_pairs() if a in LATIN_AND_DIGITS or b in LATIN_AND_DIGITS]
    assert len(pairs) > 1300                      # the whole table's pairs for Latin letters and digits
    escaped = []
    for a, b in pairs:
        orig, fake = (a, b) if a in LATIN_AND_DIGITS else (b, a)
        for name, other in ((orig, fake), (f"model-{orig}7", f"model-{fake}7"), (f"{orig}x/y".upper(), f"{fake}x/y")):
            if not look_alike(name, other):
                escaped.append((name, other, unicodedata.name(fake, "?")))
    assert escaped == [], f"{len(escaped)} escape, e.g. {escaped[:5]}"


CYRILLIC_P_T_B = "BUT-FIT/CSMPT7B".replace("P", "\u0420").replace("T", "\u0422").replace("B", "\u0412")


@pytest.mark.parametrize("fake", [CYRILLIC_P_T_B,
                                  "BUT-FIT/CSMPT7\u0392",        # Greek Beta
                                  "BUT-FIT/CSMP\u03a47B",        # Greek Tau
                                  "but-fit/csmpt7b", "BUT-FlT/CSMPT7B"])
def test_the_issues_fakes_are_refused(tmp_path, cfg, sub_dicts, fake):
    store = Store(tmp_path / "n.db", config=cfg)
    store.submit(_named(sub_dicts[0], "BUT-FIT/CSMPT7B"))
    with pytest.raises(InputError, match=r"already published|looks like the published|one script") as exc:
        store.presubmit(_named(sub_dicts[1], fake))
    assert exc.value.field == "metadata.model"
    store.submit(_named(sub_dicts[2], "synthetic/model_7"))
    with pytest.raises(InputError, match="looks like the published 'synthetic/model_7'"):
        store.presubmit(_named(sub_dicts[3], "synthetic/modeI_7"))
    with pytest.raises(InputError, match="one script, this one mixes GREEK, LATIN"):
        store.presubmit(_named(sub_dicts[3], "genuine", team="C\u0396LC"))
    store.close()


def test_mixed_scripts_and_the_allowed_mixes():
    assert mixed_scripts("Llama-3-8B") == [] and mixed_scripts("\u010ce\u0161tina-7B") == []     # Czech: Latin
    assert mixed_scripts("\u0420\u0443\u0441\u0441\u043a\u0438\u0439") == []                      # all Cyrillic
    assert mixed_scripts("Qwen/\u901a\u4e49\u5343\u95ee") == []                                   # Latin + Han
    assert mixed_scripts("a\u03b1") == ["GREEK", "LATIN"]


# ------------------------------------------------------------------------------------------- moderation
@pytest.fixture
def review_board(db_url, cfg, sub_dicts):
    store = create_board(db_url, cfg, Reference.from_submission(validate_submission(sub_dicts[0], cfg)), review=True)
    yield store
    store.close()


def test_approval_by_id_checks_the_teams_owner(review_board, sub_dicts, cli, db_url):
    store = review_board
    # mallory queues under alice's team before alice's entry is approved (the issue: mallory was approved, then
    # alice was refused her own team)
    pv = store.presubmit(_named(sub_dicts[1], "mallory-model", team="OpenAI"), session="m" * 40, identity="mallory")
    store.confirm(pv.token, session="m" * 40, identity="mallory")
    mallory = pv.token
    pv = store.presubmit(_named(sub_dicts[0], "gpt-x", team="OpenAI"), session="a" * 40, identity="alice")
    store.confirm(pv.token, session="a" * 40, identity="alice")
    queue = {q["identity"]: q for q in store.review_queue()}
    assert all(any("claimed by 2 identities" in f for f in q["flags"]) for q in queue.values())
    r = cli("duel", "review", "list", "--db", db_url)
    assert f"id {queue['alice']['id']}: gpt-x" in r.out and "task_acc" in r.out and "claimed by 2 identities" in r.out
    store.approve(queue["alice"]["id"], "carol")
    with pytest.raises(InputError, match="belongs to the signed-in user who first published"):
        store.approve(queue["mallory"]["id"], "carol")
    store.reject(queue["mallory"]["id"], "carol", "team OpenAI belongs to another user")
    v = store.verdict(mallory)
    assert (v["model"], v["status"], v["why"], v["by"]) == ("mallory-model", "rejected",
                                                           "team OpenAI belongs to another user", "carol")
    r = cli("duel", "review", "status", mallory, "--db", db_url)
    assert r.code == 0 and "rejected by carol" in r.out and "belongs to another user" in r.out
    # two queued entries of one name: decided by id
    tokens = []
    for k, who in enumerate(("bob", "eve")):
        pv = store.presubmit(_named(sub_dicts[2 + k], "same-name"), session=who * 40, identity=who)
        store.confirm(pv.token, session=who * 40, identity=who)
        tokens.append(pv.token)
    with pytest.raises(InputError, match=r"2 queued submissions are named 'same-name'.*decide by id"):
        store.approve("same-name", "carol")
    ids = {q["identity"]: q["id"] for q in store.review_queue()}
    r = cli("duel", "review", "approve", str(ids["eve"]), "--db", db_url, "--by", "carol")
    assert r.code == 0 and "approved and published 'same-name'" in r.out, r.err
    assert store.verdict(tokens[1])["status"] == "approved" and store.verdict(tokens[0])["status"] == "awaiting review"
    assert store.verify() == []


def test_withdrawal_is_chained_and_recomputes_the_board(db_url, cfg, sub_dicts, cli):
    store = Store(db_url, config=cfg)
    tokens = {}
    for d in sub_dicts[:4]:
        pv = store.presubmit(json.dumps(d).encode())
        store.confirm(pv.token)
        tokens[pv.model] = pv.token
    head = store.head()
    r = cli("duel", "review", "withdraw", "model-01", "--db", db_url, "--by", "operator")
    assert r.code != 0 and "--why" in r.err
    r = cli("duel", "review", "withdraw", "model-01", "--db", db_url, "--by", "operator", "--why", "squatted name")
    assert r.code == 0 and "withdrew 'model-01'" in r.out, r.err
    remaining = [validate_submission(d, cfg) for d in sub_dicts[:4] if d["metadata"]["model"] != "model-01"]
    assert store.scores() == tournament(remaining, cfg).scores          # the board without it
    assert "model-01" not in store.leaderboard()["model"].tolist()
    assert store.metadata("model-01")["_sha256"]                        # kept for audit
    assert store.withdrawn()[0]["model"] == "model-01" and store.withdrawn()[0]["why"] == "squatted name"
    assert store.verdict(tokens["model-01"])["status"] == "withdrawn"
    assert store.head()[0] == head[0] + 1 and store.verify() == []      # a chain row of its own
    r = cli("duel", "db", "verify", "--db", db_url)
    assert r.code == 0 and "ok: 3 published models" in r.out, r.err
    pv = store.presubmit(json.dumps(sub_dicts[4]).encode())             # publishing goes on after it
    assert store.confirm(pv.token, recompute=True) == "model-04" and store.verify() == []
    with pytest.raises(InputError, match="no published entry 'model-01'"):
        store.withdraw("model-01", "operator", "again")
    store.close()


# ------------------------------------------------------------------------------------------- integrity
def _rebuild_chain_without_key(url, store):
    """What an owner of the tables does after editing a published score: every hash recomputed (the formula is
    public), the chain rewritten; the operator's key is not theirs."""
    import sqlalchemy as sa

    t, engine = store.t, store.engine
    with engine.begin() as c:
        if c.dialect.name == "sqlite":
            for (name,) in c.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).all():
                c.execute(sa.text(f"DROP TRIGGER {name}"))
        else:
            c.execute(sa.text("ALTER TABLE duels DISABLE TRIGGER USER"))
            c.execute(sa.text("ALTER TABLE chain DISABLE TRIGGER USER"))
        c.execute(sa.text("UPDATE duels SET p_value = 0.0001 WHERE a_id = (SELECT min(id) FROM submissions)"))
        links = {int(r["submission_id"]): dict(r) for r in c.execute(sa.select(t["chain"])).mappings()
                 if r["submission_id"] is not None}
        c.execute(sa.text("DELETE FROM chain"))
        chain.genesis(c, t, sa)
        subs = [dict(r) for r in c.execute(sa.select(t["submissions"]).order_by(t["submissions"].c.id)).mappings()]
        chain.append(c, t, sa, subs, [dict(r) for r in c.execute(sa.select(t["profiles"])).mappings()],
                     [dict(r) for r in c.execute(sa.select(t["duels"])).mappings()],
                     [dict(r) for r in c.execute(sa.select(t["task_ids"])).mappings()],
                     [{k: links[s["id"]][k] for k in ("name_key", "uploader", "size")} for s in subs])
        if c.dialect.name == "postgresql":
            c.execute(sa.text("ALTER TABLE duels ENABLE TRIGGER USER"))
            c.execute(sa.text("ALTER TABLE chain ENABLE TRIGGER USER"))


def test_a_rebuilt_chain_fails_verify_with_the_operators_key(db_url, cfg, sub_dicts, cli, monkeypatch, tmp_path):
    if db_url.startswith("sqlite"):
        key = tmp_path / "chain.key"
        key.write_text("operator-secret-1\n", encoding="utf-8")
        monkeypatch.setenv("MODELSEEK_DUEL_KEY_FILE", str(key))
    else:
        monkeypatch.setenv("MODELSEEK_DUEL_KEY", "operator-secret-2")
    store = Store(db_url, config=cfg)
    for d in sub_dicts[:3]:
        store.submit(json.dumps(d).encode())
    assert store.verify() == []
    r = cli("duel", "db", "verify", "--db", db_url)
    assert r.code == 0 and "signed with the operator's key" in r.out, r.err
    _rebuild_chain_without_key(db_url, store)
    problems = store.verify()
    assert any("not signed with the operator's key" in p or "triggers" in p or "trigger" in p for p in problems)
    assert any("chain row 0" in p and "operator's key" in p for p in problems), problems
    r = cli("duel", "db", "verify", "--db", db_url)
    assert r.code != 0 and "operator's key" in r.err and "Traceback" not in r.err
    with pytest.raises(InputError, match="nothing is published on top of it"):     # the server refuses
        store.submit(json.dumps(sub_dicts[3]).encode())
    monkeypatch.delenv("MODELSEEK_DUEL_KEY", raising=False)
    monkeypatch.delenv("MODELSEEK_DUEL_KEY_FILE", raising=False)
    store.close()


def test_a_running_store_refuses_to_publish_on_an_edited_score(tmp_path, cfg, sub_dicts):
    import sqlite3

    db = tmp_path / "edit.db"
    store = Store(db, config=cfg)
    for d in sub_dicts[:3]:
        store.submit(json.dumps(d).encode())
    pv = store.presubmit(json.dumps(sub_dicts[3]).encode())
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER profiles_no_update")
    conn.execute("UPDATE profiles SET raw = 0.99 WHERE task = 'task_acc'")       # the owner edits a score
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match=r"the leaderboard was altered .*nothing is published on top of it"):
        store.confirm(pv.token)
    assert [m for _, m in store.published()] == ["model-00", "model-01", "model-02"]
    store.close()


def test_no_password_in_any_output_and_one_line_on_a_damaged_database(pg_server, cfg, sub_dicts, tmp_path, cli,
                                                                     meta_file):
    import uuid

    url = pg_server.url(f"t_{uuid.uuid4().hex[:12]}").replace("postgres@", "postgres:s3cret-pw@")
    ref = tmp_path / "ref.json"
    ref.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    sub = tmp_path / "s.json"
    sub.write_text(json.dumps(sub_dicts[1]), encoding="utf-8")
    outs = [cli("duel", "db", "init", "--db", url, "--metadata", meta_file, "--reference", ref),
            cli("duel", "presubmit", sub, "--db", url),
            cli("duel", "db", "init", "--db", url, "--metadata", meta_file, "--reference", ref),   # refused
            cli("duel", "leaderboard", "--db", url), cli("duel", "db", "verify", "--db", url)]
    assert outs[0].code == 0 and outs[1].code == 0 and outs[2].code != 0
    import sqlalchemy as sa

    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with engine.begin() as c:
        c.execute(sa.text("DROP TABLE duels CASCADE"))
    engine.dispose()
    for args in (("leaderboard",), ("review", "list"), ("presubmit", sub), ("db", "verify"), ("serve", "--port", "1")):
        r = cli("duel", *args, "--db", url)
        assert r.code != 0 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, (args, r.err)
        outs.append(r)
    for r in outs:
        assert "s3cret-pw" not in r.out + r.err, (r.out, r.err)
    assert any("***" in r.out + r.err for r in outs)


def test_a_dropped_table_is_one_line_on_sqlite(tmp_path, cfg, sub_dicts, cli, meta_file):
    import sqlite3

    db = tmp_path / "drop.db"
    store = Store(db, config=cfg)
    store.submit(json.dumps(sub_dicts[0]).encode())
    store.close()
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE duels")
    conn.commit()
    conn.close()
    sub = tmp_path / "s.json"
    sub.write_text(json.dumps(sub_dicts[1]), encoding="utf-8")
    for args in (("leaderboard",), ("review", "list"), ("presubmit", sub), ("db", "verify"),
                 ("serve", "--port", "1")):
        r = cli("duel", *args, "--db", db)
        assert r.code != 0 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, (args, r.err)
        assert str(db) in r.err


def test_the_guides_postgresql_recipe_works_as_written(pg_server, cfg, sub_dicts, tmp_path, cli, meta_file,
                                                       monkeypatch):
    """docs/guides/leaderboard.md, 'Deploying on PostgreSQL', command by command (psql by psycopg; roles with
    passwords, which the throw-away server's trust authentication ignores; serve's start-up checks)."""
    import uuid

    import psycopg

    suffix = uuid.uuid4().hex[:8]
    owner, app, db = f"lb_owner_{suffix}", f"lb_app_{suffix}", f"lb_{suffix}"
    with psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user=postgres dbname=postgres", autocommit=True) as c:
        c.execute(f"CREATE ROLE {owner} LOGIN PASSWORD 'pw-owner'")
        c.execute(f"CREATE ROLE {app} LOGIN PASSWORD 'pw-app'")
        c.execute(f'CREATE DATABASE "{db}" OWNER {owner}')
    key = tmp_path / "chain.key"
    key.write_text("the operator's secret\n", encoding="utf-8")
    monkeypatch.setenv("MODELSEEK_DUEL_KEY_FILE", str(key))
    as_owner = f"postgresql://{owner}:pw-owner@127.0.0.1:{pg_server.port}/{db}"
    as_app = f"postgresql://{app}:pw-app@127.0.0.1:{pg_server.port}/{db}"
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(sub_dicts[0]), encoding="utf-8")
    outs = [cli("duel", "db", "upgrade", "--db", as_owner),
            cli("duel", "db", "init", "--db", as_owner, "--metadata", meta_file, "--reference", gold, "--review")]
    grants = cli("duel", "db", "grants", app)
    with psycopg.connect(f"host=127.0.0.1 port={pg_server.port} user={owner} dbname={db}", autocommit=True) as c:
        c.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        for stmt in grants.out.strip().splitlines():
            c.execute(stmt)
    store = Store(as_app)                                   # what serve opens, and its start-up checks
    store.check_servable()
    assert store.verify() == [] and store.review
    sub = tmp_path / "m.json"
    sub.write_text(json.dumps(sub_dicts[1]), encoding="utf-8")
    outs.append(cli("duel", "presubmit", sub, "--db", as_app, "--confirm"))      # an upload, as the app does
    queue = store.review_queue()
    outs += [cli("duel", "review", "list", "--db", as_app),
             cli("duel", "review", "approve", str(queue[0]["id"]), "--db", as_app, "--by", "carol"),
             cli("duel", "db", "verify", "--db", as_app)]
    for r in outs:
        assert r.code == 0, r.err
        assert "pw-owner" not in r.out + r.err and "pw-app" not in r.out + r.err
    assert "awaiting review" in outs[2].out and "ok: 1 published models" in outs[-1].out
    assert "signed with the operator's key" in outs[-1].out
    store.close()


# ------------------------------------------------------------------------------------------- resources
def _big_upload(model: str, n_records: int) -> bytes:
    """A large upload whose metadata comes first (as the canonical and BenCzechMark files write it)."""
    records = ",".join(f'{{"doc_id": {i}, "acc": {i % 2}}}' for i in range(n_records))
    return (f'{{"metadata": {{"model": "{model}", "precision": "bf16"}}, "predictions": {{"task_acc": [{records}]}}, '
            '"results": {}}').encode()


def test_large_refused_uploads_stop_early_are_charged_and_hold_no_one_up(tmp_path, cfg, sub_dicts):
    import threading
    import time

    store = Store(tmp_path / "r.db", config=cfg)
    store.submit(_named(sub_dicts[0], "model-00"))
    big = _big_upload("MODEL-00", 1_500_000)                  # ~40 MB, a taken name (case differs)
    assert len(big) > 35e6
    store.max_daily_bytes = 3 * len(big) + 1000
    errors: list[str] = []

    def attacker():
        try:
            store.presubmit(big, "big.json", uploader="mallory")
        except InputError as exc:
            errors.append(str(exc))

    threads = [threading.Thread(target=attacker) for _ in range(3)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    pv = store.presubmit(_named(sub_dicts[1], "victim"), uploader="alice")
    victim = time.perf_counter() - t0
    for t in threads:
        t.join()
    attackers = time.perf_counter() - t0
    assert pv.model == "victim" and victim < 5.0, victim
    assert len(errors) == 3 and all("already published as 'model-00'" in e for e in errors), errors
    assert attackers < 5.0, attackers                         # stopped before the full parse of 40 MB
    with pytest.raises(InputError, match="daily storage limit reached"):   # the refused bytes were charged
        store.presubmit(_named(sub_dicts[2], "mallory-genuine"), uploader="mallory")
    # a malformed upload is charged too
    store.max_daily_bytes = 1000
    with pytest.raises(InputError, match="malformed JSON"):
        store.presubmit(b"{" + b" " * 800, "bad.json", uploader="eve")
    with pytest.raises(InputError, match="daily storage limit reached: 801 bytes received"):
        store.presubmit(b"{" + b" " * 300, "bad.json", uploader="eve")
    store.close()
