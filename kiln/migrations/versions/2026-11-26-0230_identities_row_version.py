"""identities renew their user's row_version: a user's row carries its identities

Revision ID: 4e1a9c7b2d05
Revises: b7d2e9a41c38
Create Date: 2026-11-26 02:30:00
"""

from __future__ import annotations

from alembic import op

revision = "4e1a9c7b2d05"
down_revision = "b7d2e9a41c38"
branch_labels = None
depends_on = None

_SQLITE = [
    "CREATE TRIGGER identities_row_version_insert AFTER INSERT ON identities BEGIN "
    "UPDATE users SET row_version = random() WHERE id = NEW.user_id; END",
    "CREATE TRIGGER identities_row_version_delete AFTER DELETE ON identities BEGIN "
    "UPDATE users SET row_version = random() WHERE id = OLD.user_id; END",
    "CREATE TRIGGER identities_row_version_update AFTER UPDATE ON identities BEGIN "
    "UPDATE users SET row_version = random() WHERE id IN (OLD.user_id, NEW.user_id); END",
]
# The value set here is never kept: the users' own trigger replaces it.
_POSTGRESQL = [
    "CREATE FUNCTION identities_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP IN ('DELETE', 'UPDATE') THEN UPDATE users SET row_version = 0 WHERE id = OLD.user_id; END IF; "
    "IF TG_OP IN ('INSERT', 'UPDATE') THEN UPDATE users SET row_version = 0 WHERE id = NEW.user_id; END IF; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER identities_row_version AFTER INSERT OR UPDATE OR DELETE ON identities "
    "FOR EACH ROW EXECUTE FUNCTION identities_touch()",
]


def upgrade() -> None:
    for statement in _SQLITE if op.get_bind().dialect.name == "sqlite" else _POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER identities_row_version_{name}")
    else:
        op.execute("DROP TRIGGER identities_row_version ON identities")
        op.execute("DROP FUNCTION identities_touch()")
