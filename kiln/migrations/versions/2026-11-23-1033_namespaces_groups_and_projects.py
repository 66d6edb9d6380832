"""namespaces, groups and projects

Revision ID: 95a4a44d89f2
Revises: e25136024d52
Create Date: 2026-11-23 10:33:19.889304
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base

revision = "95a4a44d89f2"
down_revision = "e25136024d52"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "application_settings",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("values", sa.JSON(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_application_settings")),
    )
    op.create_table(
        "group_custom_attributes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("namespace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_group_custom_attributes_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_group_custom_attributes")),
        sa.UniqueConstraint("namespace_id", "key", name=op.f("uq_group_custom_attributes_namespace_id_key")),
    )
    with op.batch_alter_table("group_custom_attributes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_group_custom_attributes_namespace_id"), ["namespace_id"], unique=False
        )

    op.create_table(
        "projects",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("namespace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("creator_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("path", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("default_branch", sa.String(length=255), nullable=True),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("avatar_path", sa.String(length=512), nullable=True),
        sa.Column("last_activity_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("forked_from_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("forks_count", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("star_count", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("marked_for_deletion_on", sa.Date(), nullable=True),
        sa.Column(
            "marked_for_deletion_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("runners_token", sa.String(length=64), nullable=False),
        sa.Column("import_status", sa.String(length=32), nullable=False),
        sa.Column("import_url", sa.String(length=2048), nullable=True),
        sa.Column("import_error", sa.Text(), nullable=True),
        sa.Column("primary_language", sa.String(length=64), nullable=True),
        sa.Column("issues_access_level", sa.String(length=16), nullable=False),
        sa.Column("repository_access_level", sa.String(length=16), nullable=False),
        sa.Column("merge_requests_access_level", sa.String(length=16), nullable=False),
        sa.Column("forking_access_level", sa.String(length=16), nullable=False),
        sa.Column("wiki_access_level", sa.String(length=16), nullable=False),
        sa.Column("builds_access_level", sa.String(length=16), nullable=False),
        sa.Column("snippets_access_level", sa.String(length=16), nullable=False),
        sa.Column("pages_access_level", sa.String(length=16), nullable=False),
        sa.Column("operations_access_level", sa.String(length=16), nullable=False),
        sa.Column("analytics_access_level", sa.String(length=16), nullable=False),
        sa.Column("container_registry_access_level", sa.String(length=16), nullable=False),
        sa.Column("security_and_compliance_access_level", sa.String(length=16), nullable=False),
        sa.Column("releases_access_level", sa.String(length=16), nullable=False),
        sa.Column("environments_access_level", sa.String(length=16), nullable=False),
        sa.Column("feature_flags_access_level", sa.String(length=16), nullable=False),
        sa.Column("infrastructure_access_level", sa.String(length=16), nullable=False),
        sa.Column("monitor_access_level", sa.String(length=16), nullable=False),
        sa.Column("model_experiments_access_level", sa.String(length=16), nullable=False),
        sa.Column("model_registry_access_level", sa.String(length=16), nullable=False),
        sa.Column("requirements_access_level", sa.String(length=16), nullable=False),
        sa.Column("request_access_enabled", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("lfs_enabled", sa.Boolean(), nullable=False),
        sa.Column("emails_enabled", sa.Boolean(), nullable=False),
        sa.Column("shared_runners_enabled", sa.Boolean(), nullable=False),
        sa.Column("group_runners_enabled", sa.Boolean(), nullable=False),
        sa.Column("public_jobs", sa.Boolean(), nullable=False),
        sa.Column("packages_enabled", sa.Boolean(), nullable=False),
        sa.Column("service_desk_enabled", sa.Boolean(), nullable=False),
        sa.Column("merge_method", sa.String(length=16), nullable=False),
        sa.Column("squash_option", sa.String(length=16), nullable=False),
        sa.Column("only_allow_merge_if_pipeline_succeeds", sa.Boolean(), nullable=False),
        sa.Column("only_allow_merge_if_all_discussions_are_resolved", sa.Boolean(), nullable=False),
        sa.Column("allow_merge_on_skipped_pipeline", sa.Boolean(), nullable=True),
        sa.Column("remove_source_branch_after_merge", sa.Boolean(), nullable=False),
        sa.Column("resolve_outdated_diff_discussions", sa.Boolean(), nullable=False),
        sa.Column("printing_merge_request_link_enabled", sa.Boolean(), nullable=False),
        sa.Column("autoclose_referenced_issues", sa.Boolean(), nullable=False),
        sa.Column("enforce_auth_checks_on_uploads", sa.Boolean(), nullable=False),
        sa.Column("suggestion_commit_message", sa.String(length=255), nullable=True),
        sa.Column("merge_commit_template", sa.Text(), nullable=True),
        sa.Column("squash_commit_template", sa.Text(), nullable=True),
        sa.Column("issue_branch_template", sa.String(length=255), nullable=True),
        sa.Column("merge_requests_template", sa.Text(), nullable=True),
        sa.Column("issues_template", sa.Text(), nullable=True),
        sa.Column("ci_config_path", sa.String(length=255), nullable=True),
        sa.Column(
            "ci_default_git_depth", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("build_timeout", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("auto_cancel_pending_pipelines", sa.String(length=16), nullable=False),
        sa.Column("ci_forward_deployment_enabled", sa.Boolean(), nullable=False),
        sa.Column("keep_latest_artifact", sa.Boolean(), nullable=False),
        sa.Column("auto_devops_enabled", sa.Boolean(), nullable=False),
        sa.Column("auto_devops_deploy_strategy", sa.String(length=32), nullable=False),
        sa.Column("mirror", sa.Boolean(), nullable=False),
        sa.Column(
            "approvals_before_merge", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("external_authorization_classification_label", sa.String(length=255), nullable=False),
        sa.Column("repository_storage", sa.String(length=64), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["creator_id"], ["users.id"], name=op.f("fk_projects_creator_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["forked_from_id"],
            ["projects.id"],
            name=op.f("fk_projects_forked_from_id_projects"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["marked_for_deletion_by_id"],
            ["users.id"],
            name=op.f("fk_projects_marked_for_deletion_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_projects_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
    )
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_projects_creator_id"), ["creator_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_projects_forked_from_id"), ["forked_from_id"], unique=False)
        batch_op.create_index("ix_projects_last_activity_at", ["last_activity_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_projects_namespace_id"), ["namespace_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_projects_primary_language"), ["primary_language"], unique=False)
        batch_op.create_index("ix_projects_visibility_id", ["visibility", "id"], unique=False)

    op.create_index(
        "uq_projects_namespace_path_lower", "projects", ["namespace_id", sa.text("lower(path)")], unique=True
    )

    op.create_table(
        "project_custom_attributes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_custom_attributes_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_custom_attributes")),
        sa.UniqueConstraint("project_id", "key", name=op.f("uq_project_custom_attributes_project_id_key")),
    )
    with op.batch_alter_table("project_custom_attributes", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_project_custom_attributes_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "project_group_links",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("group_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("group_access", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("expires_at", sa.Date(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["namespaces.id"],
            name=op.f("fk_project_group_links_group_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_group_links_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_group_links")),
        sa.UniqueConstraint(
            "project_id", "group_id", name=op.f("uq_project_group_links_project_id_group_id")
        ),
    )
    with op.batch_alter_table("project_group_links", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_project_group_links_group_id"), ["group_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_project_group_links_project_id"), ["project_id"], unique=False)

    op.create_table(
        "project_stars",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_stars_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_project_stars_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_stars")),
        sa.UniqueConstraint("project_id", "user_id", name=op.f("uq_project_stars_project_id_user_id")),
    )
    with op.batch_alter_table("project_stars", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_project_stars_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_project_stars_user_id"), ["user_id"], unique=False)

    op.create_table(
        "project_statistics",
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("commit_count", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("repository_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("wiki_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("lfs_objects_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_artifacts_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "pipeline_artifacts_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("packages_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("snippets_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("uploads_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "container_registry_size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_statistics_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_project_statistics")),
    )
    op.create_table(
        "project_topics",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("position", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_project_topics_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_project_topics")),
        sa.UniqueConstraint("project_id", "name", name=op.f("uq_project_topics_project_id_name")),
    )
    with op.batch_alter_table("project_topics", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_project_topics_name"), ["name"], unique=False)
        batch_op.create_index(batch_op.f("ix_project_topics_project_id"), ["project_id"], unique=False)

    op.create_table(
        "uploads",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("namespace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("secret", sa.String(length=64), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("storage_key", sa.String(length=1024), nullable=False),
        sa.Column("uploaded_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_uploads_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_uploads_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["uploaded_by_id"],
            ["users.id"],
            name=op.f("fk_uploads_uploaded_by_id_users"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_uploads")),
    )
    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_uploads_namespace_id"), ["namespace_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_uploads_project_id"), ["project_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_uploads_secret"), ["secret"], unique=False)

    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.add_column(
            sa.Column("requested_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("created_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.alter_column("namespace_id", existing_type=sa.INTEGER(), nullable=True)
        batch_op.create_index(batch_op.f("ix_members_project_id"), ["project_id"], unique=False)
        batch_op.create_check_constraint("one_source", "(namespace_id IS NULL) <> (project_id IS NULL)")
        batch_op.create_unique_constraint(
            batch_op.f("uq_members_project_id_user_id"), ["project_id", "user_id"]
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_members_created_by_id_users"),
            "users",
            ["created_by_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_members_project_id_projects"),
            "projects",
            ["project_id"],
            ["id"],
            ondelete="CASCADE",
        )

    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.add_column(sa.Column("full_path", sa.String(length=2048), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("full_name", sa.String(length=2048), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("traversal", sa.String(length=512), nullable=False, server_default=""))
        batch_op.add_column(sa.Column("avatar_path", sa.String(length=512), nullable=True))
        batch_op.add_column(sa.Column("request_access_enabled", sa.Boolean(), nullable=False))
        batch_op.add_column(
            sa.Column("share_with_group_lock", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(
            sa.Column(
                "require_two_factor_authentication", sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
        batch_op.add_column(
            sa.Column(
                "two_factor_grace_period",
                sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                nullable=False,
                server_default="48",
            )
        )
        batch_op.add_column(
            sa.Column(
                "project_creation_level", sa.String(length=32), nullable=False, server_default="developer"
            )
        )
        batch_op.add_column(
            sa.Column(
                "subgroup_creation_level", sa.String(length=32), nullable=False, server_default="maintainer"
            )
        )
        batch_op.add_column(sa.Column("lfs_enabled", sa.Boolean(), nullable=False, server_default=sa.true()))
        batch_op.add_column(
            sa.Column("emails_enabled", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch_op.add_column(sa.Column("mentions_disabled", sa.Boolean(), nullable=True))
        batch_op.add_column(sa.Column("auto_devops_enabled", sa.Boolean(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "default_branch_protection",
                sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                nullable=True,
            )
        )
        batch_op.add_column(sa.Column("default_branch", sa.String(length=255), nullable=True))
        batch_op.add_column(
            sa.Column("creator_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True)
        )
        batch_op.add_column(sa.Column("marked_for_deletion_on", sa.Date(), nullable=True))
        batch_op.create_index(batch_op.f("ix_namespaces_traversal"), ["traversal"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_namespaces_creator_id_users"), "users", ["creator_id"], ["id"], ondelete="SET NULL"
        )

    # SQLite rebuilt the table above and cannot carry expression indexes across: build them here.
    op.execute("DROP INDEX IF EXISTS uq_namespaces_parent_path_lower")
    op.create_index(
        "uq_namespaces_parent_path_lower",
        "namespaces",
        [sa.text("coalesce(parent_id, 0)"), sa.text("lower(path)")],
        unique=True,
    )
    op.create_index("ix_namespaces_full_path_lower", "namespaces", [sa.text("lower(full_path)")])

    # Until now only users' own namespaces existed: top level, their path is the full path.
    op.execute(
        "UPDATE namespaces SET full_path = path, full_name = name, traversal = "
        + ("CAST(id AS TEXT) || '/'" if op.get_bind().dialect.name == "sqlite" else "id::text || '/'")
    )


def downgrade() -> None:
    op.drop_index("ix_namespaces_full_path_lower", table_name="namespaces")
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_namespaces_creator_id_users"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_namespaces_traversal"))
        batch_op.drop_column("marked_for_deletion_on")
        batch_op.drop_column("creator_id")
        batch_op.drop_column("default_branch")
        batch_op.drop_column("default_branch_protection")
        batch_op.drop_column("auto_devops_enabled")
        batch_op.drop_column("mentions_disabled")
        batch_op.drop_column("emails_enabled")
        batch_op.drop_column("lfs_enabled")
        batch_op.drop_column("subgroup_creation_level")
        batch_op.drop_column("project_creation_level")
        batch_op.drop_column("two_factor_grace_period")
        batch_op.drop_column("require_two_factor_authentication")
        batch_op.drop_column("share_with_group_lock")
        batch_op.drop_column("request_access_enabled")
        batch_op.drop_column("avatar_path")
        batch_op.drop_column("traversal")
        batch_op.drop_column("full_name")
        batch_op.drop_column("full_path")
    op.execute("DROP INDEX IF EXISTS uq_namespaces_parent_path_lower")
    op.create_index(
        "uq_namespaces_parent_path_lower",
        "namespaces",
        [sa.text("coalesce(parent_id, 0)"), sa.text("lower(path)")],
        unique=True,
    )

    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_members_project_id_projects"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("fk_members_created_by_id_users"), type_="foreignkey")
        batch_op.drop_constraint(batch_op.f("uq_members_project_id_user_id"), type_="unique")
        batch_op.drop_constraint(batch_op.f("ck_members_one_source"), type_="check")
        batch_op.drop_index(batch_op.f("ix_members_project_id"))
        batch_op.alter_column("namespace_id", existing_type=sa.INTEGER(), nullable=False)
        batch_op.drop_column("created_by_id")
        batch_op.drop_column("requested_at")
        batch_op.drop_column("project_id")

    with op.batch_alter_table("uploads", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_uploads_secret"))
        batch_op.drop_index(batch_op.f("ix_uploads_project_id"))
        batch_op.drop_index(batch_op.f("ix_uploads_namespace_id"))

    op.drop_table("uploads")
    with op.batch_alter_table("project_topics", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_project_topics_project_id"))
        batch_op.drop_index(batch_op.f("ix_project_topics_name"))

    op.drop_table("project_topics")
    op.drop_table("project_statistics")
    with op.batch_alter_table("project_stars", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_project_stars_user_id"))
        batch_op.drop_index(batch_op.f("ix_project_stars_project_id"))

    op.drop_table("project_stars")
    with op.batch_alter_table("project_group_links", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_project_group_links_project_id"))
        batch_op.drop_index(batch_op.f("ix_project_group_links_group_id"))

    op.drop_table("project_group_links")
    with op.batch_alter_table("project_custom_attributes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_project_custom_attributes_project_id"))

    op.drop_table("project_custom_attributes")
    op.drop_index("uq_projects_namespace_path_lower", table_name="projects")
    with op.batch_alter_table("projects", schema=None) as batch_op:
        batch_op.drop_index("ix_projects_visibility_id")
        batch_op.drop_index(batch_op.f("ix_projects_primary_language"))
        batch_op.drop_index(batch_op.f("ix_projects_namespace_id"))
        batch_op.drop_index("ix_projects_last_activity_at")
        batch_op.drop_index(batch_op.f("ix_projects_forked_from_id"))
        batch_op.drop_index(batch_op.f("ix_projects_creator_id"))

    op.drop_table("projects")
    with op.batch_alter_table("group_custom_attributes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_group_custom_attributes_namespace_id"))

    op.drop_table("group_custom_attributes")
    op.drop_table("application_settings")
