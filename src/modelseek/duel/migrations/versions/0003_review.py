"""Review before publication: ``reviews`` (append-only: each decision on a queued submission, who made it,
when and why; an approval is also covered by the hash chain) and ``pending.queued_at`` (a confirmed
submission awaiting review on a board created with ``--review``; queued rows do not expire) and
``pending.refreshes`` (how many times its preview was recomputed: a confirm after one recomputation
publishes, computing the duels of models published meanwhile, so no confirm starves under load).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

from modelseek.duel.schema import PENDING_0003, TABLES_0003, immutability_ddl, tables

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    md, t = tables(sa)
    have = {c["name"] for c in sa.inspect(bind).get_columns("pending")}
    for col in PENDING_0003:                     # a database created by 0001 of this code already has them
        if col not in have:
            op.add_column("pending", sa.Column(col, t["pending"].c[col].type, nullable=True))
    md.create_all(bind, tables=[t[name] for name in TABLES_0003])
    for stmt in immutability_ddl(bind.dialect.name, TABLES_0003, function=False):
        op.execute(stmt)


def downgrade() -> None:  # published data are never dropped by a migration
    raise RuntimeError("the leaderboard schema cannot be downgraded")
