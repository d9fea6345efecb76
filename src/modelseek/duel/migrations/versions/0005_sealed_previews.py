"""Sealed previews: ``pending``, ``pending_profiles`` and ``pending_duels`` carry a ``seal`` (SHA-256, or
HMAC-SHA-256 under the operator's key, of the row's canonical content: :func:`modelseek.duel.chain.pending_seal`)
and refuse UPDATE (``pending``: every column but ``board``, ``refreshes`` and ``queued_at``). Rows already pending
are sealed here, before the triggers exist; ``db verify`` checks every seal and a confirmation refuses a preview
whose seal does not match.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

from modelseek.duel.chain import operator_key, seal_pending_rows
from modelseek.duel.schema import SEALED, sealed_ddl, tables

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    _, t = tables(sa)
    for table in SEALED:                     # a database created by 0001 of this code already has them
        if "seal" not in {c["name"] for c in sa.inspect(bind).get_columns(table)}:
            op.add_column(table, sa.Column("seal", sa.String(64), nullable=True))
    seal_pending_rows(bind, t, sa, operator_key())
    for stmt in sealed_ddl(bind.dialect.name):
        op.execute(stmt)


def downgrade() -> None:  # published data are never dropped by a migration
    raise RuntimeError("the leaderboard schema cannot be downgraded")
