"""The authenticated caller as the rest of kiln sees it: an immutable record built from the
rows authentication read, holding no session and no ORM object."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from kiln.auth.tokens import ADMIN_MODE
from kiln.queries.users import UserRow

Via = Literal["personal_access_token", "impersonation_token", "oauth", "session", "job_token"]


@dataclass(slots=True, frozen=True)
class Actor:
    user: UserRow
    via: Via
    # None means unrestricted: a signed-in browser session carries no scopes.
    scopes: frozenset[str] | None
    token_id: int | None = None
    # With admin mode on, admin powers need a token with the admin_mode scope.
    admin_mode: bool = False
    # The administrator who is acting as `user` through sudo.
    sudo_by: UserRow | None = None
    # Until when this credential needs no look even if nothing is written (its use is due to
    # be recorded, or it expires): what an answer kept for it (api._answers) may last. None:
    # look every time.
    good_until: datetime | None = None

    @property
    def id(self) -> int:
        return int(self.user.id)

    @property
    def is_admin(self) -> bool:
        if not self.user.admin:
            return False
        if self.admin_mode and self.scopes is not None:
            return ADMIN_MODE in self.scopes
        return True

    def has_scope(self, wanted: Iterable[str]) -> bool:
        return self.scopes is None or not self.scopes.isdisjoint(wanted)
