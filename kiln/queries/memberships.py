"""A user's memberships (GET /users/:id/memberships): one row per group or project the user
is a member of, with the source's name, in one statement per page."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, bindparam, case, select
from sqlalchemy.orm import aliased

from kiln.models import Member, Namespace, Project

MembershipRow = namedtuple("MembershipRow", ["source_id", "source_name", "source_type", "access_level"])

SourceType = Literal["Project", "Namespace"]

_SOURCE_NS = aliased(Namespace, name="source_ns")


@cache
def listing(source_type: SourceType | None) -> Select[Any]:
    """Memberships of the user bound as `member_user_id`, oldest first; access requests are
    no memberships. Built once per filter."""
    stmt = (
        select(
            case((Member.project_id.is_not(None), Member.project_id), else_=Member.namespace_id).label(
                "source_id"
            ),
            case((Member.project_id.is_not(None), Project.name), else_=_SOURCE_NS.name).label("source_name"),
            case((Member.project_id.is_not(None), "Project"), else_="Namespace").label("source_type"),
            Member.access_level,
        )
        .select_from(Member)
        .outerjoin(Project, Project.id == Member.project_id)
        .outerjoin(_SOURCE_NS, _SOURCE_NS.id == Member.namespace_id)
        .where(Member.user_id == bindparam("member_user_id"), Member.requested_at.is_(None))
    )
    if source_type == "Project":
        stmt = stmt.where(Member.project_id.is_not(None))
    elif source_type == "Namespace":
        stmt = stmt.where(Member.namespace_id.is_not(None))
    return stmt.order_by(Member.id)


def params(user_id: int) -> dict[str, Any]:
    return {"member_user_id": user_id}
