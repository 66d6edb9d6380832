"""every table tells the processes listening on kiln_changes that it changed (kiln.changes):
what they reuse from earlier reads is read again after any write, from any node

Revision ID: 7e4b2c9d1f60
Revises: 2b8e6d4f9a17
Create Date: 2026-11-26 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "7e4b2c9d1f60"
down_revision = "2b8e6d4f9a17"
branch_labels = None
depends_on = None

# PostgreSQL folds the notifications of one transaction into one, delivered when it commits.
# SQLite needs no trigger: its data_version tells every connection of any other's commit.
_FUNCTION = (
    "CREATE FUNCTION kiln_changed() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "PERFORM pg_notify('kiln_changes', ''); RETURN NULL; END $$"
)


def _tables() -> list[str]:
    names = sa.inspect(op.get_bind()).get_table_names()
    return sorted(name for name in names if name != "alembic_version")


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.execute(_FUNCTION)
    for table in _tables():
        op.execute(
            f'CREATE TRIGGER kiln_changed AFTER INSERT OR UPDATE OR DELETE ON "{table}" '
            "FOR EACH ROW EXECUTE FUNCTION kiln_changed()"
        )
        op.execute(
            f'CREATE TRIGGER kiln_changed_truncate AFTER TRUNCATE ON "{table}" '
            "FOR EACH STATEMENT EXECUTE FUNCTION kiln_changed()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    for table in _tables():
        op.execute(f'DROP TRIGGER kiln_changed ON "{table}"')
        op.execute(f'DROP TRIGGER kiln_changed_truncate ON "{table}"')
    op.execute("DROP FUNCTION kiln_changed()")
