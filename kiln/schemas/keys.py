"""Request contracts for SSH keys (GitLab's Users API "SSH keys" and Keys API parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import PageParams, Params, When

UsageType = Literal["auth", "signing", "auth_and_signing"]


class KeyList(PageParams):
    pass


class UserKeyList(PageParams):
    id: str  # an id or a username


class KeyCreate(Params):
    key: str
    title: str
    expires_at: When | None = None
    usage_type: UsageType = "auth_and_signing"


class UserKeyCreate(KeyCreate):
    id: str


class KeyLookup(Params):
    fingerprint: str
