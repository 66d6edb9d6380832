"""What push options for merge requests look up: the open merge request of a branch, a
project's default branch, users by username or id, a milestone by title, assignees."""

from __future__ import annotations

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from kiln.models import MergeRequest, MergeRequestAssignee, Milestone, Project, User
from kiln.models.merge_requests import OPENED


def open_for_branch(db: Session, source_project_id: int, branch: str) -> MergeRequest | None:
    """The oldest open merge request from the branch (the model)."""
    return db.scalars(
        select(MergeRequest)
        .where(
            MergeRequest.source_project_id == source_project_id,
            MergeRequest.source_branch == branch,
            MergeRequest.state == OPENED,
        )
        .order_by(MergeRequest.id)
        .limit(1)
    ).first()


def default_branch(db: Session, project_id: int) -> str | None:
    return db.scalar(select(Project.default_branch).where(Project.id == project_id))


def user_ids(db: Session, names: list[str]) -> list[int]:
    """The ids of the users named (a username, any case, or an id), in the order named."""
    if not names:
        return []
    ids = [int(n) for n in names if n.isdigit()]
    lowered = [n.lower().lstrip("@") for n in names if not n.isdigit()]
    rows = db.execute(
        select(User.id, User.username).where(or_(User.id.in_(ids), func.lower(User.username).in_(lowered)))
    ).all()
    by_name = {r.username.lower(): r.id for r in rows}
    by_id = {r.id for r in rows}
    out: list[int] = []
    for n in names:
        found = (int(n) if int(n) in by_id else None) if n.isdigit() else by_name.get(n.lower().lstrip("@"))
        if found is not None and found not in out:
            out.append(found)
    return out


def milestone_id(db: Session, project_id: int, title: str) -> int | None:
    """The project's milestone of that title (its group's are not looked at)."""
    return db.scalar(
        select(Milestone.id).where(Milestone.project_id == project_id, Milestone.title == title).limit(1)
    )


def assignee_ids(db: Session, merge_request_id: int) -> list[int]:
    return list(
        db.scalars(
            select(MergeRequestAssignee.user_id)
            .where(MergeRequestAssignee.merge_request_id == merge_request_id)
            .order_by(MergeRequestAssignee.created_at, MergeRequestAssignee.user_id)
        )
    )
