"""Alembic environment of the leaderboard database: migrations run on the connection the store hands over
(inside its locked transaction), never on one opened here."""

from alembic import context


def run_migrations() -> None:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()


# Alembic runs this file inside an EnvironmentContext; imported any other way (the import test) it does nothing
if getattr(context, "_proxy", None) is not None:
    run_migrations()
