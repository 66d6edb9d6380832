"""row_version: SQLite renews it on every update, even one that writes it; no row keeps 0

Revision ID: 9c3f5a1d7e22
Revises: 4e1a9c7b2d05
Create Date: 2026-11-26 03:00:00
"""

from __future__ import annotations

from alembic import op

revision = "9c3f5a1d7e22"
down_revision = "4e1a9c7b2d05"
branch_labels = None
depends_on = None

_TABLES = ("projects", "namespaces", "users")


def _renew(table: str) -> str:
    return f"UPDATE {table} SET row_version = random() WHERE id = NEW.id"


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in _TABLES:
        if sqlite:
            # Without WHEN: a statement that writes row_version itself (an old value with new
            # contents) gets a new one too. The trigger's own UPDATE does not fire it again:
            # kiln leaves SQLite's recursive_triggers off.
            op.execute(f"DROP TRIGGER {table}_row_version_update")
            op.execute(
                f"CREATE TRIGGER {table}_row_version_update AFTER UPDATE ON {table} BEGIN {_renew(table)}; END"
            )
        # Rows from before row_version started at 0: a backup taken then and restored would
        # bring them back at 0 with other contents. PostgreSQL's trigger sets the value.
        op.execute(f"UPDATE {table} SET row_version = 0 WHERE row_version = 0")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in _TABLES:
            op.execute(f"DROP TRIGGER {table}_row_version_update")
            op.execute(
                f"CREATE TRIGGER {table}_row_version_update AFTER UPDATE ON {table} "
                f"WHEN NEW.row_version IS OLD.row_version BEGIN {_renew(table)}; END"
            )
