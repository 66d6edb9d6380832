"""Emoji reaction views (GitLab's AwardEmoji entity)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.award_emoji import AwardRow
    from kiln.queries.users import UserRow


def award(row: AwardRow, users: Mapping[int, UserRow], base: str) -> dict[str, Any]:
    user = users.get(row.user_id)
    return {
        "id": row.id,
        "name": row.name,
        "user": user_basic(user, base) if user is not None else None,  # type: ignore[arg-type]
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "awardable_id": row.awardable_id,
        "awardable_type": row.awardable_type,
        # Set for a group's custom emoji only; kiln has none.
        "url": None,
    }
