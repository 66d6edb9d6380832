"""Approval reads: who approved a merge request (with when), and which users committed to it
(their e-mail addresses among its versions' commit authors and committers)."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select, union
from sqlalchemy.orm import Session

from kiln.models import Approval, Email, MergeRequest, MergeRequestDiff, MergeRequestDiffCommit
from kiln.queries.approval_rules import WrappedRule
from kiln.queries.reads import run
from kiln.queries.users import USER_COLUMNS, USER_WIDTH, UserRow

ApprovalRow = namedtuple("ApprovalRow", ["user", "created_at"])


@dataclass(slots=True)
class ApprovalState:
    """A merge request's approval state as the services compute it: its governing rules with
    their approvals, the counts, and what the viewer has done and may do."""

    project: Any  # ProjectRow or Project
    mr: MergeRequest
    rules: list[WrappedRule]
    overwritten: bool
    approvals: list[ApprovalRow]
    approvals_required: int
    approvals_left: int
    approved: bool
    # For the viewer, when one is given.
    user_has_approved: bool = False
    user_can_approve: bool = False
    suggested_approvers: list[UserRow] = field(default_factory=list)
    unactioned: list[UserRow] = field(default_factory=list)


@cache
def _approvals_statement() -> Select[Any]:
    users = USER_COLUMNS[0].table
    a = Approval.__table__
    return (
        select(a.c.created_at, *USER_COLUMNS)
        .select_from(a.join(users, users.c.id == a.c.user_id))
        .where(a.c.merge_request_id == bindparam("mr_id"))
        .order_by(a.c.id)
    )


def approvals_of(db: Session, mr_id: int) -> list[ApprovalRow]:
    """The merge request's approvals, first given first, with their users."""
    out = []
    for row in run(db, _approvals_statement(), {"mr_id": mr_id}):
        created: datetime = row[0]
        out.append(ApprovalRow(UserRow._make(row[1 : 1 + USER_WIDTH]), created))
    return out


@cache
def _committers_statement() -> Select[Any]:
    """Users whose primary or confirmed further address authored or committed a commit of
    one of the merge request's versions."""
    users = USER_COLUMNS[0].table
    c, d = MergeRequestDiffCommit.__table__, MergeRequestDiff.__table__
    commits = c.join(d, d.c.id == c.c.merge_request_diff_id)
    mr = d.c.merge_request_id == bindparam("mr_id")
    addresses = union(
        select(func.lower(c.c.author_email).label("address")).select_from(commits).where(mr),
        select(func.lower(c.c.committer_email).label("address")).select_from(commits).where(mr),
    ).subquery("addresses")
    e = Email.__table__
    primary = select(users.c.id).where(func.lower(users.c.email).in_(select(addresses.c.address)))
    further = select(e.c.user_id).where(
        e.c.confirmed_at.is_not(None), func.lower(e.c.email).in_(select(addresses.c.address))
    )
    return union(primary, further)  # type: ignore[return-value]


def committer_ids(db: Session, mr_id: int) -> set[int]:
    """The users who committed to the merge request, as GitLab's committers: by address."""
    return {row[0] for row in run(db, _committers_statement(), {"mr_id": mr_id})}


def approval_for_update(db: Session, mr_id: int, user_id: int) -> Approval | None:
    return db.scalars(
        select(Approval).where(Approval.merge_request_id == mr_id, Approval.user_id == user_id)
    ).first()
