"""Users and what hangs directly off them: identities, custom attributes, status."""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from kiln.models.base import Base, RowVersion, Timestamps, never_reuse_ids

USER_TYPE_HUMAN = "human"
USER_TYPE_GHOST = "ghost"


class User(Timestamps, RowVersion, Base):
    __tablename__ = "users"
    __table_args__ = (
        Index("uq_users_username_lower", text("lower(username)"), unique=True),
        Index("uq_users_email_lower", text("lower(email)"), unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(255))
    email: Mapped[str] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(32), default="active")
    user_type: Mapped[str] = mapped_column(String(32), default=USER_TYPE_HUMAN)
    admin: Mapped[bool] = mapped_column(default=False)
    password_hash: Mapped[str | None] = mapped_column(String(255))
    password_automatically_set: Mapped[bool] = mapped_column(default=False)
    password_expires_at: Mapped[datetime | None]
    bio: Mapped[str] = mapped_column(Text, default="")
    location: Mapped[str] = mapped_column(String(255), default="")
    public_email: Mapped[str] = mapped_column(String(255), default="")
    skype: Mapped[str] = mapped_column(String(255), default="")
    linkedin: Mapped[str] = mapped_column(String(255), default="")
    twitter: Mapped[str] = mapped_column(String(255), default="")
    discord: Mapped[str] = mapped_column(String(255), default="")
    website_url: Mapped[str] = mapped_column(String(255), default="")
    organization: Mapped[str] = mapped_column(String(255), default="")
    job_title: Mapped[str] = mapped_column(String(255), default="")
    pronouns: Mapped[str | None] = mapped_column(String(50))
    note: Mapped[str | None] = mapped_column(Text)
    avatar_path: Mapped[str | None] = mapped_column(String(512))
    projects_limit: Mapped[int] = mapped_column(default=100000)
    can_create_group: Mapped[bool] = mapped_column(default=True)
    external: Mapped[bool] = mapped_column(default=False)
    private_profile: Mapped[bool] = mapped_column(default=False)
    theme_id: Mapped[int] = mapped_column(default=1)
    color_scheme_id: Mapped[int] = mapped_column(default=1)
    two_factor_enabled: Mapped[bool] = mapped_column(default=False)
    shared_runners_minutes_limit: Mapped[int | None]
    extra_shared_runners_minutes_limit: Mapped[int | None]
    confirmed_at: Mapped[datetime | None]
    last_sign_in_at: Mapped[datetime | None]
    current_sign_in_at: Mapped[datetime | None]
    last_sign_in_ip: Mapped[str | None] = mapped_column(String(64))
    current_sign_in_ip: Mapped[str | None] = mapped_column(String(64))
    last_activity_on: Mapped[date | None]
    status_emoji: Mapped[str | None] = mapped_column(String(255))
    status_message: Mapped[str | None] = mapped_column(String(100))
    status_availability: Mapped[str | None] = mapped_column(String(32))
    status_clear_at: Mapped[datetime | None]
    # The version of the terms of service the user accepted last (application_setting_terms).
    accepted_term_id: Mapped[int | None]

    identities: Mapped[list[Identity]] = relationship(
        back_populates="user",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Identity.id",
    )

    if TYPE_CHECKING:
        # Mapped in models/namespaces.py (a correlated subquery on the user's own namespace).
        namespace_id: Mapped[int | None]

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @property
    def is_ghost(self) -> bool:
        return self.user_type == USER_TYPE_GHOST


class Identity(Timestamps, Base):
    """A link to an external identity provider (LDAP, SAML, …) kept for API compatibility."""

    __tablename__ = "identities"
    __table_args__ = (UniqueConstraint("provider", "extern_uid"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    provider: Mapped[str] = mapped_column(String(255))
    extern_uid: Mapped[str] = mapped_column(String(255))
    saml_provider_id: Mapped[int | None]

    user: Mapped[User] = relationship(back_populates="identities")


class UserCustomAttribute(Timestamps, Base):
    __tablename__ = "user_custom_attributes"
    __table_args__ = (UniqueConstraint("user_id", "key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(String(255))
    value: Mapped[str] = mapped_column(Text)


# A user's id names its avatar's files, and clients hold ids.
never_reuse_ids(User)
