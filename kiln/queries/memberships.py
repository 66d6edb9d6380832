"""A user's memberships (GET /users/:id/memberships): one row per group or project the user
is a member of, with the source's name, in one statement per page."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, bindparam, case, exists, literal, select, union_all
from sqlalchemy.orm import aliased

from kiln.models import Member, Namespace, Project
from kiln.models.namespaces import KIND_USER, OWNER

MembershipRow = namedtuple("MembershipRow", ["source_id", "source_name", "source_type", "access_level"])

SourceType = Literal["Project", "Namespace"]

_SOURCE_NS = aliased(Namespace, name="source_ns")


@cache
def listing(source_type: SourceType | None) -> Select[Any]:
    """Memberships of the user bound as `member_user_id`, oldest first; access requests are
    no memberships. The projects of the user's own namespace count as Owner memberships, as
    GitLab records its creator's. Built once per filter."""
    user = bindparam("member_user_id")
    member = (
        select(
            case((Member.project_id.is_not(None), Member.project_id), else_=Member.namespace_id).label(
                "source_id"
            ),
            case((Member.project_id.is_not(None), Project.name), else_=_SOURCE_NS.name).label("source_name"),
            case((Member.project_id.is_not(None), "Project"), else_="Namespace").label("source_type"),
            Member.access_level.label("access_level"),
            Member.created_at.label("since"),
        )
        .select_from(Member)
        .outerjoin(Project, Project.id == Member.project_id)
        .outerjoin(_SOURCE_NS, _SOURCE_NS.id == Member.namespace_id)
        .where(Member.user_id == user, Member.requested_at.is_(None))
    )
    if source_type == "Project":
        member = member.where(Member.project_id.is_not(None))
    elif source_type == "Namespace":
        member = member.where(Member.namespace_id.is_not(None))
    parts: list[Select[Any]] = [member]
    if source_type != "Namespace":
        recorded = select(Member.id).where(Member.user_id == user, Member.project_id == Project.id)
        owned = (
            select(
                Project.id.label("source_id"),
                Project.name.label("source_name"),
                literal("Project").label("source_type"),
                literal(OWNER).label("access_level"),
                Project.created_at.label("since"),
            )
            .join(_SOURCE_NS, _SOURCE_NS.id == Project.namespace_id)
            .where(_SOURCE_NS.kind == KIND_USER, _SOURCE_NS.owner_id == user, ~exists(recorded))
        )
        parts.append(owned)
    rows = union_all(*parts).subquery("memberships")
    return select(rows.c.source_id, rows.c.source_name, rows.c.source_type, rows.c.access_level).order_by(
        rows.c.since, rows.c.source_type, rows.c.source_id
    )


def params(user_id: int) -> dict[str, Any]:
    return {"member_user_id": user_id}
