"""Trigger token views (GitLab's Trigger entity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.pipeline_triggers import TriggerRow
    from kiln.queries.users import UserRow


def trigger(row: TriggerRow, token: str, owner: UserRow | None, base: str) -> dict[str, Any]:
    """`token`: whole for its owner, its first characters for others (the service decides)."""
    return {
        "id": row.id,
        "token": token,
        "description": row.description,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "last_used": iso(row.last_used),
        "expires_at": iso(row.expires_at),
        "owner": user_basic(owner, base) if owner is not None else None,
    }
