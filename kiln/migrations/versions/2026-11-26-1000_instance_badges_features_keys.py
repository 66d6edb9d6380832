"""badges, feature flags, SSH and GPG keys, further e-mails, terms of service versions and
plan limits; users.accepted_term_id

Revision ID: 9a3c5e7b1d20
Revises: 5d0b7e3a8c41
Create Date: 2026-11-26 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from kiln.models.base import UTCDateTime

revision = "9a3c5e7b1d20"
down_revision = "5d0b7e3a8c41"
branch_labels = None
depends_on = None

_NEW = (
    "badges",
    "feature_gates",
    "keys",
    "gpg_keys",
    "gpg_key_subkeys",
    "emails",
    "application_setting_terms",
    "plan_limits",
)


def _big() -> sa.types.TypeEngine[int]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _stamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "badges",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("project_id", _big(), sa.ForeignKey("projects.id", ondelete="CASCADE"), nullable=True),
        sa.Column("group_id", _big(), sa.ForeignKey("namespaces.id", ondelete="CASCADE"), nullable=True),
        sa.Column("name", sa.String(255), nullable=True),
        sa.Column("link_url", sa.Text(), nullable=False),
        sa.Column("image_url", sa.Text(), nullable=False),
        *_stamps(),
        sa.CheckConstraint("(project_id IS NULL) <> (group_id IS NULL)", name="one_source"),
    )
    op.create_index("ix_badges_project_id", "badges", ["project_id"])
    op.create_index("ix_badges_group_id", "badges", ["group_id"])
    op.create_table(
        "feature_gates",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("feature_key", sa.String(255), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.String(255), nullable=False),
        *_stamps(),
        sa.UniqueConstraint("feature_key", "key", "value"),
    )
    op.create_index("ix_feature_gates_feature_key", "feature_gates", ["feature_key"])
    op.create_table(
        "keys",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("user_id", _big(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("title", sa.String(255), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.String(128), nullable=False),
        sa.Column("fingerprint_sha256", sa.String(128), nullable=False, unique=True),
        sa.Column("usage_type", sa.String(32), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("last_used_at", UTCDateTime(), nullable=True),
        *_stamps(),
    )
    op.create_index("ix_keys_user_id", "keys", ["user_id"])
    op.create_table(
        "gpg_keys",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("user_id", _big(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("primary_keyid", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(128), nullable=False, unique=True),
        *_stamps(),
    )
    op.create_index("ix_gpg_keys_user_id", "gpg_keys", ["user_id"])
    op.create_index("ix_gpg_keys_primary_keyid", "gpg_keys", ["primary_keyid"])
    op.create_table(
        "gpg_key_subkeys",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("gpg_key_id", _big(), sa.ForeignKey("gpg_keys.id", ondelete="CASCADE"), nullable=False),
        sa.Column("keyid", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(128), nullable=False),
    )
    op.create_index("ix_gpg_key_subkeys_gpg_key_id", "gpg_key_subkeys", ["gpg_key_id"])
    op.create_index("ix_gpg_key_subkeys_keyid", "gpg_key_subkeys", ["keyid"])
    op.create_table(
        "emails",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("user_id", _big(), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
        sa.Column("email", sa.String(255), nullable=False),
        sa.Column("confirmed_at", UTCDateTime(), nullable=True),
        *_stamps(),
    )
    op.create_index("ix_emails_user_id", "emails", ["user_id"])
    op.create_index("uq_emails_email_lower", "emails", [sa.text("lower(email)")], unique=True)
    op.create_table(
        "application_setting_terms",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
    )
    op.create_table(
        "plan_limits",
        sa.Column("id", _big(), primary_key=True),
        sa.Column("plan_name", sa.String(64), nullable=False, unique=True),
        sa.Column("values", sa.JSON(), nullable=False),
    )
    op.add_column("users", sa.Column("accepted_term_id", _big(), nullable=True))
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
    # A plain DROP COLUMN (SQLite 3.35+): a batch rebuild would lose the users' triggers.
    op.drop_column("users", "accepted_term_id")
    for table in reversed(_NEW):
        op.drop_table(table)
