"""row_version on projects, namespaces and users: a new value on every write, set by triggers

Revision ID: b7d2e9a41c38
Revises: 3c7f1e2b9a64
Create Date: 2026-11-26 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "b7d2e9a41c38"
down_revision = "3c7f1e2b9a64"
branch_labels = None
depends_on = None

_TABLES = ("projects", "namespaces", "users")


def _sqlite(table: str) -> list[str]:
    # SQLite's triggers cannot change NEW: the row is written again. recursive_triggers is
    # off, and the WHEN clause would stop a recursion anyway.
    renew = f"UPDATE {table} SET row_version = random() WHERE id = NEW.id"
    return [
        f"CREATE TRIGGER {table}_row_version_insert AFTER INSERT ON {table} BEGIN {renew}; END",
        f"CREATE TRIGGER {table}_row_version_update AFTER UPDATE ON {table} "
        f"WHEN NEW.row_version IS OLD.row_version BEGIN {renew}; END",
    ]


def _postgresql(table: str) -> list[str]:
    return [
        f"CREATE TRIGGER {table}_row_version BEFORE INSERT OR UPDATE ON {table} "
        "FOR EACH ROW EXECUTE FUNCTION row_version_renew()"
    ]


# A project's topics are part of its views: a change to them renews the project's version.
_TOPICS_SQLITE = [
    "CREATE TRIGGER project_topics_row_version_insert AFTER INSERT ON project_topics BEGIN "
    "UPDATE projects SET row_version = random() WHERE id = NEW.project_id; END",
    "CREATE TRIGGER project_topics_row_version_delete AFTER DELETE ON project_topics BEGIN "
    "UPDATE projects SET row_version = random() WHERE id = OLD.project_id; END",
    "CREATE TRIGGER project_topics_row_version_update AFTER UPDATE ON project_topics BEGIN "
    "UPDATE projects SET row_version = random() WHERE id IN (OLD.project_id, NEW.project_id); END",
]
# The value set here is never kept: the projects' own trigger replaces it.
_TOPICS_POSTGRESQL = [
    "CREATE FUNCTION project_topics_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP IN ('DELETE', 'UPDATE') THEN "
    "UPDATE projects SET row_version = 0 WHERE id = OLD.project_id; END IF; "
    "IF TG_OP IN ('INSERT', 'UPDATE') THEN "
    "UPDATE projects SET row_version = 0 WHERE id = NEW.project_id; END IF; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER project_topics_row_version AFTER INSERT OR UPDATE OR DELETE ON project_topics "
    "FOR EACH ROW EXECUTE FUNCTION project_topics_touch()",
]


def upgrade() -> None:
    # Rows written before start at 0, the column's default; their next write renews it.
    sqlite = op.get_bind().dialect.name == "sqlite"
    if not sqlite:
        # Random, as on SQLite, not a sequence: a database restored from a backup, or a
        # sequence set back, would hand out again versions that name other rows' contents.
        op.execute(
            "CREATE FUNCTION row_version_renew() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "NEW.row_version := floor(random() * 9.0e18)::bigint; RETURN NEW; END $$"
        )
    for table in _TABLES:
        op.add_column(table, sa.Column("row_version", sa.BigInteger(), server_default="0", nullable=False))
        for statement in _sqlite(table) if sqlite else _postgresql(table):
            op.execute(statement)
    for statement in _TOPICS_SQLITE if sqlite else _TOPICS_POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER project_topics_row_version_{name}")
    else:
        op.execute("DROP TRIGGER project_topics_row_version ON project_topics")
        op.execute("DROP FUNCTION project_topics_touch()")
    for table in _TABLES:
        if sqlite:
            op.execute(f"DROP TRIGGER {table}_row_version_insert")
            op.execute(f"DROP TRIGGER {table}_row_version_update")
        else:
            op.execute(f"DROP TRIGGER {table}_row_version ON {table}")
        # Not batch mode: SQLite would rebuild the table without its other triggers.
        op.execute(f"ALTER TABLE {table} DROP COLUMN row_version")
    if not sqlite:
        op.execute("DROP FUNCTION row_version_renew()")
