"""Initial schema: published (append-only, enforced by triggers) and pending tables.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from modelseek.duel.schema import TABLES_0001, immutability_ddl, tables

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    md, t = tables(sa)
    md.create_all(bind, tables=[t[name] for name in TABLES_0001])
    for stmt in immutability_ddl(bind.dialect.name, TABLES_0001):
        op.execute(stmt)


def downgrade() -> None:  # published data are never dropped by a migration
    raise RuntimeError("the leaderboard schema cannot be downgraded")
