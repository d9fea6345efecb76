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

**Keyed chain.** With an operator's secret (:func:`operator_key`: ``MODELSEEK_DUEL_KEY``, or the file named by
``MODELSEEK_DUEL_KEY_FILE``), every chain row also carries ``mac = HMAC-SHA-256(key, seq:hash)``. Whoever edits
a row and rebuilds every hash after it cannot compute the MACs, so the rebuilt chain fails :func:`verify` without
a head recorded elsewhere. A keyed board needs its key for every use (a board with signed rows and no key given
is refused, and so is an unsigned row when the key is given).

**Withdrawals.** An operator's withdrawal of a published entry is a chain row of its own (``submission_id``
NULL; its ``withdrawals`` row holds the entry, who, when and why): the entry stays in ``submissions`` for audit,
the board leaves it out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence

from . import schema
from ..core.errors import InputError

GENESIS = "0" * 64


class BoardAltered(InputError):
    """The board's chain, sealed previews or triggers show that it was changed outside the app: it is not shown
    (not by the page, its downloads, the API or the CLI) and nothing is published on top of it."""

KEY_ENV, KEY_FILE_ENV = "MODELSEEK_DUEL_KEY", "MODELSEEK_DUEL_KEY_FILE"


def operator_key() -> bytes | None:
    """The operator's chain key: ``MODELSEEK_DUEL_KEY`` (its text), else the bytes of the file named by
    ``MODELSEEK_DUEL_KEY_FILE`` (surrounding white space stripped); ``None`` when neither is set."""

    text = os.environ.get(KEY_ENV)
    if text:
        return text.encode("utf-8")
    path = os.environ.get(KEY_FILE_ENV)
    if path:
        try:
            data = open(path, "rb").read().strip()     # noqa: SIM115 - read at once
        except OSError as exc:
            raise InputError(f"cannot read the operator's key file ({exc.strerror})", path=path,
                             field=KEY_FILE_ENV) from None
        if not data:
            raise InputError("the operator's key file is empty", path=path, field=KEY_FILE_ENV)
        return data
    return None


def mac(key: bytes | None, seq: int, h: str) -> str | None:
    return None if key is None else hmac.new(key, f"{int(seq)}:{h}".encode("ascii"), hashlib.sha256).hexdigest()


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
                task_ids: Sequence[Mapping], review: Mapping | None = None,
                copies: Sequence[Mapping] | None = None) -> bytes:
    """The canonical bytes of one published submission (everything that was inserted with it, the approval
    that published it on a board with review and the near-copies it was published as; rows without them hash as
    before 0003 / 0004)."""
    extra: list = [] if review is None else [["review", str(review["decision"]), str(review["reviewer"]),
                                              _f(review["decided_at"]), str(review["why"])]]
    if copies:
        extra.append(["copies", sorted([int(c["of_id"]), _f(c["ratio"])] for c in copies)])
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


def withdrawal_content(seq: int, w: Mapping) -> bytes:
    return _dumps(["withdrawal", int(seq), int(w["submission_id"]), str(w["model"]), str(w["operator"]),
                   _f(w["at"]), str(w["why"])])


def genesis(conn, t, sa, key: bytes | None = None) -> None:
    """Write row 0 over the ``meta`` rows (once, when the leaderboard is created or migrated)."""
    if head(conn, t, sa) is not None:
        return
    rows = conn.execute(sa.select(t["meta"].c.key, t["meta"].c.value)).all()
    h = link(GENESIS, meta_content(rows))
    conn.execute(t["chain"].insert().values(seq=0, submission_id=None, name_key=None, uploader=None, size=None,
                                            prev_hash=GENESIS, hash=h, mac=mac(key, 0, h)))


def append_withdrawal(conn, t, sa, w: dict, key: bytes | None = None) -> int:
    """Chain the withdrawal ``w`` (submission_id, model, operator, at, why) at the next row; returns its seq."""
    top = head(conn, t, sa)
    if top is None:
        raise RuntimeError("the chain has no genesis row")
    seq, prev = top[0] + 1, top[1]
    h = link(prev, withdrawal_content(seq, w))
    conn.execute(t["withdrawals"].insert().values(seq=seq, **w))
    conn.execute(t["chain"].insert().values(seq=seq, submission_id=None, name_key=None, uploader=None, size=None,
                                            prev_hash=prev, hash=h, mac=mac(key, seq, h)))
    return seq


def append(conn, t, sa, subs: list[dict], profiles: list[dict], duels: list[dict], task_ids: list[dict],
           links: list[dict], reviews: Mapping[int, Mapping] | None = None, key: bytes | None = None,
           copies: Mapping[int, Sequence[Mapping]] | None = None) -> None:
    """Chain the submissions ``subs`` (in this order) inserted in this transaction; ``links[k]`` holds
    ``name_key``, ``uploader`` and ``size`` of ``subs[k]``, ``reviews`` the approval of a submission by id.
    Runs inside the serialised write."""
    top = head(conn, t, sa)
    if top is None:
        genesis(conn, t, sa, key)
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
                              [r for r in task_ids if int(r["submission_id"]) == sid], (reviews or {}).get(sid),
                              (copies or {}).get(sid))
        h = link(prev, content)
        rows.append({"seq": seq, "submission_id": sid, **links[k], "prev_hash": prev, "hash": h,
                     "mac": mac(key, seq, h)})
        prev = h
    conn.execute(t["chain"].insert(), rows)


# ------------------------------------------------------------------------------------------ checking
def _who(sub: Mapping | None, sid) -> str:
    if sub is None:
        return f"submission id {sid}"
    model = str(sub["model"]).encode("utf-8", "backslashreplace").decode("utf-8")
    return f"submission id {sid} (model {model!r})"


def _outside_chain(chain, subs, profiles, tids, seq_of, approved, withdrawn, copies, orphan) -> list[str]:
    """Rows of the other tables that no chain row covers (inserted outside the app)."""
    problems: list[str] = []
    for sid in sorted(set(subs) - set(seq_of)):
        problems.append(f"{_who(subs[sid], sid)} is not in the chain: it was inserted outside the app")
    for sid in sorted(set(profiles) - set(seq_of)):
        problems.append(f"profiles of {_who(subs.get(sid), sid)} are not in the chain")
    if orphan is not None:
        problems.append(f"duel ({orphan['task']!r}, {orphan['a_id']}, {orphan['b_id']}) names a submission that "
                        "is not in the chain")
    for sid in sorted(set(approved) - set(seq_of)):
        problems.append(f"the approval of submission id {sid} names no chained submission (inserted outside the app)")
    for seq in sorted(set(withdrawn) - {int(r["seq"]) for r in chain if r["submission_id"] is None}):
        problems.append(f"withdrawal at row {seq} is not in the chain (inserted outside the app)")
    for sid in sorted(set(copies) - set(seq_of)):
        problems.append(f"near-copy records of submission id {sid} are not in the chain")
    for sid in sorted(set(tids) - set(seq_of)):
        problems.append(f"task_ids fixed by {_who(subs.get(sid), sid)} are not in the chain")
    return problems


def verify(conn, t, sa, key: bytes | None = None, pending: bool = True) -> list[str]:
    """Every problem found, the first bad row first (empty: the chain, the sealed previews and the triggers are
    intact). ``key``: the operator's chain key (see the module docstring); ``pending``: check every preview's seals
    too (``db verify``; a read of the board or a publication checks the published rows and the triggers, and a
    confirmation its own preview)."""
    return (_verify_published(conn, t, sa, key) + (verify_pending(conn, t, sa, key) if pending else [])
            + check_triggers(conn))


def _verify_published(conn, t, sa, key: bytes | None) -> list[str]:
    """The chain over the published rows (:func:`verify` without the previews and the triggers)."""
    problems: list[str] = []
    chain = [dict(r) for r in conn.execute(sa.select(t["chain"]).order_by(t["chain"].c.seq)).mappings()]
    meta = conn.execute(sa.select(t["meta"].c.key, t["meta"].c.value)).all()
    if not chain:
        return ["chain row 0 (the configuration) is missing"] if meta else []
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
    withdrawn = {int(r["seq"]): dict(r) for r in conn.execute(sa.select(t["withdrawals"])).mappings()}
    copies: dict[int, list] = {}
    for r in conn.execute(sa.select(t["copies"])).mappings():
        copies.setdefault(int(r["submission_id"]), []).append(dict(r))
    signed = [r for r in chain if r.get("mac")]
    if key is None and signed:
        problems.append(f"the chain is keyed (signed rows from row {signed[0]['seq']}): give the operator's key "
                        f"({KEY_ENV} or {KEY_FILE_ENV}) to use this board")
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
        elif row["submission_id"] is None:
            w = withdrawn.get(k)
            if w is None or row["hash"] != link(prev, withdrawal_content(k, w)):
                problems.append(f"{where}: the withdrawal it records is missing or was altered")
                break
        else:
            sid = row["submission_id"]
            sub = subs.get(int(sid)) if sid is not None else None
            if sub is None:
                problems.append(f"{where}: {_who(None, sid)} is missing from submissions (deleted)")
                break
            content = row_content(k, sub, row, profiles.get(int(sid), []), duels.get(k, []), tids.get(int(sid), []),
                                  approved.get(int(sid)), copies.get(int(sid)))
            if row["hash"] != link(prev, content):
                problems.append(f"{where}: {_who(sub, sid)} was altered (its row, profiles, duels or doc_ids "
                                "differ from what was published)")
                break
        if key is not None and not hmac.compare_digest(str(row.get("mac") or ""), mac(key, k, row["hash"]) or ""):
            problems.append(f"{where}: " + ("not signed with the operator's key" if not row.get("mac") else
                                            "its signature does not match the operator's key")
                            + " (the chain was rebuilt, or the board was keyed with another key)")
            break
        prev = row["hash"]
    return problems + _outside_chain(chain, subs, profiles, tids, seq_of, approved, withdrawn, copies, orphan)


# ------------------------------------------------------------------------------------------ sealed previews
# A preview (its ``pending`` row, the profiles and the duels computed for it) is what a confirmation publishes, so
# it is as much part of what a reader will see as the published rows. It is not chained (previews come and go),
# but sealed: each row carries SHA-256 of its canonical content (HMAC-SHA-256 under the operator's key), the
# profiles and duels with their preview's seal inside theirs, and the database refuses UPDATE on them (schema
# 0005). An edited preview is named by :func:`verify` and refused at confirmation.
def _seal(key: bytes | None, content: bytes) -> str:
    return _sha(content) if key is None else hmac.new(key, content, hashlib.sha256).hexdigest()


def pending_seal(key: bytes | None, row: Mapping) -> str:
    """The seal of a ``pending`` row (every column a confirmation publishes or checks; not its id, which the
    database assigns, nor the workflow's board, refreshes and queued_at)."""
    return _seal(key, _dumps(["pending", str(row["model"]), str(row["token"]), str(row["sha256"]),
                              _f(row["created_at"]), str(row["metadata_json"]), _sha(bytes(row["payload"])),
                              row.get("name_key"), row.get("session"), row.get("identity"), row.get("uploader"),
                              None if row.get("size") is None else int(row["size"])]))


def profile_seal(key: bytes | None, parent: str, row: Mapping) -> str:
    """The seal of a ``pending_profiles`` row of the preview sealed ``parent``."""
    return _seal(key, _dumps(["pending_profile", parent, str(row["task"]), int(row["n"]), _f(row["raw"]),
                              _sha(bytes(row["blob"]))]))


def duel_seal(key: bytes | None, parent: str, row: Mapping) -> str:
    """The seal of a ``pending_duels`` row of the preview sealed ``parent``."""
    return _seal(key, _dumps(["pending_duel", parent, str(row["task"]), int(row["opponent_id"]), _f(row["p_win"]),
                              _f(row["p_loss"])]))


def _same(a, b) -> bool:
    return hmac.compare_digest(str(a or ""), str(b or "")) and a is not None


def verify_pending(conn, t, sa, key: bytes | None = None, only: int | None = None) -> list[str]:
    """The previews (pending rows, their profiles and duels) whose seal does not match their content: edited,
    inserted or moved outside the app. ``only``: check the preview of this pending id alone. Each child row is
    read with its preview's id and seal in one statement (one snapshot, also under concurrent writes)."""
    pend = t["pending"]
    problems: list[str] = []
    seals: dict[int, str | None] = {}

    def check(rows) -> None:
        for r in rows:
            ok = _same(r["seal"], pending_seal(key, r))
            seals[int(r["id"])] = r["seal"] if ok else None
            if not ok:
                problems.append(f"pending {_who(r, r['id'])} was altered after its preview was computed (its seal "
                                "differs)")

    q = sa.select(pend)
    check(conn.execute(q if only is None else q.where(pend.c.id == only)).mappings().all())
    for table, what, sealer in ((t["pending_profiles"], "profile", profile_seal), (t["pending_duels"], "duel",
                                                                                    duel_seal)):
        q = sa.select(table, pend.c.id.label("parent_id"), pend.c.seal.label("parent_seal")).select_from(
            table.outerjoin(pend, table.c.pending_id == pend.c.id))
        for r in conn.execute(q if only is None else q.where(table.c.pending_id == only)).mappings().all():
            pid = int(r["pending_id"])
            if r["parent_id"] is None:
                problems.append(f"a pending {what} names no pending submission (id {pid}): inserted outside the app")
                continue
            if pid not in seals:            # a preview stored after the first read
                check(conn.execute(sa.select(pend).where(pend.c.id == pid)).mappings().all())
            parent = seals.get(pid)
            if parent is not None and not (_same(r["parent_seal"], parent)
                                           and _same(r["seal"], sealer(key, parent, r))):
                problems.append(f"a pending {what} of pending submission id {pid} (task {str(r['task'])!r}) was "
                                "altered after its preview was computed (its seal differs)")
    return problems


def seal_pending_rows(conn, t, sa, key: bytes | None) -> None:
    """Seal the previews stored before schema 0005 (the migration, before the triggers that refuse UPDATE)."""
    pend, pprof, pduel = t["pending"], t["pending_profiles"], t["pending_duels"]
    seals = {}
    for r in conn.execute(sa.select(pend)).mappings().all():
        seals[int(r["id"])] = pending_seal(key, r)
        conn.execute(sa.update(pend).where(pend.c.id == r["id"]).values(seal=seals[int(r["id"])]))
    for table, sealer, keys in ((pprof, profile_seal, ("pending_id", "task")),
                                (pduel, duel_seal, ("pending_id", "task", "opponent_id"))):
        for r in conn.execute(sa.select(table)).mappings().all():
            if int(r["pending_id"]) in seals:
                where = [table.c[k] == r[k] for k in keys]
                conn.execute(sa.update(table).where(*where).values(seal=sealer(key, seals[int(r["pending_id"])], r)))


def check_triggers(conn) -> list[str]:
    """Missing, altered or disabled immutability triggers (and, on PostgreSQL, a replaced trigger function)."""
    import sqlalchemy as sa  # lazy: sqlalchemy

    dialect = conn.dialect.name
    out = []
    if dialect == "sqlite":
        have = dict(conn.execute(sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")).all())
        for stmt in schema.immutability_ddl("sqlite") + schema.sealed_ddl("sqlite"):
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
        expected = [(f"{table}_immutable", "BEFORE DELETE OR UPDATE") for table in schema.IMMUTABLE]
        expected += [(f"{table}_no_truncate", "BEFORE TRUNCATE") for table in schema.IMMUTABLE]
        expected += [(f"{table}_sealed", "BEFORE UPDATE") for table in schema.SEALED]
        for name, when in expected:
            if name not in have:
                out.append(f"trigger {name} is missing (published rows can be changed)")
                continue
            enabled, definition = have[name]
            if enabled not in ("O", "A"):
                out.append(f"trigger {name} is disabled (published rows can be changed)")
            elif when not in definition or "EXECUTE FUNCTION modelseek_immutable()" not in definition:
                out.append(f"trigger {name} was altered")
    return out
