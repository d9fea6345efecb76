"""Tamper evidence and ownership: the hash chain over published rows (``chain``), each task's doc_ids
(``task_ids``), both append-only; pending pre-submissions gain their name key, session, identity,
uploader, size and the board they were previewed on. Published submissions of an older database are
chained in publication order.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

from modelseek.duel import chain
from modelseek.duel.schema import PENDING_0002, TABLES_0002, immutability_ddl, tables
from modelseek.duel.text import name_key

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    md, t = tables(sa)
    insp = sa.inspect(bind)
    have = {c["name"] for c in insp.get_columns("pending")}
    for col in PENDING_0002:                     # a database created by 0001 of this code already has them
        if col not in have:
            c = t["pending"].c[col]
            op.add_column("pending", sa.Column(col, c.type, nullable=True))
    md.create_all(bind, tables=[t[name] for name in TABLES_0002])
    for stmt in immutability_ddl(bind.dialect.name, TABLES_0002, function=False):
        op.execute(stmt)
    if bind.execute(sa.select(sa.func.count()).select_from(t["meta"])).scalar_one():
        chain.genesis(bind, t, sa)
        subs = [dict(r) for r in bind.execute(sa.select(t["submissions"]).order_by(
            t["submissions"].c.published_at, t["submissions"].c.id)).mappings()]
        if subs:
            profiles = [dict(r) for r in bind.execute(sa.select(t["profiles"])).mappings()]
            duels = [dict(r) for r in bind.execute(sa.select(t["duels"])).mappings()]
            chain.append(bind, t, sa, subs, profiles, duels, [],
                         [{"name_key": name_key(s["model"]), "uploader": None, "size": None} for s in subs])


def downgrade() -> None:  # published data are never dropped by a migration
    raise RuntimeError("the leaderboard schema cannot be downgraded")
