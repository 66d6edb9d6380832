"""projects (created_at, id): the default order of every project list

Revision ID: 5e8c1f2a9d70
Revises: 7b2e9d41c0a3
Create Date: 2026-11-25 19:00:00
"""

from __future__ import annotations

from alembic import op

revision = "5e8c1f2a9d70"
down_revision = "7b2e9d41c0a3"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A page of GET /projects (newest first) walks this index and stops after the page,
    # instead of sorting every project the caller may see.
    op.create_index("ix_projects_created_at_id", "projects", ["created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_projects_created_at_id", table_name="projects")
