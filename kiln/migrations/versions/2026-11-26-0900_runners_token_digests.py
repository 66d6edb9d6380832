"""projects.runners_token no longer held in clear: each project gets a nonce its token is
derived from under the server key, and the token's digest to find it by

Revision ID: 5d0b7e3a8c41
Revises: 7e4b2c9d1f60
Create Date: 2026-11-26 09:00:00

The migration has no server key, so the tokens held until now cannot be kept: each project
gets a new nonce, and with it a new token, shown where the old one was. No runner can have
registered with an old one (kiln had no registration endpoint). The digests of the new
tokens are made by kiln, which holds the key, before it first looks a token up.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import sqlalchemy as sa
from alembic import op

revision = "5d0b7e3a8c41"
down_revision = "7e4b2c9d1f60"
branch_labels = None
depends_on = None

_BATCH = 1000


def _renew_each(column: str, fresh: Callable[[], str]) -> None:
    """Every project's `column` set to a value of its own, made by `fresh`."""
    bind = op.get_bind()
    ids = bind.execute(sa.text("SELECT id FROM projects ORDER BY id")).scalars().all()
    update = sa.text(f"UPDATE projects SET {column} = :value WHERE id = :id")
    for start in range(0, len(ids), _BATCH):
        rows = [{"id": pid, "value": fresh()} for pid in ids[start : start + _BATCH]]
        bind.execute(update, rows)


def _add_filled(column: str, fresh: Callable[[], str]) -> None:
    """A NOT NULL column every row has a value of its own in. SQLite adds a NOT NULL column
    only with a constant default, which it cannot drop afterwards without rebuilding the
    table (and losing its triggers): there it stays, never used, as every insert gives one."""
    op.add_column("projects", sa.Column(column, sa.String(64), server_default="", nullable=False))
    _renew_each(column, fresh)
    if op.get_bind().dialect.name != "sqlite":
        op.alter_column("projects", column, server_default=None)


def upgrade() -> None:
    # Plain ALTER TABLE on both databases: batch mode would rebuild the SQLite table without
    # its triggers.
    _add_filled("runners_token_nonce", lambda: secrets.token_urlsafe(24))
    op.add_column("projects", sa.Column("runners_token_digest", sa.String(64), nullable=True))
    op.create_index("uq_projects_runners_token_digest", "projects", ["runners_token_digest"], unique=True)
    op.execute("ALTER TABLE projects DROP COLUMN runners_token")


def downgrade() -> None:
    # The derived tokens cannot be written back without the server key: each project gets a
    # fresh clear token instead.
    _add_filled("runners_token", lambda: "GR1348941" + secrets.token_urlsafe(15))
    op.drop_index("uq_projects_runners_token_digest", "projects")
    op.execute("ALTER TABLE projects DROP COLUMN runners_token_digest")
    op.execute("ALTER TABLE projects DROP COLUMN runners_token_nonce")
