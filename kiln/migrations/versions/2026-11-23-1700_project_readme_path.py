"""projects.readme_path: the README readme_url points at

Revision ID: 7b2e9d41c0a3
Revises: 3c1d2e4f5a6b
Create Date: 2026-11-23 17:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "7b2e9d41c0a3"
down_revision = "3c1d2e4f5a6b"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN on both databases: a batch operation would reflect (and on SQLite
    # might rebuild) a table with expression indexes.
    op.add_column("projects", sa.Column("readme_path", sa.String(255), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("projects") as batch:
        batch.drop_column("readme_path")
