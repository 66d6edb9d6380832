"""Alembic environment: the connection comes from kiln.migrate, never from alembic.ini."""

from __future__ import annotations

from alembic import context

from kiln.models import Base
from kiln.rate_limits import TABLE as RATE_LIMITS_TABLE

config = context.config
target_metadata = Base.metadata


def include_object(obj: object, name: str | None, kind: str, reflected: bool, compare_to: object) -> bool:
    """Leave out the rate limits' counters: kiln creates that table itself (kiln.rate_limits),
    apart from the models, so that counting a request is no change of kiln's data."""
    return not (kind == "table" and name == RATE_LIMITS_TABLE)


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
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


run()
