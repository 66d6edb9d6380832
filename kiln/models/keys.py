"""What users prove who they are with beyond passwords and tokens: SSH keys, GPG keys (and
their subkeys, which sign commits), and further e-mail addresses."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, never_reuse_ids


class SSHKey(Timestamps, Base):
    __tablename__ = "keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(255))
    key: Mapped[str] = mapped_column(Text)
    # OpenSSH's MD5 (colon-separated hex) and SHA256 (base64, with its prefix) fingerprints.
    fingerprint: Mapped[str] = mapped_column(String(128))
    fingerprint_sha256: Mapped[str] = mapped_column(String(128), unique=True)
    usage_type: Mapped[str] = mapped_column(String(32), default="auth_and_signing")
    expires_at: Mapped[datetime | None]
    last_used_at: Mapped[datetime | None]


class GPGKey(Timestamps, Base):
    __tablename__ = "gpg_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    key: Mapped[str] = mapped_column(Text)
    primary_keyid: Mapped[str] = mapped_column(String(64), index=True)
    fingerprint: Mapped[str] = mapped_column(String(128), unique=True)


class GPGKeySubkey(Base):
    __tablename__ = "gpg_key_subkeys"

    id: Mapped[int] = mapped_column(primary_key=True)
    gpg_key_id: Mapped[int] = mapped_column(ForeignKey("gpg_keys.id", ondelete="CASCADE"), index=True)
    keyid: Mapped[str] = mapped_column(String(64), index=True)
    fingerprint: Mapped[str] = mapped_column(String(128))


class Email(Timestamps, Base):
    """A user's further e-mail address (the primary one is users.email)."""

    __tablename__ = "emails"
    __table_args__ = (Index("uq_emails_email_lower", text("lower(email)"), unique=True),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(255))
    confirmed_at: Mapped[datetime | None]


# Clients hold their ids (to get or delete one later): a deleted one's id is never handed out again.
never_reuse_ids(SSHKey)
never_reuse_ids(GPGKey)
never_reuse_ids(Email)
