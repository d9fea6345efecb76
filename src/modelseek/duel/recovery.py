"""Recovery of a board after rows were appended outside the app (``modelseek duel db recover``).

A role that may INSERT into the published tables (the app's role) can append rows the app did not write: a
submission, profiles, duels, doc_ids or an approval that no chain row covers, or chain rows at the end whose
hashes do not verify. ``db verify`` names them and the board refuses to load. The owner recovers it:

1. ``modelseek duel db recover --db DB`` lists what would be removed: every published row that the chain
   does not cover. Chain rows appended after a head hash the owner recorded while the board was intact
   (``db verify`` prints it) are removed too, with what they name, when that hash is given
   (``--after-head HASH``): without it no chain row is ever removed. Nothing is changed without ``--apply``.
2. ``modelseek duel db recover --db DB --apply``, run **as the owner of the tables** (on PostgreSQL the app's
   least-privilege role cannot switch a trigger off), removes exactly those rows in one transaction: the
   immutability triggers are switched off inside it for the tables it deletes from and restored as they were
   (SQLite: dropped and re-created with their exact text; PostgreSQL: ``DISABLE`` / ``ENABLE TRIGGER``), so
   a failure leaves the board as it was.
3. It re-verifies the chain in the same transaction and commits only if the board is then intact; the
   board opens again (``db verify`` prints the head: compare it with the one recorded before).

Rows *inside* the chain that were altered, or a forged chain row followed by genuine ones, cannot be
repaired by removing rows: restore the database from a backup (``db verify --head`` finds the last good
state). Recovery never touches a row that the chain covers.
"""

from __future__ import annotations

from ..core.errors import InputError
from . import chain, schema


def _plan(conn, t, sa, head: str | None) -> tuple[dict[str, list], list[str]]:
    """``({table: [row keys to delete]}, descriptions)``: the chain rows after ``head`` (a hash the owner
    recorded while the board was intact; ``None`` keeps every chain row) and every published row that the
    kept chain rows do not cover."""
    rows = [dict(r) for r in conn.execute(sa.select(t["chain"]).order_by(t["chain"].c.seq)).mappings()]
    good = len(rows)
    if head is not None:
        hit = [k for k, r in enumerate(rows) if r["hash"] == head]
        if not hit:
            raise InputError(f"the recorded head {head} is not in the chain: restore the board from a backup",
                             field="after_head")
        good = hit[0] + 1
    chained = {int(r["submission_id"]) for r in rows[:good] if r["submission_id"] is not None}
    plan: dict[str, list] = {
        "chain": [int(r["seq"]) for r in rows[good:]],
        "submissions": sorted({int(i) for i, in conn.execute(sa.select(t["submissions"].c.id)).all()} - chained),
        "profiles": sorted({int(i) for i, in conn.execute(sa.select(t["profiles"].c.submission_id)).all()} - chained),
        "task_ids": [str(x) for x, i in conn.execute(sa.select(t["task_ids"].c.task, t["task_ids"].c.submission_id))
                     if int(i) not in chained],
        "reviews": [int(i) for i, d in conn.execute(sa.select(t["reviews"].c.submission_id, t["reviews"].c.decision))
                    if d == "approved" and int(i) not in chained],
        "duels": [(str(a), int(b), int(c)) for a, b, c in conn.execute(
            sa.select(t["duels"].c.task, t["duels"].c.a_id, t["duels"].c.b_id))
                  if int(b) not in chained or int(c) not in chained],
        "withdrawals": [int(q) for q, in conn.execute(sa.select(t["withdrawals"].c.seq)).all()
                        if int(q) not in {int(r["seq"]) for r in rows[:good]}],
        "copies": sorted({int(i) for i, in conn.execute(sa.select(t["copies"].c.submission_id)).all()} - chained),
    }
    # counted in rows (profiles are planned by submission id: one per task)
    counts = {k: len(v) for k, v in plan.items()}
    if plan["profiles"]:
        counts["profiles"] = int(conn.execute(sa.select(sa.func.count()).select_from(t["profiles"]).where(
            t["profiles"].c.submission_id.in_(plan["profiles"]))).scalar_one())
    if plan["copies"]:
        counts["copies"] = int(conn.execute(sa.select(sa.func.count()).select_from(t["copies"]).where(
            t["copies"].c.submission_id.in_(plan["copies"]))).scalar_one())
    notes = [f"chain row {s} (after the recorded head)" for s in plan["chain"]]
    notes += [f"submission id {i} (not in the chain)" for i in plan["submissions"]]
    notes += [f"{counts[k]} {k} row(s) of submissions not in the chain"
              for k in ("profiles", "duels", "task_ids", "reviews", "copies") if plan[k]]
    notes += [f"withdrawal at chain row {q} (not in the chain)" for q in plan["withdrawals"]]
    return plan, notes


def _delete(conn, t, sa, plan: dict[str, list]) -> None:
    if plan["chain"]:
        conn.execute(t["chain"].delete().where(t["chain"].c.seq.in_(plan["chain"])))
    if plan["duels"]:
        for task, a, b in plan["duels"]:
            d = t["duels"].c
            conn.execute(t["duels"].delete().where(d.task == task, d.a_id == a, d.b_id == b))
    if plan["profiles"]:
        conn.execute(t["profiles"].delete().where(t["profiles"].c.submission_id.in_(plan["profiles"])))
    if plan["task_ids"]:
        conn.execute(t["task_ids"].delete().where(t["task_ids"].c.task.in_(plan["task_ids"])))
    if plan["reviews"]:
        conn.execute(t["reviews"].delete().where(t["reviews"].c.submission_id.in_(plan["reviews"])))
    if plan["withdrawals"]:
        conn.execute(t["withdrawals"].delete().where(t["withdrawals"].c.seq.in_(plan["withdrawals"])))
    if plan["copies"]:
        conn.execute(t["copies"].delete().where(t["copies"].c.submission_id.in_(plan["copies"])))
    if plan["submissions"]:
        conn.execute(t["submissions"].delete().where(t["submissions"].c.id.in_(plan["submissions"])))


def _switch(conn, sa, tables: list[str], on: bool) -> None:
    """Switch the immutability triggers of ``tables`` off (inside the caller's transaction) or back on."""
    if conn.dialect.name == "sqlite":
        for stmt in schema.immutability_ddl("sqlite", tuple(tables)):
            name = stmt.split()[2]
            conn.execute(sa.text(stmt if on else f"DROP TRIGGER IF EXISTS {name}"))
    else:
        for table in tables:
            conn.execute(sa.text(f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER {table}_immutable"))


def recover(store, apply: bool = False, after_head: str | None = None) -> list[str]:
    """What is (with ``apply``: was) removed from the board of ``store`` (see the module docstring). With
    ``apply`` the rows are removed in one serialised transaction that commits only if the board then
    verifies; otherwise it raises :class:`InputError` and nothing changed."""
    sa, t = store._sa, store.t

    def work(conn):
        plan, notes = _plan(conn, t, sa, after_head)
        tables = [k for k, v in plan.items() if v]
        if apply and tables:
            _switch(conn, sa, tables, on=False)
            _delete(conn, t, sa, plan)
            _switch(conn, sa, tables, on=True)
            left = chain.verify(conn, t, sa, store.key)
            if left:
                raise InputError(f"removing the rows appended outside the app does not repair this board: {left[0]} "
                                 "(restore it from a backup); nothing was changed", field="db")
        return notes

    return store._write(work)
