"""Member and access-requester views: the user's basic view merged with the membership."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import day, iso
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.members import MemberRecord


def member(rec: MemberRecord, base: str) -> dict[str, Any]:
    view = user_basic(rec.user, base)
    view["access_level"] = rec.access_level
    view["created_at"] = iso(rec.created_at)
    if rec.created_by is not None:  # GitLab leaves the key out when nobody is recorded
        view["created_by"] = user_basic(rec.created_by, base)
    view["expires_at"] = day(rec.expires_at)
    view["membership_state"] = "active"
    return view


def access_requester(rec: MemberRecord, base: str) -> dict[str, Any]:
    view = user_basic(rec.user, base)
    view["created_at"] = iso(rec.created_at)
    view["requested_at"] = iso(rec.requested_at)
    return view
