"""users and credentials

Revision ID: ae83c87d70ef
Revises:
Create Date: 2026-11-23 09:25:26.418021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import kiln.models.base


revision = "ae83c87d70ef"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("username", sa.String(length=255), nullable=False),
        sa.Column("email", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("user_type", sa.String(length=32), nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("password_automatically_set", sa.Boolean(), nullable=False),
        sa.Column(
            "password_expires_at",
            kiln.models.base.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column("bio", sa.Text(), nullable=False),
        sa.Column("location", sa.String(length=255), nullable=False),
        sa.Column("public_email", sa.String(length=255), nullable=False),
        sa.Column("skype", sa.String(length=255), nullable=False),
        sa.Column("linkedin", sa.String(length=255), nullable=False),
        sa.Column("twitter", sa.String(length=255), nullable=False),
        sa.Column("discord", sa.String(length=255), nullable=False),
        sa.Column("website_url", sa.String(length=255), nullable=False),
        sa.Column("organization", sa.String(length=255), nullable=False),
        sa.Column("job_title", sa.String(length=255), nullable=False),
        sa.Column("pronouns", sa.String(length=50), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("avatar_path", sa.String(length=512), nullable=True),
        sa.Column(
            "projects_limit",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("can_create_group", sa.Boolean(), nullable=False),
        sa.Column("external", sa.Boolean(), nullable=False),
        sa.Column("private_profile", sa.Boolean(), nullable=False),
        sa.Column(
            "theme_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column(
            "color_scheme_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("two_factor_enabled", sa.Boolean(), nullable=False),
        sa.Column(
            "shared_runners_minutes_limit",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column(
            "extra_shared_runners_minutes_limit",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("confirmed_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "last_sign_in_at",
            kiln.models.base.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column(
            "current_sign_in_at",
            kiln.models.base.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column("last_sign_in_ip", sa.String(length=64), nullable=True),
        sa.Column("current_sign_in_ip", sa.String(length=64), nullable=True),
        sa.Column("last_activity_on", sa.Date(), nullable=True),
        sa.Column("status_emoji", sa.String(length=255), nullable=True),
        sa.Column("status_message", sa.String(length=100), nullable=True),
        sa.Column("status_availability", sa.String(length=32), nullable=True),
        sa.Column(
            "status_clear_at",
            kiln.models.base.UTCDateTime(timezone=True),
            nullable=True,
        ),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    op.create_table(
        "identities",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("provider", sa.String(length=255), nullable=False),
        sa.Column("extern_uid", sa.String(length=255), nullable=False),
        sa.Column(
            "saml_provider_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_identities_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_identities")),
        sa.UniqueConstraint("provider", "extern_uid", name=op.f("uq_identities_provider_extern_uid")),
    )
    with op.batch_alter_table("identities", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_identities_user_id"), ["user_id"], unique=False)

    op.create_table(
        "namespaces",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("path", sa.String(length=255), nullable=False),
        sa.Column(
            "parent_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column(
            "owner_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_namespaces_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["namespaces.id"],
            name=op.f("fk_namespaces_parent_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_namespaces")),
    )
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_namespaces_owner_id"), ["owner_id"], unique=True)
        batch_op.create_index(batch_op.f("ix_namespaces_parent_id"), ["parent_id"], unique=False)

    op.create_table(
        "oauth_access_tokens",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("refresh_digest", sa.String(length=64), nullable=True),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column(
            "expires_in",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("revoked_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_oauth_access_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_oauth_access_tokens")),
        sa.UniqueConstraint("digest", name=op.f("uq_oauth_access_tokens_digest")),
        sa.UniqueConstraint("refresh_digest", name=op.f("uq_oauth_access_tokens_refresh_digest")),
    )
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_oauth_access_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "personal_access_tokens",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("impersonation", sa.Boolean(), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.Column("expires_at", sa.Date(), nullable=True),
        sa.Column("last_used_at", kiln.models.base.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_personal_access_tokens_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_personal_access_tokens")),
        sa.UniqueConstraint("digest", name=op.f("uq_personal_access_tokens_digest")),
    )
    with op.batch_alter_table("personal_access_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_personal_access_tokens_user_id"), ["user_id"], unique=False)

    op.create_table(
        "user_custom_attributes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_custom_attributes_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_custom_attributes")),
        sa.UniqueConstraint("user_id", "key", name=op.f("uq_user_custom_attributes_user_id_key")),
    )
    with op.batch_alter_table("user_custom_attributes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_custom_attributes_user_id"), ["user_id"], unique=False)

    op.create_table(
        "web_sessions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("ip_address", sa.String(length=64), nullable=True),
        sa.Column("expires_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_web_sessions_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_sessions")),
        sa.UniqueConstraint("digest", name=op.f("uq_web_sessions_digest")),
    )
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_web_sessions_user_id"), ["user_id"], unique=False)

    op.create_table(
        "members",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "namespace_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column(
            "user_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column(
            "access_level",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.Date(), nullable=True),
        sa.Column("created_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", kiln.models.base.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"],
            ["namespaces.id"],
            name=op.f("fk_members_namespace_id_namespaces"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_members_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_members")),
        sa.UniqueConstraint("namespace_id", "user_id", name=op.f("uq_members_namespace_id_user_id")),
    )
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_members_namespace_id"), ["namespace_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_members_user_id"), ["user_id"], unique=False)

    # Case-insensitive uniqueness: expression indexes autogenerate cannot see.
    op.create_index("uq_users_username_lower", "users", [sa.text("lower(username)")], unique=True)
    op.create_index("uq_users_email_lower", "users", [sa.text("lower(email)")], unique=True)
    op.create_index(
        "uq_namespaces_parent_path_lower",
        "namespaces",
        [sa.text("coalesce(parent_id, 0)"), sa.text("lower(path)")],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_namespaces_parent_path_lower", table_name="namespaces")
    op.drop_index("uq_users_email_lower", table_name="users")
    op.drop_index("uq_users_username_lower", table_name="users")
    with op.batch_alter_table("members", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_members_user_id"))
        batch_op.drop_index(batch_op.f("ix_members_namespace_id"))

    op.drop_table("members")
    with op.batch_alter_table("web_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_web_sessions_user_id"))

    op.drop_table("web_sessions")
    with op.batch_alter_table("user_custom_attributes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_custom_attributes_user_id"))

    op.drop_table("user_custom_attributes")
    with op.batch_alter_table("personal_access_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_personal_access_tokens_user_id"))

    op.drop_table("personal_access_tokens")
    with op.batch_alter_table("oauth_access_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_oauth_access_tokens_user_id"))

    op.drop_table("oauth_access_tokens")
    with op.batch_alter_table("namespaces", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_namespaces_parent_id"))
        batch_op.drop_index(batch_op.f("ix_namespaces_owner_id"))

    op.drop_table("namespaces")
    with op.batch_alter_table("identities", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_identities_user_id"))

    op.drop_table("identities")
    op.drop_table("users")
