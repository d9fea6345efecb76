"""Moderation and a keyed chain: ``withdrawals`` (append-only; an operator's withdrawal of a published entry,
chained at its own row), ``copies`` (append-only; near-copies a reviewer published anyway, so that duels against
them count once), ``chain.mac`` (HMAC-SHA-256 of each row's hash under the operator's key) and
``reviews.token_hash`` (the uploader finds the verdict by the token of the upload).

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

from modelseek.duel.schema import COLUMNS_0004, TABLES_0004, immutability_ddl, tables

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    md, t = tables(sa)
    for table, col in COLUMNS_0004:              # a database created by an earlier migration of this code has them
        if col not in {c["name"] for c in sa.inspect(bind).get_columns(table)}:
            op.add_column(table, sa.Column(col, t[table].c[col].type, nullable=True))
    md.create_all(bind, tables=[t[name] for name in TABLES_0004])
    for stmt in immutability_ddl(bind.dialect.name, TABLES_0004, function=False):
        op.execute(stmt)


def downgrade() -> None:  # published data are never dropped by a migration
    raise RuntimeError("the leaderboard schema cannot be downgraded")
