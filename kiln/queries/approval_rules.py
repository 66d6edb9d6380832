"""Approval rule reads: a project's rules and a merge request's own, and everything a rule view
shows (users, groups with the viewer's level on them, the groups' members, protected branches),
each part for many rules in one statement, so a list costs the same for one rule as for many.
The ORM `ApprovalRule` is for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import Date, Select, bindparam, func, or_, select
from sqlalchemy.orm import Session

from kiln.models import (
    ApprovalRule,
    ApprovalRuleGroup,
    ApprovalRuleProtectedBranch,
    ApprovalRuleUser,
    Member,
    Namespace,
    ProtectedBranch,
)
from kiln.models.namespaces import KIND_GROUP
from kiln.queries import access
from kiln.queries.protected_branches import ProtectedBranchRow
from kiln.queries.reads import row_columns, run
from kiln.queries.users import USER_COLUMNS, USER_WIDTH, UserRow

_RULES = ApprovalRule.__table__
_NS = Namespace.__table__
_BRANCHES = ProtectedBranch.__table__

RuleRow = namedtuple("RuleRow", [c.key for c in _RULES.c])  # type: ignore[misc]
# The group fields a rule shows, and the viewer's level on the group (through it or an ancestor).
GroupRow = namedtuple(
    "GroupRow",
    [
        "id",
        "name",
        "path",
        "description",
        "visibility",
        "lfs_enabled",
        "avatar_path",
        "request_access_enabled",
        "full_name",
        "full_path",
        "parent_id",
        "level",
    ],
)


@dataclass(slots=True)
class RuleParts:
    """What hangs off a set of rules, by rule id (and the groups' members by group id)."""

    users: dict[int, list[UserRow]] = field(default_factory=dict)
    groups: dict[int, list[GroupRow]] = field(default_factory=dict)
    members: dict[int, list[UserRow]] = field(default_factory=dict)
    branches: dict[int, list[ProtectedBranchRow]] = field(default_factory=dict)


@cache
def _rules_statement(with_mr: bool) -> Select[Any]:
    """A project's rules (merge_request_id null) and, `with_mr`, one merge request's own."""
    mine = _RULES.c.merge_request_id.is_(None)
    if with_mr:
        mine = or_(mine, _RULES.c.merge_request_id == bindparam("mr_id"))
    return (
        select(*row_columns(_RULES))
        .where(_RULES.c.project_id == bindparam("project_id"), mine)
        .order_by(_RULES.c.id)
    )


def rules_of(db: Session, project_id: int, mr_id: int | None = None) -> list[RuleRow]:
    """The project's rules, and with `mr_id` that merge request's own too, oldest first."""
    values: dict[str, Any] = {"project_id": project_id}
    if mr_id is not None:
        values["mr_id"] = mr_id
    return [RuleRow._make(r) for r in run(db, _rules_statement(mr_id is not None), values)]


@cache
def _users_statement() -> Select[Any]:
    link = ApprovalRuleUser.__table__
    users = USER_COLUMNS[0].table
    return (
        select(link.c.rule_id, *USER_COLUMNS)
        .select_from(link.join(users, users.c.id == link.c.user_id))
        .where(link.c.rule_id.in_(bindparam("ids", expanding=True)))
        .order_by(link.c.rule_id, users.c.id)
    )


@cache
def _groups_statement() -> Select[Any]:
    link = ApprovalRuleGroup.__table__
    level = access.group_level_column(_NS, bindparam("user_id"), bindparam("today", type_=Date()))
    return (
        select(
            link.c.rule_id,
            _NS.c.id,
            _NS.c.name,
            _NS.c.path,
            _NS.c.description,
            _NS.c.visibility,
            _NS.c.lfs_enabled,
            _NS.c.avatar_path,
            _NS.c.request_access_enabled,
            _NS.c.full_name,
            _NS.c.full_path,
            _NS.c.parent_id,
            level.label("level"),
        )
        .select_from(link.join(_NS, _NS.c.id == link.c.group_id))
        .where(link.c.rule_id.in_(bindparam("ids", expanding=True)))
        .order_by(link.c.rule_id, _NS.c.id)
    )


@cache
def _members_statement() -> Select[Any]:
    """Members of the groups (direct, or inherited from an ancestor), active ones only."""
    member_ns = access.member_namespace()
    group = Namespace.__table__.alias("rule_group")
    users = USER_COLUMNS[0].table
    return (
        select(group.c.id, *USER_COLUMNS)
        .select_from(Member)
        .join(member_ns, member_ns.id == Member.namespace_id)
        .join(group, access.within(group.c, member_ns))
        .join(users, users.c.id == Member.user_id)
        .where(
            group.c.id.in_(bindparam("ids", expanding=True)),
            access.active_membership(bindparam("today", type_=Date())),
            users.c.state == "active",
        )
        .order_by(group.c.id, users.c.id)
    )


@cache
def _branches_statement() -> Select[Any]:
    link = ApprovalRuleProtectedBranch.__table__
    return (
        select(link.c.rule_id, *row_columns(_BRANCHES))
        .select_from(link.join(_BRANCHES, _BRANCHES.c.id == link.c.protected_branch_id))
        .where(link.c.rule_id.in_(bindparam("ids", expanding=True)))
        .order_by(link.c.rule_id, _BRANCHES.c.id)
    )


def parts_of(db: Session, rule_ids: Iterable[int], viewer_id: int | None) -> RuleParts:
    """Users, groups (with `viewer_id`'s level on each), the groups' members and protected
    branches of the rules: four statements whatever their number (none for no rule)."""
    ids = sorted(set(rule_ids))
    out = RuleParts()
    if not ids:
        return out
    today = date.today()
    for row in run(db, _users_statement(), {"ids": ids}):
        out.users.setdefault(row[0], []).append(UserRow._make(row[1 : 1 + USER_WIDTH]))
    group_ids: set[int] = set()
    for row in run(db, _groups_statement(), {"ids": ids, "user_id": viewer_id or 0, "today": today}):
        out.groups.setdefault(row[0], []).append(GroupRow._make(row[1:]))
        group_ids.add(row[1])
    if group_ids:
        for row in run(db, _members_statement(), {"ids": sorted(group_ids), "today": today}):
            out.members.setdefault(row[0], []).append(UserRow._make(row[1 : 1 + USER_WIDTH]))
    for row in run(db, _branches_statement(), {"ids": ids}):
        out.branches.setdefault(row[0], []).append(ProtectedBranchRow._make(row[1:]))
    return out


@dataclass(slots=True)
class WrappedRule:
    """A rule as the services compute it on one merge request (or, for a project's rule view, alone)."""

    rule: RuleRow
    users: list[UserRow]
    groups: list[GroupRow]
    branches: list[ProtectedBranchRow]
    # Users and the groups' members (project views), less who may not approve (merge requests).
    approvers: list[UserRow]
    approved_by: list[UserRow] = field(default_factory=list)
    approvals_left: int = 0
    approved: bool = True
    source: RuleRow | None = None
    overridden: bool = False


# ----------------------------------------------------------------------------- writes' reads


def rule_for_update(db: Session, project_id: int, rule_id: int, mr_id: int | None) -> ApprovalRule | None:
    """The project's rule (`mr_id` None) or the merge request's own rule `rule_id`, the model."""
    mr = ApprovalRule.merge_request_id.is_(None) if mr_id is None else ApprovalRule.merge_request_id == mr_id
    return db.scalars(
        select(ApprovalRule).where(ApprovalRule.id == rule_id, ApprovalRule.project_id == project_id, mr)
    ).first()


def name_taken(db: Session, project_id: int, mr_id: int | None, name: str, except_id: int | None) -> bool:
    mr = ApprovalRule.merge_request_id.is_(None) if mr_id is None else ApprovalRule.merge_request_id == mr_id
    stmt = select(ApprovalRule.id).where(ApprovalRule.project_id == project_id, mr, ApprovalRule.name == name)
    if except_id is not None:
        stmt = stmt.where(ApprovalRule.id != except_id)
    return db.scalars(stmt.limit(1)).first() is not None


def any_approver_exists(db: Session, project_id: int, mr_id: int | None, except_id: int | None) -> bool:
    mr = ApprovalRule.merge_request_id.is_(None) if mr_id is None else ApprovalRule.merge_request_id == mr_id
    stmt = select(ApprovalRule.id).where(
        ApprovalRule.project_id == project_id, mr, ApprovalRule.rule_type == "any_approver"
    )
    if except_id is not None:
        stmt = stmt.where(ApprovalRule.id != except_id)
    return db.scalars(stmt.limit(1)).first() is not None


def member_user_ids(db: Session, project_id: int, user_ids: list[int]) -> list[int]:
    """Those of `user_ids` who reach the project as members (any level), GitLab's
    members_among: a rule names only them. One statement per user named (a write's)."""
    users = USER_COLUMNS[0].table
    known = (
        set(db.scalars(select(users.c.id).where(users.c.id.in_(sorted(set(user_ids))))))
        if user_ids
        else set()
    )
    today = date.today()
    found = {
        uid
        for uid in sorted(known)
        if db.execute(select(access.project_level_of(uid, project_id, today))).scalar() is not None
    }
    return [u for u in dict.fromkeys(user_ids) if u in found]


def user_ids_by_usernames(db: Session, usernames: list[str]) -> list[int]:
    users = USER_COLUMNS[0].table
    if not usernames:
        return []
    lowered = sorted({u.lower() for u in usernames})
    return list(db.scalars(select(users.c.id).where(func.lower(users.c.username).in_(lowered))).all())


def visible_group_ids(
    db: Session, group_ids: list[int], viewer_id: int, visibilities: tuple[str, ...], admin: bool
) -> list[int]:
    """Those of `group_ids` that are groups the viewer sees (open visibility, membership of
    it or an ancestor, or an administrator), GitLab's public_or_visible_to_user."""
    if not group_ids:
        return []
    ids = sorted(set(group_ids))
    level = access.group_level_column(_NS, viewer_id, date.today())
    rows = db.execute(
        select(_NS.c.id, _NS.c.visibility, level).where(_NS.c.id.in_(ids), _NS.c.kind == KIND_GROUP)
    ).all()
    return [r[0] for r in rows if admin or r[1] in visibilities or r[2] is not None]


def project_branch_ids(db: Session, project_id: int, branch_ids: list[int]) -> list[int]:
    """Those of `branch_ids` that are the project's protected branches."""
    if not branch_ids:
        return []
    return list(
        db.scalars(
            select(ProtectedBranch.id).where(
                ProtectedBranch.project_id == project_id, ProtectedBranch.id.in_(sorted(set(branch_ids)))
            )
        ).all()
    )
