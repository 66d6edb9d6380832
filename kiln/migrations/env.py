"""Alembic environment: the connection comes from kiln.migrate, never from alembic.ini."""

from __future__ import annotations

from alembic import context

from kiln.models import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("kiln migrations run through kiln.migrate")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # A batch operation rebuilds a SQLite table without its triggers (row versions,
        # visibility counts): a migration that uses one on such a table creates them again.
        # tests/test_kept_records.py and the visibility count tests fail if one is missing.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run()
