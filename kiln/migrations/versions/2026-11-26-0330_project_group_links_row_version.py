"""a project's group shares renew its row_version: its views list them

Revision ID: 2b8e6d4f9a17
Revises: 9c3f5a1d7e22
Create Date: 2026-11-26 03:30:00
"""

from __future__ import annotations

from alembic import op

revision = "2b8e6d4f9a17"
down_revision = "9c3f5a1d7e22"
branch_labels = None
depends_on = None

_SQLITE = [
    "CREATE TRIGGER project_group_links_row_version_insert AFTER INSERT ON project_group_links BEGIN "
    "UPDATE projects SET row_version = random() WHERE id = NEW.project_id; END",
    "CREATE TRIGGER project_group_links_row_version_delete AFTER DELETE ON project_group_links BEGIN "
    "UPDATE projects SET row_version = random() WHERE id = OLD.project_id; END",
    "CREATE TRIGGER project_group_links_row_version_update AFTER UPDATE ON project_group_links BEGIN "
    "UPDATE projects SET row_version = random() WHERE id IN (OLD.project_id, NEW.project_id); END",
]
# The value set here is never kept: the projects' own trigger replaces it.
_POSTGRESQL = [
    "CREATE FUNCTION project_group_links_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF TG_OP IN ('DELETE', 'UPDATE') THEN "
    "UPDATE projects SET row_version = 0 WHERE id = OLD.project_id; END IF; "
    "IF TG_OP IN ('INSERT', 'UPDATE') THEN "
    "UPDATE projects SET row_version = 0 WHERE id = NEW.project_id; END IF; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER project_group_links_row_version AFTER INSERT OR UPDATE OR DELETE ON project_group_links "
    "FOR EACH ROW EXECUTE FUNCTION project_group_links_touch()",
]


def upgrade() -> None:
    for statement in _SQLITE if op.get_bind().dialect.name == "sqlite" else _POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER project_group_links_row_version_{name}")
    else:
        op.execute("DROP TRIGGER project_group_links_row_version ON project_group_links")
        op.execute("DROP FUNCTION project_group_links_touch()")
