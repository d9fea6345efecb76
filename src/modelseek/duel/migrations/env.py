"""Alembic environment of the leaderboard database: migrations run on the connection the store hands over
(inside its locked transaction), never on one opened here."""

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
