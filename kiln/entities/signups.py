"""What a sign-up answers: what happened, and the new user's id, username and state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.models import User


def signed_up(message: str, user: User) -> dict[str, Any]:
    return {"message": message, "id": user.id, "username": user.username, "state": user.state}
