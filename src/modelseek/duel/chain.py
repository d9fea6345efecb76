"""Tamper evidence: a hash chain over the published rows, and the check of the chain and the triggers.

The database refuses UPDATE, DELETE and replacing inserts on published rows (:mod:`.schema`), but a role
that owns the tables can switch that off (``DROP TRIGGER``, ``ALTER TABLE ... DISABLE TRIGGER``, replacing
the trigger function). The chain makes any such change visible afterwards:

* row 0 of ``chain`` holds ``SHA-256(GENESIS || canonical meta rows)`` (the task configuration and the
  duel settings);
* row k holds ``SHA-256(hash of row k-1 || canonical content of the k-th published submission)``; the
  content is the submission's row (the payload by its SHA-256), its name key, uploader and size, its
  profiles, the ``task_ids`` rows it fixed and its duels against every model published before it (a duel
  belongs to the later of its two models).

:func:`verify` recomputes every hash and names the first row that differs, every published row that is
not in the chain (a forged INSERT), every duel or profile whose submission is not chained, and every
missing, altered or disabled trigger. It runs in ``modelseek duel db verify`` and whenever the app starts.
A role that can INSERT can still *append* a well-formed forged row, and a table emptied from the end
leaves a shorter, valid chain: compare the head hash ``db verify`` prints with one recorded elsewhere (the
deployment in README gives the app role no right beyond INSERT and SELECT).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from . import schema

GENESIS = "0" * 64


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _f(x) -> str:
    return float(x).hex()


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def link(prev: str, content: bytes) -> str:
    return _sha(prev.encode("ascii") + content)


def meta_content(rows: list[tuple[str, str]]) -> bytes:
    return _dumps(["meta", sorted([str(k), str(v)] for k, v in rows)])


def row_content(seq: int, sub: Mapping, link_row: Mapping, profiles: Sequence[Mapping], duels: Sequence[Mapping],
                task_ids: Sequence[Mapping], review: Mapping | None = None) -> bytes:
    """The canonical bytes of one published submission (everything that was inserted with it, and the
    approval that published it on a board with review; rows without one hash as before 0003)."""
    extra = [] if review is None else [["review", str(review["decision"]), str(review["reviewer"]),
                                        _f(review["decided_at"]), str(review["why"])]]
    return _dumps([
        "submission", int(seq), int(sub["id"]), str(sub["model"]), str(sub["token"]), str(sub["sha256"]),
        _f(sub["created_at"]), _f(sub["published_at"]), str(sub["metadata_json"]), _sha(bytes(sub["payload"])),
        link_row.get("name_key"), link_row.get("uploader"), link_row.get("size"),
        sorted([str(p["task"]), int(p["n"]), _f(p["raw"]), _sha(bytes(p["blob"]))] for p in profiles),
        sorted([str(d["task"]), int(d["a_id"]), int(d["b_id"]), _f(d["p_value"])] for d in duels),
        sorted([str(r["task"]), _sha(str(r["ids"]).encode("utf-8"))] for r in task_ids),
        *extra,
    ])


def head(conn, t, sa) -> tuple[int, str] | None:
    """``(seq, hash)`` of the chain's last row, or ``None`` before the genesis row."""
    chain = t["chain"].c
    row = conn.execute(sa.select(chain.seq, chain.hash).order_by(chain.seq.desc()).limit(1)).first()
    return None if row is None else (int(row[0]), str(row[1]))


def genesis(conn, t, sa) -> None:
    """Write row 0 over the ``meta`` rows (once, when the leaderboard is created or migrated)."""
    if head(conn, t, sa) is not None:
        return
    rows = conn.execute(sa.select(t["meta"].c.key, t["meta"].c.value)).all()
    conn.execute(t["chain"].insert().values(seq=0, submission_id=None, name_key=None, uploader=None, size=None,
                                            prev_hash=GENESIS, hash=link(GENESIS, meta_content(rows))))


def append(conn, t, sa, subs: list[dict], profiles: list[dict], duels: list[dict], task_ids: list[dict],
           links: list[dict], reviews: Mapping[int, Mapping] | None = None) -> None:
    """Chain the submissions ``subs`` (in this order) inserted in this transaction; ``links[k]`` holds
    ``name_key``, ``uploader`` and ``size`` of ``subs[k]``, ``reviews`` the approval of a submission by id.
    Runs inside the serialised write."""
    top = head(conn, t, sa)
    if top is None:
        genesis(conn, t, sa)
        top = head(conn, t, sa)
        if top is None:
            raise RuntimeError("the chain has no genesis row after writing it")
    seq, prev = top
    pos = {int(s["id"]): k for k, s in enumerate(subs)}
    mine: list[list] = [[] for _ in subs]
    for d in duels:
        a, b = pos.get(int(d["a_id"]), -1), pos.get(int(d["b_id"]), -1)
        mine[max(a, b)].append(d)
    rows = []
    for k, s in enumerate(subs):
        seq += 1
        sid = int(s["id"])
        content = row_content(seq, s, links[k], [p for p in profiles if int(p["submission_id"]) == sid], mine[k],
                              [r for r in task_ids if int(r["submission_id"]) == sid], (reviews or {}).get(sid))
        h = link(prev, content)
        rows.append({"seq": seq, "submission_id": sid, **links[k], "prev_hash": prev, "hash": h})
        prev = h
    conn.execute(t["chain"].insert(), rows)


# ------------------------------------------------------------------------------------------ checking
def _who(sub: Mapping | None, sid) -> str:
    if sub is None:
        return f"submission id {sid}"
    model = str(sub["model"]).encode("utf-8", "backslashreplace").decode("utf-8")
    return f"submission id {sid} (model {model!r})"


def verify(conn, t, sa) -> list[str]:
    """Every problem found, the first bad row first (empty: the chain and the triggers are intact)."""
    problems: list[str] = []
    chain = [dict(r) for r in conn.execute(sa.select(t["chain"]).order_by(t["chain"].c.seq)).mappings()]
    meta = conn.execute(sa.select(t["meta"].c.key, t["meta"].c.value)).all()
    if not chain:
        return (["chain row 0 (the configuration) is missing"] if meta else []) + check_triggers(conn)
    subs = {int(r["id"]): dict(r) for r in conn.execute(sa.select(t["submissions"])).mappings()}
    profiles: dict[int, list] = {}
    for r in conn.execute(sa.select(t["profiles"])).mappings():
        profiles.setdefault(int(r["submission_id"]), []).append(dict(r))
    tids: dict[int, list] = {}
    for r in conn.execute(sa.select(t["task_ids"])).mappings():
        tids.setdefault(int(r["submission_id"]), []).append(dict(r))
    seq_of = {int(r["submission_id"]): int(r["seq"]) for r in chain if r["submission_id"] is not None}
    approved = {int(r["submission_id"]): dict(r) for r in conn.execute(sa.select(t["reviews"])).mappings()
                if r["decision"] == "approved"}
    duels: dict[int, list] = {}
    orphan = None
    for r in conn.execute(sa.select(t["duels"])).mappings():
        a, b = seq_of.get(int(r["a_id"])), seq_of.get(int(r["b_id"]))
        if a is None or b is None:
            orphan = orphan or dict(r)
            continue
        duels.setdefault(max(a, b), []).append(dict(r))
    prev = GENESIS
    for k, row in enumerate(chain):
        where = f"chain row {row['seq']}"
        if int(row["seq"]) != k:
            problems.append(f"{where}: expected row {k} (a row was removed or inserted)")
            break
        if row["prev_hash"] != prev:
            problems.append(f"{where}: does not follow row {k - 1} (previous hash differs)")
            break
        if k == 0:
            if row["submission_id"] is not None or row["hash"] != link(GENESIS, meta_content(meta)):
                problems.append(f"{where} (the configuration): the meta rows were altered")
                break
        else:
            sid = row["submission_id"]
            sub = subs.get(int(sid)) if sid is not None else None
            if sub is None:
                problems.append(f"{where}: {_who(None, sid)} is missing from submissions (deleted)")
                break
            content = row_content(k, sub, row, profiles.get(int(sid), []), duels.get(k, []), tids.get(int(sid), []),
                                  approved.get(int(sid)))
            if row["hash"] != link(prev, content):
                problems.append(f"{where}: {_who(sub, sid)} was altered (its row, profiles, duels or doc_ids "
                                "differ from what was published)")
                break
        prev = row["hash"]
    for sid in sorted(set(subs) - set(seq_of)):
        problems.append(f"{_who(subs[sid], sid)} is not in the chain: it was inserted outside the app")
    for sid in sorted(set(profiles) - set(seq_of)):
        problems.append(f"profiles of {_who(subs.get(sid), sid)} are not in the chain")
    if orphan is not None:
        problems.append(f"duel ({orphan['task']!r}, {orphan['a_id']}, {orphan['b_id']}) names a submission that "
                        "is not in the chain")
    for sid in sorted(set(approved) - set(seq_of)):
        problems.append(f"the approval of submission id {sid} names no chained submission (inserted outside the app)")
    for sid in sorted(set(tids) - set(seq_of)):
        problems.append(f"task_ids fixed by {_who(subs.get(sid), sid)} are not in the chain")
    return problems + check_triggers(conn)


def check_triggers(conn) -> list[str]:
    """Missing, altered or disabled immutability triggers (and, on PostgreSQL, a replaced trigger function)."""
    import sqlalchemy as sa  # lazy: sqlalchemy

    dialect = conn.dialect.name
    out = []
    if dialect == "sqlite":
        have = dict(conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all())
        for stmt in schema.immutability_ddl("sqlite"):
            name = stmt.split()[2]
            if name not in have:
                out.append(f"trigger {name} is missing (published rows can be changed)")
            elif have[name] != stmt:
                out.append(f"trigger {name} was altered")
    elif dialect == "postgresql":
        body = conn.execute(sa.text("SELECT prosrc FROM pg_proc WHERE proname = 'modelseek_immutable'")).scalars().all()
        if body != [schema.PG_FUNCTION_BODY]:
            out.append("function modelseek_immutable() was replaced or removed (published rows can be changed)")
        rows = conn.execute(sa.text(
            "SELECT t.tgname, t.tgenabled, pg_get_triggerdef(t.oid) FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal")).all()
        have = {r[0]: (r[1], r[2]) for r in rows}
        for table in schema.IMMUTABLE:
            for name, when in ((f"{table}_immutable", "BEFORE DELETE OR UPDATE"), (f"{table}_no_truncate",
                                                                                   "BEFORE TRUNCATE")):
                if name not in have:
                    out.append(f"trigger {name} is missing (published rows can be changed)")
                    continue
                enabled, definition = have[name]
                if enabled not in ("O", "A"):
                    out.append(f"trigger {name} is disabled (published rows can be changed)")
                elif when not in definition or "EXECUTE FUNCTION modelseek_immutable()" not in definition:
                    out.append(f"trigger {name} was altered")
    return out
