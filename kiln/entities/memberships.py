"""A user's membership as GitLab's Membership entity shows it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.memberships import MembershipRow


def membership(row: MembershipRow) -> dict[str, Any]:
    return {
        "source_id": row.source_id,
        "source_name": row.source_name,
        "source_type": row.source_type,
        "access_level": row.access_level,
    }
