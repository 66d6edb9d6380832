"""id_high_water: a deleted project's id is never handed out again (SQLite)

Revision ID: 8a4d2c6e1b95
Revises: 5e8c1f2a9d70
Create Date: 2026-11-25 19:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "8a4d2c6e1b95"
down_revision = "5e8c1f2a9d70"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "id_high_water",
        sa.Column("table_name", sa.String(length=64), nullable=False),
        sa.Column("last_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.PrimaryKeyConstraint("table_name", name=op.f("pk_id_high_water")),
    )


def downgrade() -> None:
    op.drop_table("id_high_water")
