"""namespaces.traversal compared bytewise on PostgreSQL

Revision ID: 3c1d2e4f5a6b
Revises: e69361f35708
Create Date: 2026-11-23 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "3c1d2e4f5a6b"
down_revision = "e69361f35708"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Range comparisons over traversal ("1/5/" <= t < "1/5/~") need byte order; SQLite's
    # default BINARY collation already is.
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("namespaces", "traversal", type_=sa.String(512, collation="C"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("namespaces", "traversal", type_=sa.String(512))
