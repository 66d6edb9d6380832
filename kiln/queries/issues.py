"""Issue reads."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.models import Issue, IssueAssignee


def subject_row(db: Session, project_id: int, iid: int) -> tuple[Issue, list[int]] | None:
    """Issue `iid` of the project (the model) and its assignees' ids, or None."""
    found = db.scalars(select(Issue).where(Issue.project_id == project_id, Issue.iid == iid)).first()
    if found is None:
        return None
    assignees = db.scalars(
        select(IssueAssignee.user_id)
        .where(IssueAssignee.issue_id == found.id)
        .order_by(IssueAssignee.created_at)
    ).all()
    return found, list(assignees)
