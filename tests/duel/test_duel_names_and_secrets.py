"""Issue #53 items 4 and 6, issue #56's same-model rule: TR39's multi-character look-alikes, blanks and dashes of
every script in names (API and CLI); no password in any output for any URL form, a malformed URL in one line; the
numbers an upload cannot hold (``n_params`` 1e-300, ``"acc": true``, ``doc_id`` 1.0)."""

import copy
import json
import uuid

import pytest

from modelseek.duel.database import mask_secrets
from modelseek.duel.storage import Store
from modelseek.duel.submission import validate_submission
from modelseek.duel.text import look_alike, multi_char_pairs
from modelseek.duel.tournament import tournament
from modelseek.core.errors import InputError
from modelseek.testing.duel import renamed

pytest.importorskip("confusable_homoglyphs")


# ------------------------------------------------------------------------------------------------ names
def test_every_multi_character_confusable_of_the_table_is_the_same_name():
    """Generated over the confusables table: every character whose TR39 prototype is a string (``m`` and ``rn``,
    ``ǆ`` and ``dž``), alone and inside a name."""
    pairs = multi_char_pairs()
    assert len(pairs) > 2000
    escaped = [(a, b) for a, b in pairs for x, y in ((a, b), (f"model-{a}7", f"model-{b}7")) if not look_alike(x, y)]
    assert escaped == [], f"{len(escaped)} escape, e.g. {escaped[:5]}"
    assert not look_alike("model-a", "model-b") and not look_alike("a-b", "alb") and not look_alike("a-b", "a b")


@pytest.mark.parametrize("fake", ["example-rnodel-06",           # TR39's 'rn' for 'm'
                                  "example\u4e00model-06",        # Han 一 for '-'
                                  "example\u3161model-06",        # Hangul ㅡ for '-'
                                  "example\u2014model-06"])       # an em dash
def test_the_issues_look_alikes_are_refused(tmp_path, cfg, sub_dicts, fake):
    store = Store(tmp_path / "n.db", config=cfg)
    store.submit(renamed(sub_dicts[0], "example-model-06"))
    with pytest.raises(InputError, match=r"looks like the published 'example-model-06'|one script") as exc:
        store.presubmit(renamed(sub_dicts[1], fake))
    assert exc.value.field == "metadata.model"
    store.close()


@pytest.mark.parametrize("name", ["example-model-06\u2800", "\u2800", "model\u2800x", "model\u00a0x", "\u3164",
                                  "model\u200bx", "model\u2060x", "model\u00adx"])
def test_blank_and_invisible_code_points_are_refused(cfg, sub_dicts, name):
    sub = copy.deepcopy(sub_dicts[0])
    sub["metadata"]["model"] = name
    with pytest.raises(InputError, match=r"blank or invisible|white space|non-empty") as exc:
        validate_submission(sub, cfg)
    assert exc.value.field == "metadata.model"


def test_the_same_model_rule_of_a_tournament_is_the_librarys(tmp_path, cfg, sub_dicts, meta_file, cli):
    """#56: the CLI folded case and width, the library did not; both refuse now, naming the later submission."""
    other = copy.deepcopy(sub_dicts[1])
    other["metadata"]["model"] = "MODEL\uff0d00"             # model-00 in capitals with a full-width hyphen
    subs = [validate_submission(d, cfg) for d in (sub_dicts[0], other, sub_dicts[2])]
    with pytest.raises(InputError, match="names the same model 'MODEL\uff0d00' as 'model-00'"):
        tournament(subs, cfg)
    paths = []
    for k, d in enumerate((sub_dicts[0], other, sub_dicts[2])):
        paths.append(tmp_path / f"s{k}.json")
        paths[-1].write_text(json.dumps(d), encoding="utf-8")
    r = cli("duel", "tournament", *map(str, paths), "--metadata", str(meta_file))
    assert r.code == 1 and str(paths[1]) in r.err and "names the same model" in r.err and str(paths[0]) in r.err


# ------------------------------------------------------------------------------------------------ values
@pytest.mark.parametrize(("where", "value", "field"), [
    ("n_params", 1e-300, "metadata.n_params"),
    ("acc", True, "predictions.{t}[0].acc"),
    ("doc_id", 1.0, "predictions.{t}[0].doc_id"),
])
def test_values_an_upload_cannot_hold_are_refused(cfg, sub_dicts, where, value, field):
    sub = copy.deepcopy(sub_dicts[0])
    task = next(t.task for t in cfg.tasks if t.metric.value == "acc")
    if where == "n_params":
        sub["metadata"]["n_params"] = value
    else:
        sub["predictions"][task][0][where] = value
    with pytest.raises(InputError) as exc:
        validate_submission(sub, cfg)
    assert exc.value.field == field.format(t=task), exc.value


# ------------------------------------------------------------------------------------------------ secrets
@pytest.mark.parametrize("url", [
    "postgresql://lb:S3CRET@db/lb",
    "postgresql://lb@db/lb?password=S3CRET",
    "postgresql://db/lb?user=lb&password=S3CRET&sslmode=disable",
    "postgresql://lb:S3CRET@db/lb?sslpassword=S3CRET&passfile=/S3CRET",
    "postgresql://lb:S3:C@RET@db/lb",
])
def test_every_url_form_is_masked(url):
    shown = mask_secrets(url)
    assert "S3" not in shown and "***" in shown and shown.startswith("postgresql://")
    assert mask_secrets(f"error: {url}: field 'db': x") == f"error: {shown}: field 'db': x"


@pytest.mark.parametrize("form", ["userinfo", "query", "both"])
@pytest.mark.slow(reason="1.9 s (12 commands on a real PostgreSQL) on 2 busy cores")
def test_no_password_in_any_output(pg_server, cfg, sub_dicts, meta_file, cli, form):
    """``db verify``, ``leaderboard``, ``review list`` and ``serve`` on a real server (PostgreSQL: a password given
    as the URL's query parameter is taken by libpq), on a board that works and on one that cannot be reached, and a
    malformed URL: the password appears nowhere, and every failure is one line."""
    name = f"s_{uuid.uuid4().hex[:10]}"
    base = pg_server.url(name)                   # postgresql://postgres@127.0.0.1:PORT/NAME (trust: any password)
    store = Store(base, config=cfg)
    store.publish_many([validate_submission(d, cfg) for d in sub_dicts[:2]])
    store.close()
    secret = "Pw0rdXYZ"
    user_part = base.replace("postgres@", f"postgres:{secret}@") if form != "query" else base
    query = f"?sslmode=disable&password={secret}" if form != "userinfo" else ""
    good = user_part + query
    down = good.replace(f":{pg_server.port}/", ":1/")
    bad_port = good.replace(f":{pg_server.port}/", ":notaport/")
    runs = []
    for db in (good, down, bad_port):
        for args in (("db", "verify"), ("leaderboard",), ("review", "list"), ("serve", "--port", "1")):
            runs.append((db, args, cli("duel", *args, "--db", db)))
    for db, args, r in runs:
        assert secret not in r.out + r.err, (args, db, r.out, r.err)
        if r.code:
            assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, (args, r.err)
    ok = {args[0] + (args[1] if len(args) > 1 else ""): r for db, args, r in runs if db == good}
    assert ok["dbverify"].code == 0 and "ok: 2 published models" in ok["dbverify"].out
    assert ok["leaderboard"].code == 0 and "model-00" in ok["leaderboard"].out
    assert all(r.code == 1 and "malformed database URL (its port is not a number" in r.err
               for db, _, r in runs if db == bad_port)
