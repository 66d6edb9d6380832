"""project_visibility_counts: how many projects of each visibility, kept by triggers

Revision ID: 3c7f1e2b9a64
Revises: 8a4d2c6e1b95
Create Date: 2026-11-25 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "3c7f1e2b9a64"
down_revision = "8a4d2c6e1b95"
branch_labels = None
depends_on = None

# One more project of NEW's visibility, one fewer of OLD's.
_ADD = (
    "INSERT INTO project_visibility_counts (visibility, projects) VALUES (NEW.visibility, 1) "
    "ON CONFLICT (visibility) DO UPDATE SET projects = project_visibility_counts.projects + 1"
)
_REMOVE = "UPDATE project_visibility_counts SET projects = projects - 1 WHERE visibility = OLD.visibility"

_SQLITE = [
    f"CREATE TRIGGER project_visibility_counts_insert AFTER INSERT ON projects BEGIN {_ADD}; END",
    f"CREATE TRIGGER project_visibility_counts_delete AFTER DELETE ON projects BEGIN {_REMOVE}; END",
    "CREATE TRIGGER project_visibility_counts_update AFTER UPDATE OF visibility ON projects "
    f"WHEN NEW.visibility IS NOT OLD.visibility BEGIN {_REMOVE}; {_ADD}; END",
]
_POSTGRESQL = [
    "CREATE FUNCTION project_visibility_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"IF TG_OP IN ('DELETE', 'UPDATE') THEN {_REMOVE}; END IF; "
    f"IF TG_OP IN ('INSERT', 'UPDATE') THEN {_ADD}; END IF; "
    "RETURN NULL; END $$",
    "CREATE TRIGGER project_visibility_counts_insert_delete AFTER INSERT OR DELETE ON projects "
    "FOR EACH ROW EXECUTE FUNCTION project_visibility_counts_track()",
    "CREATE TRIGGER project_visibility_counts_update AFTER UPDATE OF visibility ON projects "
    "FOR EACH ROW WHEN (OLD.visibility IS DISTINCT FROM NEW.visibility) "
    "EXECUTE FUNCTION project_visibility_counts_track()",
]


def upgrade() -> None:
    op.create_table(
        "project_visibility_counts",
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("projects", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("visibility", name=op.f("pk_project_visibility_counts")),
    )
    op.execute(
        "INSERT INTO project_visibility_counts (visibility, projects) "
        "SELECT visibility, count(*) FROM projects GROUP BY visibility"
    )
    for statement in _SQLITE if op.get_bind().dialect.name == "sqlite" else _POSTGRESQL:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER project_visibility_counts_{name}")
    else:
        op.execute("DROP TRIGGER project_visibility_counts_insert_delete ON projects")
        op.execute("DROP TRIGGER project_visibility_counts_update ON projects")
        op.execute("DROP FUNCTION project_visibility_counts_track()")
    op.drop_table("project_visibility_counts")
