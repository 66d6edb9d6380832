"""merge requests: merge requests, assignees, reviewers, diff versions and their commits,
approval rules, approvals; projects' approval settings; pipelines' merge_request_id

Revision ID: 918abf60371f
Revises: 7aaf85bf2811
Create Date: 2026-11-26 18:38:53.759995
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base


revision = '918abf60371f'
down_revision = '7aaf85bf2811'
branch_labels = None
depends_on = None

# In creation order (a table after those it references).
_NEW = (
    "merge_requests",
    "approval_rules",
    "approvals",
    "merge_request_assignees",
    "merge_request_diffs",
    "merge_request_reviewers",
    "approval_rule_groups",
    "approval_rule_protected_branches",
    "approval_rule_users",
    "merge_request_diff_commits",
)


def upgrade() -> None:
    op.create_table('merge_requests',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('iid', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('project_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('source_project_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('source_branch', sa.String(length=255), nullable=False),
    sa.Column('target_branch', sa.String(length=255), nullable=False),
    sa.Column('author_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('title', sa.String(length=255), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('draft', sa.Boolean(), nullable=False),
    sa.Column('milestone_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('merge_status', sa.String(length=32), nullable=False),
    sa.Column('merge_error', sa.Text(), nullable=True),
    sa.Column('head_sha', sa.String(length=64), nullable=True),
    sa.Column('latest_diff_id', sa.BigInteger(), nullable=True),
    sa.Column('merged_by_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('merged_at', kiln.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('merge_commit_sha', sa.String(length=64), nullable=True),
    sa.Column('squash_commit_sha', sa.String(length=64), nullable=True),
    sa.Column('closed_by_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('closed_at', kiln.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('merge_when_pipeline_succeeds', sa.Boolean(), nullable=False),
    sa.Column('merge_user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('merge_params', sa.JSON(), nullable=False),
    sa.Column('force_remove_source_branch', sa.Boolean(), nullable=True),
    sa.Column('squash', sa.Boolean(), nullable=False),
    sa.Column('allow_collaboration', sa.Boolean(), nullable=False),
    sa.Column('discussion_locked', sa.Boolean(), nullable=True),
    sa.Column('approvals_before_merge', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('time_estimate', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('total_time_spent', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('upvotes', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('downvotes', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_notes_count', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('last_edited_at', kiln.models.base.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_edited_by_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('lock_version', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['author_id'], ['users.id'], name=op.f('fk_merge_requests_author_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['closed_by_id'], ['users.id'], name=op.f('fk_merge_requests_closed_by_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['last_edited_by_id'], ['users.id'], name=op.f('fk_merge_requests_last_edited_by_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['merge_user_id'], ['users.id'], name=op.f('fk_merge_requests_merge_user_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['merged_by_id'], ['users.id'], name=op.f('fk_merge_requests_merged_by_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['milestone_id'], ['milestones.id'], name=op.f('fk_merge_requests_milestone_id_milestones'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_merge_requests_project_id_projects'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_project_id'], ['projects.id'], name=op.f('fk_merge_requests_source_project_id_projects'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_merge_requests')),
    sa.UniqueConstraint('project_id', 'iid', name=op.f('uq_merge_requests_project_id_iid'))
    )
    with op.batch_alter_table('merge_requests', schema=None) as batch_op:
        batch_op.create_index('ix_merge_requests_author_created', ['author_id', 'created_at', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_merge_requests_milestone_id'), ['milestone_id'], unique=False)
        batch_op.create_index('ix_merge_requests_project_created', ['project_id', 'created_at', 'id'], unique=False)
        batch_op.create_index('ix_merge_requests_project_state_created', ['project_id', 'state', 'created_at', 'id'], unique=False)
        batch_op.create_index('ix_merge_requests_project_updated', ['project_id', 'updated_at', 'id'], unique=False)
        batch_op.create_index('ix_merge_requests_source', ['source_project_id', 'source_branch'], unique=False)
        batch_op.create_index('ix_merge_requests_target', ['project_id', 'target_branch'], unique=False)

    op.create_table('approval_rules',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('project_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('merge_request_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('source_rule_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('rule_type', sa.String(length=32), nullable=False),
    sa.Column('approvals_required', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('applies_to_all_protected_branches', sa.Boolean(), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_id'], ['merge_requests.id'], name=op.f('fk_approval_rules_merge_request_id_merge_requests'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['project_id'], ['projects.id'], name=op.f('fk_approval_rules_project_id_projects'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_rule_id'], ['approval_rules.id'], name=op.f('fk_approval_rules_source_rule_id_approval_rules'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approval_rules'))
    )
    with op.batch_alter_table('approval_rules', schema=None) as batch_op:
        batch_op.create_index('ix_approval_rules_merge_request_id', ['merge_request_id', 'id'], unique=False)
        batch_op.create_index('ix_approval_rules_project_mr', ['project_id', 'merge_request_id', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_approval_rules_source_rule_id'), ['source_rule_id'], unique=False)

    op.create_table('approvals',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('merge_request_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_id'], ['merge_requests.id'], name=op.f('fk_approvals_merge_request_id_merge_requests'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_approvals_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_approvals')),
    sa.UniqueConstraint('merge_request_id', 'user_id', name=op.f('uq_approvals_merge_request_id_user_id'))
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approvals_user_id'), ['user_id'], unique=False)

    op.create_table('merge_request_assignees',
    sa.Column('merge_request_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_id'], ['merge_requests.id'], name=op.f('fk_merge_request_assignees_merge_request_id_merge_requests'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_merge_request_assignees_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('merge_request_id', 'user_id', name=op.f('pk_merge_request_assignees'))
    )
    with op.batch_alter_table('merge_request_assignees', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_merge_request_assignees_user_id'), ['user_id'], unique=False)

    op.create_table('merge_request_diffs',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('merge_request_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('head_commit_sha', sa.String(length=64), nullable=False),
    sa.Column('base_commit_sha', sa.String(length=64), nullable=True),
    sa.Column('start_commit_sha', sa.String(length=64), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('commits_count', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('files_count', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_id'], ['merge_requests.id'], name=op.f('fk_merge_request_diffs_merge_request_id_merge_requests'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_merge_request_diffs'))
    )
    with op.batch_alter_table('merge_request_diffs', schema=None) as batch_op:
        batch_op.create_index('ix_merge_request_diffs_mr_id', ['merge_request_id', 'id'], unique=False)

    op.create_table('merge_request_reviewers',
    sa.Column('merge_request_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('created_at', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_id'], ['merge_requests.id'], name=op.f('fk_merge_request_reviewers_merge_request_id_merge_requests'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_merge_request_reviewers_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('merge_request_id', 'user_id', name=op.f('pk_merge_request_reviewers'))
    )
    with op.batch_alter_table('merge_request_reviewers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_merge_request_reviewers_user_id'), ['user_id'], unique=False)

    op.create_table('approval_rule_groups',
    sa.Column('rule_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('group_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['namespaces.id'], name=op.f('fk_approval_rule_groups_group_id_namespaces'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['rule_id'], ['approval_rules.id'], name=op.f('fk_approval_rule_groups_rule_id_approval_rules'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('rule_id', 'group_id', name=op.f('pk_approval_rule_groups'))
    )
    with op.batch_alter_table('approval_rule_groups', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approval_rule_groups_group_id'), ['group_id'], unique=False)

    op.create_table('approval_rule_protected_branches',
    sa.Column('rule_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('protected_branch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.ForeignKeyConstraint(['protected_branch_id'], ['protected_branches.id'], name=op.f('fk_approval_rule_protected_branches_protected_branch_id_protected_branches'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['rule_id'], ['approval_rules.id'], name=op.f('fk_approval_rule_protected_branches_rule_id_approval_rules'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('rule_id', 'protected_branch_id', name=op.f('pk_approval_rule_protected_branches'))
    )
    with op.batch_alter_table('approval_rule_protected_branches', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approval_rule_protected_branches_protected_branch_id'), ['protected_branch_id'], unique=False)

    op.create_table('approval_rule_users',
    sa.Column('rule_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('user_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.ForeignKeyConstraint(['rule_id'], ['approval_rules.id'], name=op.f('fk_approval_rule_users_rule_id_approval_rules'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_approval_rule_users_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('rule_id', 'user_id', name=op.f('pk_approval_rule_users'))
    )
    with op.batch_alter_table('approval_rule_users', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approval_rule_users_user_id'), ['user_id'], unique=False)

    op.create_table('merge_request_diff_commits',
    sa.Column('merge_request_diff_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('relative_order', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('sha', sa.String(length=64), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('author_name', sa.Text(), nullable=False),
    sa.Column('author_email', sa.Text(), nullable=False),
    sa.Column('authored_date', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.Column('committer_name', sa.Text(), nullable=False),
    sa.Column('committer_email', sa.Text(), nullable=False),
    sa.Column('committed_date', kiln.models.base.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['merge_request_diff_id'], ['merge_request_diffs.id'], name=op.f('fk_merge_request_diff_commits_merge_request_diff_id_merge_request_diffs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('merge_request_diff_id', 'relative_order', name=op.f('pk_merge_request_diff_commits'))
    )
    with op.batch_alter_table('merge_request_diff_commits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_merge_request_diff_commits_sha'), ['sha'], unique=False)

    # Plain ALTER TABLE ADD COLUMN: a batch would copy projects and ci_pipelines, which other
    # tables reference.
    for column, default in (
        ("reset_approvals_on_push", sa.true()),
        ("disable_overriding_approvers_per_merge_request", sa.false()),
        ("merge_requests_author_approval", sa.false()),
        ("merge_requests_disable_committers_approval", sa.false()),
        ("require_password_to_approve", sa.false()),
    ):
        op.add_column("projects", sa.Column(column, sa.Boolean(), nullable=False, server_default=default))
    op.add_column("ci_pipelines", sa.Column("merge_request_id", sa.BigInteger(), nullable=True))
    op.create_index(op.f("ix_ci_pipelines_merge_request_id"), "ci_pipelines", ["merge_request_id"], unique=False)
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
    op.drop_index(op.f("ix_ci_pipelines_merge_request_id"), table_name="ci_pipelines")
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in (
        ("ci_pipelines", "merge_request_id"),
        ("projects", "require_password_to_approve"),
        ("projects", "merge_requests_disable_committers_approval"),
        ("projects", "merge_requests_author_approval"),
        ("projects", "disable_overriding_approvers_per_merge_request"),
        ("projects", "reset_approvals_on_push"),
    ):
        # SQLite drops a column in place (3.35); a batch would copy the table.
        if sqlite:
            op.execute(f'ALTER TABLE "{table}" DROP COLUMN "{column}"')
        else:
            op.drop_column(table, column)

    with op.batch_alter_table('merge_request_diff_commits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_merge_request_diff_commits_sha'))

    op.drop_table('merge_request_diff_commits')
    with op.batch_alter_table('approval_rule_users', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approval_rule_users_user_id'))

    op.drop_table('approval_rule_users')
    with op.batch_alter_table('approval_rule_protected_branches', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approval_rule_protected_branches_protected_branch_id'))

    op.drop_table('approval_rule_protected_branches')
    with op.batch_alter_table('approval_rule_groups', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approval_rule_groups_group_id'))

    op.drop_table('approval_rule_groups')
    with op.batch_alter_table('merge_request_reviewers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_merge_request_reviewers_user_id'))

    op.drop_table('merge_request_reviewers')
    with op.batch_alter_table('merge_request_diffs', schema=None) as batch_op:
        batch_op.drop_index('ix_merge_request_diffs_mr_id')

    op.drop_table('merge_request_diffs')
    with op.batch_alter_table('merge_request_assignees', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_merge_request_assignees_user_id'))

    op.drop_table('merge_request_assignees')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approvals_user_id'))

    op.drop_table('approvals')
    with op.batch_alter_table('approval_rules', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approval_rules_source_rule_id'))
        batch_op.drop_index('ix_approval_rules_project_mr')
        batch_op.drop_index('ix_approval_rules_merge_request_id')

    op.drop_table('approval_rules')
    with op.batch_alter_table('merge_requests', schema=None) as batch_op:
        batch_op.drop_index('ix_merge_requests_target')
        batch_op.drop_index('ix_merge_requests_source')
        batch_op.drop_index('ix_merge_requests_project_updated')
        batch_op.drop_index('ix_merge_requests_project_state_created')
        batch_op.drop_index('ix_merge_requests_project_created')
        batch_op.drop_index(batch_op.f('ix_merge_requests_milestone_id'))
        batch_op.drop_index('ix_merge_requests_author_created')

    op.drop_table('merge_requests')
