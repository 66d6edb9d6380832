"""Merge request reads: the subject lookup every merge request route starts from. The ORM
`MergeRequest` is for writes."""

from __future__ import annotations

from sqlalchemy import literal, select
from sqlalchemy.orm import Session

from kiln.models import MergeRequest, MergeRequestAssignee, MergeRequestReviewer


def subject_row(db: Session, project_id: int, iid: int) -> tuple[MergeRequest, list[int], list[int]] | None:
    """Merge request `iid` of the (target) project (the model), its assignees' and its
    reviewers' ids, or None."""
    found = db.scalars(
        select(MergeRequest).where(MergeRequest.project_id == project_id, MergeRequest.iid == iid)
    ).first()
    if found is None:
        return None
    people = db.execute(
        select(MergeRequestAssignee.user_id, MergeRequestAssignee.created_at, literal(1))
        .where(MergeRequestAssignee.merge_request_id == found.id)
        .union_all(
            select(MergeRequestReviewer.user_id, MergeRequestReviewer.created_at, literal(0)).where(
                MergeRequestReviewer.merge_request_id == found.id
            )
        )
    ).all()
    ordered = sorted(people, key=lambda r: (r[1], r[0]))
    return found, [r[0] for r in ordered if r[2]], [r[0] for r in ordered if not r[2]]
