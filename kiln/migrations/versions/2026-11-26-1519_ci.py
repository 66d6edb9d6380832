"""ci: runners (tags, projects, groups), pipelines and their variables, jobs and their
artifacts, CI variables (instance, group, project), pipeline schedules and their variables,
trigger tokens; groups' runner registration tokens (nonce and digest)

Revision ID: 7aaf85bf2811
Revises: 4c8e2a6f1b93
Create Date: 2026-11-26 15:19:18
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base


revision = "7aaf85bf2811"
down_revision = "4c8e2a6f1b93"
branch_labels = None
depends_on = None


# In creation order (a table after those it references).
_NEW = (
    "ci_instance_variables",
    "ci_runners",
    "ci_group_variables",
    "ci_runner_namespaces",
    "ci_runner_tags",
    "ci_pipeline_schedules",
    "ci_runner_projects",
    "ci_triggers",
    "ci_variables",
    "ci_pipeline_schedule_variables",
    "ci_pipelines",
    "ci_jobs",
    "ci_pipeline_variables",
    "ci_job_artifacts",
)


def upgrade() -> None:
    op.create_table(
        "ci_instance_variables",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("variable_type", sa.String(length=16), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("masked", sa.Boolean(), nullable=False),
        sa.Column("hidden", sa.Boolean(), nullable=False),
        sa.Column("raw", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_instance_variables")),
        sa.UniqueConstraint("key", name=op.f("uq_ci_instance_variables_key")),
    )
    op.create_table(
        "ci_runners",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("runner_type", sa.String(length=16), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("token_prefix", sa.String(length=16), nullable=False),
        sa.Column("token_expires_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("registration_type", sa.String(length=32), nullable=False),
        sa.Column("creator_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("maintenance_note", sa.Text(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("locked", sa.Boolean(), nullable=False),
        sa.Column("run_untagged", sa.Boolean(), nullable=False),
        sa.Column("access_level", sa.String(length=16), nullable=False),
        sa.Column("maximum_timeout", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("version", sa.String(length=255), nullable=True),
        sa.Column("revision", sa.String(length=255), nullable=True),
        sa.Column("platform", sa.String(length=255), nullable=True),
        sa.Column("architecture", sa.String(length=255), nullable=True),
        sa.Column("executor_type", sa.String(length=64), nullable=True),
        sa.Column("ip_address", sa.String(length=64), nullable=True),
        sa.Column("contacted_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["creator_id"], ["users.id"], name=op.f("fk_ci_runners_creator_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_runners")),
    )
    op.create_index("uq_ci_runners_token_digest", "ci_runners", ["token_digest"], unique=True)

    op.create_table(
        "ci_group_variables",
        sa.Column("namespace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("environment_scope", sa.String(length=255), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("variable_type", sa.String(length=16), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("masked", sa.Boolean(), nullable=False),
        sa.Column("hidden", sa.Boolean(), nullable=False),
        sa.Column("raw", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_ci_group_variables_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_group_variables")),
        sa.UniqueConstraint(
            "namespace_id",
            "key",
            "environment_scope",
            name=op.f("uq_ci_group_variables_namespace_id_key_environment_scope"),
        ),
    )
    op.create_table(
        "ci_runner_namespaces",
        sa.Column("runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("namespace_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_ci_runner_namespaces_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["ci_runners.id"],
            name=op.f("fk_ci_runner_namespaces_runner_id_ci_runners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("runner_id", name=op.f("pk_ci_runner_namespaces")),
    )
    op.create_index(
        op.f("ix_ci_runner_namespaces_namespace_id"), "ci_runner_namespaces", ["namespace_id"], unique=False
    )

    op.create_table(
        "ci_runner_tags",
        sa.Column("runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["ci_runners.id"],
            name=op.f("fk_ci_runner_tags_runner_id_ci_runners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("runner_id", "name", name=op.f("pk_ci_runner_tags")),
    )
    op.create_table(
        "ci_pipeline_schedules",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("owner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("ref", sa.String(length=1024), nullable=False),
        sa.Column("cron", sa.String(length=255), nullable=False),
        sa.Column("cron_timezone", sa.String(length=255), nullable=False),
        sa.Column("next_run_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_ci_pipeline_schedules_owner_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_pipeline_schedules_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_pipeline_schedules")),
    )
    op.create_index(
        "ix_ci_pipeline_schedules_due", "ci_pipeline_schedules", ["active", "next_run_at"], unique=False
    )
    op.create_index(
        op.f("ix_ci_pipeline_schedules_project_id"), "ci_pipeline_schedules", ["project_id"], unique=False
    )

    op.create_table(
        "ci_runner_projects",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_runner_projects_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["ci_runners.id"],
            name=op.f("fk_ci_runner_projects_runner_id_ci_runners"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_runner_projects")),
        sa.UniqueConstraint(
            "runner_id", "project_id", name=op.f("uq_ci_runner_projects_runner_id_project_id")
        ),
    )
    op.create_index(
        op.f("ix_ci_runner_projects_project_id"), "ci_runner_projects", ["project_id"], unique=False
    )

    op.create_table(
        "ci_triggers",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("owner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("token_nonce", sa.String(length=64), nullable=False),
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("last_used", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("expires_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["users.id"], name=op.f("fk_ci_triggers_owner_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_triggers_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_triggers")),
    )
    op.create_index(op.f("ix_ci_triggers_project_id"), "ci_triggers", ["project_id"], unique=False)
    op.create_index("uq_ci_triggers_token_digest", "ci_triggers", ["token_digest"], unique=True)

    op.create_table(
        "ci_variables",
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("environment_scope", sa.String(length=255), nullable=False),
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("variable_type", sa.String(length=16), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("masked", sa.Boolean(), nullable=False),
        sa.Column("hidden", sa.Boolean(), nullable=False),
        sa.Column("raw", sa.Boolean(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_variables_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_variables")),
        sa.UniqueConstraint(
            "project_id",
            "key",
            "environment_scope",
            name=op.f("uq_ci_variables_project_id_key_environment_scope"),
        ),
    )
    op.create_table(
        "ci_pipeline_schedule_variables",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("variable_type", sa.String(length=16), nullable=False),
        sa.Column("raw", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["ci_pipeline_schedules.id"],
            name=op.f("fk_ci_pipeline_schedule_variables_schedule_id_ci_pipeline_schedules"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_pipeline_schedule_variables")),
        sa.UniqueConstraint(
            "schedule_id", "key", name=op.f("uq_ci_pipeline_schedule_variables_schedule_id_key")
        ),
    )
    op.create_table(
        "ci_pipelines",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("iid", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("ref", sa.String(length=1024), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("before_sha", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.Boolean(), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("yaml_errors", sa.Text(), nullable=True),
        sa.Column("config_path", sa.String(length=1024), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=True),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("schedule_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("trigger_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("started_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("committed_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("duration", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("coverage", sa.Double(), nullable=True),
        sa.Column("failure_reason", sa.String(length=64), nullable=True),
        sa.Column("lock_version", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_pipelines_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["schedule_id"],
            ["ci_pipeline_schedules.id"],
            name=op.f("fk_ci_pipelines_schedule_id_ci_pipeline_schedules"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["trigger_id"],
            ["ci_triggers.id"],
            name=op.f("fk_ci_pipelines_trigger_id_ci_triggers"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_ci_pipelines_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_pipelines")),
        sa.UniqueConstraint("project_id", "iid", name=op.f("uq_ci_pipelines_project_id_iid")),
    )
    op.create_index("ix_ci_pipelines_project_id_id", "ci_pipelines", ["project_id", "id"], unique=False)
    op.create_index(
        "ix_ci_pipelines_project_ref_id", "ci_pipelines", ["project_id", "ref", "id"], unique=False
    )
    op.create_index("ix_ci_pipelines_project_sha", "ci_pipelines", ["project_id", "sha"], unique=False)
    op.create_index(
        "ix_ci_pipelines_project_status_id", "ci_pipelines", ["project_id", "status", "id"], unique=False
    )
    op.create_index(op.f("ix_ci_pipelines_schedule_id"), "ci_pipelines", ["schedule_id"], unique=False)
    op.create_index(op.f("ix_ci_pipelines_user_id"), "ci_pipelines", ["user_id"], unique=False)

    op.create_table(
        "ci_jobs",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("pipeline_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("stage", sa.String(length=255), nullable=False),
        sa.Column("stage_idx", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("when", sa.String(length=16), nullable=False),
        sa.Column("allow_failure", sa.Boolean(), nullable=False),
        sa.Column("scheduling_type", sa.String(length=8), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("yaml_variables", sa.JSON(), nullable=False),
        sa.Column("tag_list", sa.JSON(), nullable=False),
        sa.Column("ref", sa.String(length=1024), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("tag", sa.Boolean(), nullable=False),
        sa.Column("protected", sa.Boolean(), nullable=False),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("runner_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("token_digest", sa.String(length=64), nullable=True),
        sa.Column("queued_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("started_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("scheduled_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("duration", sa.Double(), nullable=True),
        sa.Column("coverage", sa.Double(), nullable=True),
        sa.Column("failure_reason", sa.String(length=64), nullable=True),
        sa.Column("exit_code", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("retried", sa.Boolean(), nullable=False),
        sa.Column("trace_size", sa.BigInteger(), nullable=False),
        sa.Column("trace_updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("erased_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("erased_by_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("artifacts_expire_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("target_url", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("lock_version", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["erased_by_id"], ["users.id"], name=op.f("fk_ci_jobs_erased_by_id_users"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["ci_pipelines.id"],
            name=op.f("fk_ci_jobs_pipeline_id_ci_pipelines"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"], ["projects.id"], name=op.f("fk_ci_jobs_project_id_projects"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["runner_id"],
            ["ci_runners.id"],
            name=op.f("fk_ci_jobs_runner_id_ci_runners"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_ci_jobs_user_id_users"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_jobs")),
    )
    op.create_index("ix_ci_jobs_pipeline_id_id", "ci_jobs", ["pipeline_id", "id"], unique=False)
    op.create_index("ix_ci_jobs_project_id_id", "ci_jobs", ["project_id", "id"], unique=False)
    op.create_index("ix_ci_jobs_runner_id_id", "ci_jobs", ["runner_id", "id"], unique=False)
    op.create_index("ix_ci_jobs_status_id", "ci_jobs", ["status", "id"], unique=False)
    op.create_index(op.f("ix_ci_jobs_user_id"), "ci_jobs", ["user_id"], unique=False)
    op.create_index("uq_ci_jobs_token_digest", "ci_jobs", ["token_digest"], unique=True)

    op.create_table(
        "ci_pipeline_variables",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("pipeline_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("variable_type", sa.String(length=16), nullable=False),
        sa.Column("raw", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["pipeline_id"],
            ["ci_pipelines.id"],
            name=op.f("fk_ci_pipeline_variables_pipeline_id_ci_pipelines"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_pipeline_variables")),
        sa.UniqueConstraint("pipeline_id", "key", name=op.f("uq_ci_pipeline_variables_pipeline_id_key")),
    )
    op.create_table(
        "ci_job_artifacts",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("job_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("project_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("file_type", sa.String(length=32), nullable=False),
        sa.Column("file_format", sa.String(length=16), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("file_sha256", sa.String(length=64), nullable=True),
        sa.Column("store_key", sa.String(length=1024), nullable=False),
        sa.Column("expire_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["ci_jobs.id"], name=op.f("fk_ci_job_artifacts_job_id_ci_jobs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_ci_job_artifacts_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ci_job_artifacts")),
        sa.UniqueConstraint("job_id", "file_type", name=op.f("uq_ci_job_artifacts_job_id_file_type")),
    )
    op.create_index(op.f("ix_ci_job_artifacts_project_id"), "ci_job_artifacts", ["project_id"], unique=False)

    op.add_column("namespaces", sa.Column("runners_token_nonce", sa.String(length=64), nullable=True))
    op.add_column("namespaces", sa.Column("runners_token_digest", sa.String(length=64), nullable=True))
    op.create_index("uq_namespaces_runners_token_digest", "namespaces", ["runners_token_digest"], unique=True)
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
    op.drop_index("uq_namespaces_runners_token_digest", table_name="namespaces")
    op.drop_column("namespaces", "runners_token_digest")
    op.drop_column("namespaces", "runners_token_nonce")

    op.drop_index(op.f("ix_ci_job_artifacts_project_id"), table_name="ci_job_artifacts")

    op.drop_table("ci_job_artifacts")
    op.drop_table("ci_pipeline_variables")
    op.drop_index("uq_ci_jobs_token_digest", table_name="ci_jobs")
    op.drop_index(op.f("ix_ci_jobs_user_id"), table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_status_id", table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_runner_id_id", table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_project_id_id", table_name="ci_jobs")
    op.drop_index("ix_ci_jobs_pipeline_id_id", table_name="ci_jobs")

    op.drop_table("ci_jobs")
    op.drop_index(op.f("ix_ci_pipelines_user_id"), table_name="ci_pipelines")
    op.drop_index(op.f("ix_ci_pipelines_schedule_id"), table_name="ci_pipelines")
    op.drop_index("ix_ci_pipelines_project_status_id", table_name="ci_pipelines")
    op.drop_index("ix_ci_pipelines_project_sha", table_name="ci_pipelines")
    op.drop_index("ix_ci_pipelines_project_ref_id", table_name="ci_pipelines")
    op.drop_index("ix_ci_pipelines_project_id_id", table_name="ci_pipelines")

    op.drop_table("ci_pipelines")
    op.drop_table("ci_pipeline_schedule_variables")
    op.drop_table("ci_variables")
    op.drop_index("uq_ci_triggers_token_digest", table_name="ci_triggers")
    op.drop_index(op.f("ix_ci_triggers_project_id"), table_name="ci_triggers")

    op.drop_table("ci_triggers")
    op.drop_index(op.f("ix_ci_runner_projects_project_id"), table_name="ci_runner_projects")

    op.drop_table("ci_runner_projects")
    op.drop_index(op.f("ix_ci_pipeline_schedules_project_id"), table_name="ci_pipeline_schedules")
    op.drop_index("ix_ci_pipeline_schedules_due", table_name="ci_pipeline_schedules")

    op.drop_table("ci_pipeline_schedules")
    op.drop_table("ci_runner_tags")
    op.drop_index(op.f("ix_ci_runner_namespaces_namespace_id"), table_name="ci_runner_namespaces")

    op.drop_table("ci_runner_namespaces")
    op.drop_table("ci_group_variables")
    op.drop_index("uq_ci_runners_token_digest", table_name="ci_runners")

    op.drop_table("ci_runners")
    op.drop_table("ci_instance_variables")
