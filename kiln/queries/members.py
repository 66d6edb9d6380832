"""Records of members and access requesters as their views show them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from kiln.models import User


@dataclass(slots=True)
class MemberRecord:
    """What the member and access-requester views show, loaded in a fixed number of queries."""

    user: User
    access_level: int
    created_at: datetime
    expires_at: date | None
    created_by: User | None = None
    requested_at: datetime | None = None
