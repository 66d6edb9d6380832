"""repositories: protected branches, commit notes, events

Revision ID: e69361f35708
Revises: 95a4a44d89f2
Create Date: 2026-11-23 11:28:20.669712
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base


revision = "e69361f35708"
down_revision = "95a4a44d89f2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "commit_notes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("commit_sha", sa.String(length=64), nullable=False),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("path", sa.Text(), nullable=True),
        sa.Column("line", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("line_type", sa.String(length=8), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["author_id"], ["users.id"], name=op.f("fk_commit_notes_author_id_users")),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_commit_notes_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_commit_notes")),
    )
    with op.batch_alter_table("commit_notes", schema=None) as batch_op:
        batch_op.create_index("ix_commit_notes_project_sha", ["project_id", "commit_sha"], unique=False)

    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=True),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_events_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_events_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_events_author_id"), ["author_id"], unique=False)
        batch_op.create_index("ix_events_project_id_id", ["project_id", "id"], unique=False)

    op.create_table(
        "protected_branches",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("push_access_level", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("merge_access_level", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "unprotect_access_level", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("allow_force_push", sa.Boolean(), nullable=False),
        sa.Column("code_owner_approval_required", sa.Boolean(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_protected_branches_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_protected_branches")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_protected_branches_project_id_name")),
    )
    with op.batch_alter_table("protected_branches", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_protected_branches_project_id"), ["project_id"], unique=False)

    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.add_column(sa.Column("languages", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("languages_sha", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_column("languages_sha")
        batch_op.drop_column("languages")
    # SQLite rebuilt the table and cannot carry expression indexes across.
    op.execute("DROP INDEX IF EXISTS uq_projects_namespace_path_lower")
    op.create_index(
        "uq_projects_namespace_path_lower", "projects", ["namespace_id", sa.text("lower(path)")], unique=True
    )

    with op.batch_alter_table("protected_branches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_protected_branches_project_id"))

    op.drop_table("protected_branches")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index("ix_events_project_id_id")
        batch_op.drop_index(batch_op.f("ix_events_author_id"))

    op.drop_table("events")
    with op.batch_alter_table("commit_notes", schema=None) as batch_op:
        batch_op.drop_index("ix_commit_notes_project_sha")

    op.drop_table("commit_notes")
