"""planning: issues (assignees, links, time logs), labels and their priorities, milestones,
epics and their issues, notes and award emoji, boards and their lists, todos, subscriptions,
resource events, and the per-scope iid counters

Revision ID: 4c8e2a6f1b93
Revises: 9a3c5e7b1d20
Create Date: 2026-11-26 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base

revision = "4c8e2a6f1b93"
down_revision = "9a3c5e7b1d20"
branch_labels = None
depends_on = None

# In creation order (a table after those it references).
_NEW = (
    "internal_ids",
    "award_emoji",
    "resource_state_events",
    "resource_weight_events",
    "labels",
    "milestones",
    "notes",
    "subscriptions",
    "boards",
    "epics",
    "issues",
    "label_links",
    "label_priorities",
    "resource_label_events",
    "resource_milestone_events",
    "timelogs",
    "todos",
    "board_labels",
    "epic_issues",
    "issue_assignees",
    "issue_links",
    "lists",
)


def upgrade() -> None:
    op.create_table(
        "internal_ids",
        sa.Column("usage", sa.String(length=32), nullable=False),
        sa.Column("scope_id", sa.BigInteger(), nullable=False),
        sa.Column("last_value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("usage", "scope_id", name=op.f("pk_internal_ids")),
    )
    op.create_table(
        "award_emoji",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("awardable_type", sa.String(length=32), nullable=False),
        sa.Column("awardable_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_award_emoji_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_award_emoji")),
        sa.UniqueConstraint(
            "awardable_type",
            "awardable_id",
            "user_id",
            "name",
            name=op.f("uq_award_emoji_awardable_type_awardable_id_user_id_name"),
        ),
    )
    op.create_index("ix_award_emoji_user_name", "award_emoji", ["user_id", "name"], unique=False)

    op.create_table(
        "resource_state_events",
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_resource_state_events_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_state_events")),
    )
    op.create_index(
        "ix_resource_state_events_target",
        "resource_state_events",
        ["target_type", "target_id", "id"],
        unique=False,
    )

    op.create_table(
        "resource_weight_events",
        sa.Column("weight", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_resource_weight_events_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_weight_events")),
    )
    op.create_index(
        "ix_resource_weight_events_target",
        "resource_weight_events",
        ["target_type", "target_id", "id"],
        unique=False,
    )

    op.create_table(
        "labels",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("color", sa.String(length=7), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("lock_on_merge", sa.Boolean(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name=op.f("ck_labels_one_owner")),
        sa.ForeignKeyConstraint(
            ["group_id"], ["namespaces.id"], name=op.f("fk_labels_group_id_namespaces"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_labels_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_labels")),
        sa.UniqueConstraint("group_id", "title", name=op.f("uq_labels_group_id_title")),
        sa.UniqueConstraint("project_id", "title", name=op.f("uq_labels_project_id_title")),
    )
    op.create_index(op.f("ix_labels_group_id"), "labels", ["group_id"], unique=False)
    op.create_index(op.f("ix_labels_project_id"), "labels", ["project_id"], unique=False)

    op.create_table(
        "milestones",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("iid", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("start_date", sa.Date(), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(project_id IS NULL) <> (group_id IS NULL)", name=op.f("ck_milestones_one_owner")
        ),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["namespaces.id"],
            name=op.f("fk_milestones_group_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_milestones_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_milestones")),
        sa.UniqueConstraint("group_id", "iid", name=op.f("uq_milestones_group_id_iid")),
        sa.UniqueConstraint("group_id", "title", name=op.f("uq_milestones_group_id_title")),
        sa.UniqueConstraint("project_id", "iid", name=op.f("uq_milestones_project_id_iid")),
        sa.UniqueConstraint("project_id", "title", name=op.f("uq_milestones_project_id_title")),
    )
    op.create_index(op.f("ix_milestones_group_id"), "milestones", ["group_id"], unique=False)
    op.create_index(op.f("ix_milestones_project_id"), "milestones", ["project_id"], unique=False)

    op.create_table(
        "notes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("noteable_type", sa.String(length=32), nullable=False),
        sa.Column("noteable_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=True),
        sa.Column("system", sa.Boolean(), nullable=False),
        sa.Column("internal", sa.Boolean(), nullable=False),
        sa.Column("discussion_id", sa.String(length=40), nullable=False),
        sa.Column("resolvable", sa.Boolean(), nullable=False),
        sa.Column("resolved_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("position", sa.JSON(), nullable=True),
        sa.Column("commit_id", sa.String(length=64), nullable=True),
        sa.Column("updated_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("last_edited_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_notes_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["group_id"], ["namespaces.id"], name=op.f("fk_notes_group_id_namespaces"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_notes_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["resolved_by_id"], ["users.id"], name=op.f("fk_notes_resolved_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["updated_by_id"], ["users.id"], name=op.f("fk_notes_updated_by_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notes")),
    )
    op.create_index("ix_notes_discussion_id", "notes", ["discussion_id"], unique=False)
    op.create_index(op.f("ix_notes_group_id"), "notes", ["group_id"], unique=False)
    op.create_index(
        "ix_notes_noteable", "notes", ["noteable_type", "noteable_id", "created_at", "id"], unique=False
    )
    op.create_index(op.f("ix_notes_project_id"), "notes", ["project_id"], unique=False)

    op.create_table(
        "subscriptions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("subscribable_type", sa.String(length=32), nullable=False),
        sa.Column("subscribable_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("subscribed", sa.Boolean(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_subscriptions_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_subscriptions_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
        sa.UniqueConstraint(
            "subscribable_type",
            "subscribable_id",
            "user_id",
            name=op.f("uq_subscriptions_subscribable_type_subscribable_id_user_id"),
        ),
    )
    op.create_index(op.f("ix_subscriptions_user_id"), "subscriptions", ["user_id"], unique=False)

    op.create_table(
        "boards",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("milestone_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("assignee_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("weight", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("hide_backlog_list", sa.Boolean(), nullable=False),
        sa.Column("hide_closed_list", sa.Boolean(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name=op.f("ck_boards_one_owner")),
        sa.ForeignKeyConstraint(
            ["assignee_id"], ["users.id"], name=op.f("fk_boards_assignee_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["group_id"], ["namespaces.id"], name=op.f("fk_boards_group_id_namespaces"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["milestone_id"],
            ["milestones.id"],
            name=op.f("fk_boards_milestone_id_milestones"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_boards_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_boards")),
    )
    op.create_index(op.f("ix_boards_group_id"), "boards", ["group_id"], unique=False)
    op.create_index(op.f("ix_boards_project_id"), "boards", ["project_id"], unique=False)

    op.create_table(
        "epics",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("iid", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("parent_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("confidential", sa.Boolean(), nullable=False),
        sa.Column("closed_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("closed_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("start_date_is_fixed", sa.Boolean(), nullable=False),
        sa.Column("start_date_fixed", sa.Date(), nullable=True),
        sa.Column("due_date_is_fixed", sa.Boolean(), nullable=False),
        sa.Column("due_date_fixed", sa.Date(), nullable=True),
        sa.Column("start_date", sa.Date(), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column(
            "start_date_sourcing_milestone_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column(
            "due_date_sourcing_milestone_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("relative_position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("upvotes", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("downvotes", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_notes_count", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("last_edited_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_edited_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_epics_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["closed_by_id"], ["users.id"], name=op.f("fk_epics_closed_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["due_date_sourcing_milestone_id"],
            ["milestones.id"],
            name=op.f("fk_epics_due_date_sourcing_milestone_id_milestones"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["group_id"], ["namespaces.id"], name=op.f("fk_epics_group_id_namespaces"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["last_edited_by_id"],
            ["users.id"],
            name=op.f("fk_epics_last_edited_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"], ["epics.id"], name=op.f("fk_epics_parent_id_epics"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["start_date_sourcing_milestone_id"],
            ["milestones.id"],
            name=op.f("fk_epics_start_date_sourcing_milestone_id_milestones"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_epics")),
        sa.UniqueConstraint("group_id", "iid", name=op.f("uq_epics_group_id_iid")),
    )
    op.create_index("ix_epics_group_created", "epics", ["group_id", "created_at", "id"], unique=False)
    op.create_index(op.f("ix_epics_parent_id"), "epics", ["parent_id"], unique=False)

    op.create_table(
        "issues",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("iid", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("issue_type", sa.String(length=32), nullable=False),
        sa.Column("closed_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("closed_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("moved_to_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("duplicated_to_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("milestone_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("confidential", sa.Boolean(), nullable=False),
        sa.Column("discussion_locked", sa.Boolean(), nullable=True),
        sa.Column("weight", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("relative_position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("time_estimate", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("total_time_spent", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("upvotes", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("downvotes", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_notes_count", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("last_edited_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_edited_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_issues_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["closed_by_id"], ["users.id"], name=op.f("fk_issues_closed_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["duplicated_to_id"],
            ["issues.id"],
            name=op.f("fk_issues_duplicated_to_id_issues"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["last_edited_by_id"],
            ["users.id"],
            name=op.f("fk_issues_last_edited_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["milestone_id"],
            ["milestones.id"],
            name=op.f("fk_issues_milestone_id_milestones"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["moved_to_id"], ["issues.id"], name=op.f("fk_issues_moved_to_id_issues"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_issues_project_id_projects"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_issues")),
        sa.UniqueConstraint("project_id", "iid", name=op.f("uq_issues_project_id_iid")),
    )
    op.create_index("ix_issues_author_created", "issues", ["author_id", "created_at", "id"], unique=False)
    op.create_index(op.f("ix_issues_milestone_id"), "issues", ["milestone_id"], unique=False)
    op.create_index("ix_issues_project_created", "issues", ["project_id", "created_at", "id"], unique=False)
    op.create_index(
        "ix_issues_project_state_created", "issues", ["project_id", "state", "created_at", "id"], unique=False
    )
    op.create_index("ix_issues_project_updated", "issues", ["project_id", "updated_at", "id"], unique=False)

    op.create_table(
        "label_links",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_label_links_label_id_labels"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_links")),
        sa.UniqueConstraint(
            "label_id", "target_type", "target_id", name=op.f("uq_label_links_label_id_target_type_target_id")
        ),
    )
    op.create_index("ix_label_links_target", "label_links", ["target_type", "target_id"], unique=False)

    op.create_table(
        "label_priorities",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("priority", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_label_priorities_label_id_labels"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_label_priorities_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_label_priorities")),
        sa.UniqueConstraint("project_id", "label_id", name=op.f("uq_label_priorities_project_id_label_id")),
    )
    op.create_index(op.f("ix_label_priorities_label_id"), "label_priorities", ["label_id"], unique=False)

    op.create_table(
        "resource_label_events",
        sa.Column("label_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["label_id"],
            ["labels.id"],
            name=op.f("fk_resource_label_events_label_id_labels"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_resource_label_events_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_label_events")),
    )
    op.create_index(
        "ix_resource_label_events_target",
        "resource_label_events",
        ["target_type", "target_id", "id"],
        unique=False,
    )

    op.create_table(
        "resource_milestone_events",
        sa.Column("milestone_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["milestone_id"],
            ["milestones.id"],
            name=op.f("fk_resource_milestone_events_milestone_id_milestones"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_resource_milestone_events_user_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_milestone_events")),
    )
    op.create_index(
        "ix_resource_milestone_events_target",
        "resource_milestone_events",
        ["target_type", "target_id", "id"],
        unique=False,
    )

    op.create_table(
        "timelogs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("time_spent", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("spent_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("note_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["note_id"], ["notes.id"], name=op.f("fk_timelogs_note_id_notes"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_timelogs_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_timelogs_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timelogs")),
    )
    op.create_index(op.f("ix_timelogs_project_id"), "timelogs", ["project_id"], unique=False)
    op.create_index("ix_timelogs_target", "timelogs", ["target_type", "target_id"], unique=False)

    op.create_table(
        "todos",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("author_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("action", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("note_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("commit_id", sa.String(length=64), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"], ["users.id"], name=op.f("fk_todos_author_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["group_id"], ["namespaces.id"], name=op.f("fk_todos_group_id_namespaces"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["note_id"], ["notes.id"], name=op.f("fk_todos_note_id_notes"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_todos_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_todos_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_todos")),
    )
    op.create_index(op.f("ix_todos_group_id"), "todos", ["group_id"], unique=False)
    op.create_index(op.f("ix_todos_project_id"), "todos", ["project_id"], unique=False)
    op.create_index("ix_todos_target", "todos", ["target_type", "target_id"], unique=False)
    op.create_index("ix_todos_user_state", "todos", ["user_id", "state", "id"], unique=False)

    op.create_table(
        "board_labels",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("board_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["board_id"], ["boards.id"], name=op.f("fk_board_labels_board_id_boards"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_board_labels_label_id_labels"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_board_labels")),
        sa.UniqueConstraint("board_id", "label_id", name=op.f("uq_board_labels_board_id_label_id")),
    )
    op.create_index(op.f("ix_board_labels_board_id"), "board_labels", ["board_id"], unique=False)
    op.create_index(op.f("ix_board_labels_label_id"), "board_labels", ["label_id"], unique=False)

    op.create_table(
        "epic_issues",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("epic_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("issue_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("relative_position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["epic_id"], ["epics.id"], name=op.f("fk_epic_issues_epic_id_epics"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["issue_id"], ["issues.id"], name=op.f("fk_epic_issues_issue_id_issues"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_epic_issues")),
        sa.UniqueConstraint("issue_id", name=op.f("uq_epic_issues_issue_id")),
    )
    op.create_index(op.f("ix_epic_issues_epic_id"), "epic_issues", ["epic_id"], unique=False)

    op.create_table(
        "issue_assignees",
        sa.Column("issue_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["issue_id"], ["issues.id"], name=op.f("fk_issue_assignees_issue_id_issues"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_issue_assignees_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("issue_id", "user_id", name=op.f("pk_issue_assignees")),
    )
    op.create_index(op.f("ix_issue_assignees_user_id"), "issue_assignees", ["user_id"], unique=False)

    op.create_table(
        "issue_links",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("source_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("target_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("link_type", sa.String(length=16), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"], ["issues.id"], name=op.f("fk_issue_links_source_id_issues"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["target_id"], ["issues.id"], name=op.f("fk_issue_links_target_id_issues"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_issue_links")),
        sa.UniqueConstraint("source_id", "target_id", name=op.f("uq_issue_links_source_id_target_id")),
    )
    op.create_index(op.f("ix_issue_links_target_id"), "issue_links", ["target_id"], unique=False)

    op.create_table(
        "lists",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("board_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("list_type", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("label_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("milestone_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["board_id"], ["boards.id"], name=op.f("fk_lists_board_id_boards"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["label_id"], ["labels.id"], name=op.f("fk_lists_label_id_labels"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["milestone_id"],
            ["milestones.id"],
            name=op.f("fk_lists_milestone_id_milestones"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_lists_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lists")),
    )
    op.create_index(op.f("ix_lists_board_id"), "lists", ["board_id"], unique=False)
    op.create_index(op.f("ix_lists_label_id"), "lists", ["label_id"], unique=False)
    if op.get_bind().dialect.name != "sqlite":
        # Every table tells kiln.changes it changed (migration 2026-11-26-0400).
        for table in _NEW:
            op.execute(
                f'CREATE TRIGGER kiln_changed AFTER INSERT OR UPDATE OR DELETE ON "{table}" '
                "FOR EACH ROW EXECUTE FUNCTION kiln_changed()"
            )
            op.execute(
                f'CREATE TRIGGER kiln_changed_truncate AFTER TRUNCATE ON "{table}" '
                "FOR EACH STATEMENT EXECUTE FUNCTION kiln_changed()"
            )


def downgrade() -> None:
    for table in reversed(_NEW):
        op.drop_table(table)
