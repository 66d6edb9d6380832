"""Namespaces (a user's own or a group), memberships and group custom attributes.

A user's namespace shares its path with the username, so user and group paths never clash.
`traversal` is the chain of ids from the root ("1/5/9/"): ancestors and descendants are
prefix matches, one indexed query at any depth.
"""

from __future__ import annotations

from datetime import date, datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Text, UniqueConstraint, select, text
from sqlalchemy.orm import Mapped, column_property, mapped_column

from kiln.models.base import Base, RowVersion, Timestamps, never_reuse_ids
from kiln.models.users import User

KIND_USER = "user"
KIND_GROUP = "group"

GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER = 10, 20, 30, 40, 50
ACCESS_LEVELS = (GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER)
MINIMAL_ACCESS = 5

PRIVATE, INTERNAL, PUBLIC = "private", "internal", "public"
VISIBILITIES = (PRIVATE, INTERNAL, PUBLIC)
VISIBILITY_LEVEL = {PRIVATE: 0, INTERNAL: 10, PUBLIC: 20}


class Namespace(Timestamps, RowVersion, Base):
    __tablename__ = "namespaces"
    __table_args__ = (
        Index(
            "uq_namespaces_parent_path_lower",
            text("coalesce(parent_id, 0)"),
            text("lower(path)"),
            unique=True,
        ),
        Index("ix_namespaces_full_path_lower", text("lower(full_path)")),
        # A runner registering names its group by its token, found by digest.
        Index("uq_namespaces_runners_token_digest", "runners_token_digest", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(255))
    path: Mapped[str] = mapped_column(String(255))
    # Kept in step with the ancestors' paths and names by services.groups on every rename.
    full_path: Mapped[str] = mapped_column(String(2048), default="")
    full_name: Mapped[str] = mapped_column(String(2048), default="")
    # Compared bytewise ("C" collation on PostgreSQL) so ranges over it follow digit order.
    traversal: Mapped[str] = mapped_column(
        String(512).with_variant(String(512, collation="C"), "postgresql"), default="", index=True
    )
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True, unique=True
    )
    description: Mapped[str] = mapped_column(Text, default="")
    visibility: Mapped[str] = mapped_column(String(16), default=PRIVATE)
    avatar_path: Mapped[str | None] = mapped_column(String(512))
    request_access_enabled: Mapped[bool] = mapped_column(default=True)
    share_with_group_lock: Mapped[bool] = mapped_column(default=False)
    require_two_factor_authentication: Mapped[bool] = mapped_column(default=False)
    two_factor_grace_period: Mapped[int] = mapped_column(default=48)
    project_creation_level: Mapped[str] = mapped_column(String(32), default="developer")
    subgroup_creation_level: Mapped[str] = mapped_column(String(32), default="maintainer")
    lfs_enabled: Mapped[bool] = mapped_column(default=True)
    emails_enabled: Mapped[bool] = mapped_column(default=True)
    mentions_disabled: Mapped[bool | None]
    auto_devops_enabled: Mapped[bool | None]
    default_branch_protection: Mapped[int | None]
    default_branch: Mapped[str | None] = mapped_column(String(255))
    creator_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    marked_for_deletion_on: Mapped[date | None]
    # A group's runner registration token, derived from the nonce under the server key like a
    # project's (auth.tokens.runners_token); None until the group's token is first shown.
    runners_token_nonce: Mapped[str | None] = mapped_column(String(64))
    runners_token_digest: Mapped[str | None] = mapped_column(String(64))

    @property
    def is_group(self) -> bool:
        return self.kind == KIND_GROUP

    @property
    def ancestor_ids(self) -> list[int]:
        return ancestor_ids(self.traversal)


def ancestor_ids(traversal: str) -> list[int]:
    """Ids from the root down to and including the namespace whose traversal this is."""
    return [int(part) for part in traversal.split("/") if part]


class Member(Timestamps, Base):
    """A user's access to one group or one project; a row with `requested_at` is an access
    request, which grants nothing until approved."""

    __tablename__ = "members"
    __table_args__ = (
        UniqueConstraint("namespace_id", "user_id"),
        UniqueConstraint("project_id", "user_id"),
        CheckConstraint("(namespace_id IS NULL) <> (project_id IS NULL)", name="one_source"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace_id: Mapped[int | None] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    access_level: Mapped[int]
    expires_at: Mapped[date | None]
    requested_at: Mapped[datetime | None]
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class GroupCustomAttribute(Timestamps, Base):
    __tablename__ = "group_custom_attributes"
    __table_args__ = (UniqueConstraint("namespace_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    namespace_id: Mapped[int] = mapped_column(ForeignKey("namespaces.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text)


# A user's own namespace id rides along with every user row (one indexed subquery), so views
# that show it (admin views, lists) need no query of their own.
User.namespace_id = column_property(  # type: ignore[misc,assignment]
    select(Namespace.id).where(Namespace.owner_id == User.id).correlate_except(Namespace).scalar_subquery()
)

# A group's id names its uploads on disk, removed by a job after the group is deleted.
never_reuse_ids(Namespace)
