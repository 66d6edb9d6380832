"""What merging reads: a merge request's state, the merge requests waiting for a pipeline
to merge them, and the open ones into a branch."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.models import MergeRequest, Pipeline
from kiln.models.merge_requests import OPENED


def state_of(db: Session, merge_request_id: int) -> str | None:
    return db.scalar(select(MergeRequest.state).where(MergeRequest.id == merge_request_id))


def awaiting(db: Session, pipeline: Pipeline) -> list[int]:
    """Open merge requests set to merge when their head pipeline, `pipeline`, succeeds."""
    return list(
        db.scalars(
            select(MergeRequest.id).where(
                MergeRequest.merge_when_pipeline_succeeds.is_(True),
                MergeRequest.state == OPENED,
                MergeRequest.head_sha == pipeline.sha,
                (MergeRequest.id == pipeline.merge_request_id)
                | (
                    (MergeRequest.source_project_id == pipeline.project_id)
                    & (MergeRequest.source_branch == pipeline.ref)
                ),
            )
        )
    )


def open_into(db: Session, project_id: int, branch: str) -> list[int]:
    """Ids of the open merge requests into `branch` of `project_id`, oldest first."""
    return list(
        db.scalars(
            select(MergeRequest.id)
            .where(
                MergeRequest.project_id == project_id,
                MergeRequest.target_branch == branch,
                MergeRequest.state == OPENED,
            )
            .order_by(MergeRequest.id)
        )
    )
