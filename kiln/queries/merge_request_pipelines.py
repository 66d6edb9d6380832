"""Merge request pipeline reads: the pipelines a merge request shows (its own merge request
pipelines, and the branch pipelines of its source branch at a head one of its versions had),
newest first, and what a merge request pipeline's variables are made of."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, or_, select
from sqlalchemy.orm import Session

from kiln.models import (
    Label,
    LabelLink,
    MergeRequest,
    MergeRequestAssignee,
    MergeRequestDiff,
    Milestone,
    User,
)
from kiln.models.ci import Pipeline
from kiln.models.notes import MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.queries import pipelines as pipeline_reads
from kiln.queries.merge_request_diffs import project_path
from kiln.queries.paging import offset_page


@cache
def _ids_statement() -> Select[Any]:
    heads = select(MergeRequestDiff.head_commit_sha).where(
        MergeRequestDiff.merge_request_id == bindparam("merge_request_id")
    )
    return (
        select(Pipeline.id)
        .where(
            or_(
                Pipeline.merge_request_id == bindparam("merge_request_id"),
                and_(
                    Pipeline.project_id == bindparam("source_project_id"),
                    Pipeline.ref == bindparam("source_branch"),
                    Pipeline.tag.is_(False),
                    Pipeline.sha.in_(heads),
                ),
            )
        )
        .order_by(Pipeline.id.desc())
    )


def page_of(db: Session, mr: MergeRequest, page: Page) -> PageResult:
    """One page of the merge request's pipelines (PipelineRow), newest first."""
    values = {
        "merge_request_id": mr.id,
        "source_project_id": mr.source_project_id or 0,
        "source_branch": mr.source_branch,
    }
    result = offset_page(db, _ids_statement(), page, params=values)
    found = pipeline_reads.basics_by_ids(db, result.items)
    result.items = [found[i] for i in result.items if i in found]
    return result


@dataclass(frozen=True, slots=True)
class MergeRequestFacts:
    """What a merge request pipeline's variables say of its merge request."""

    target_path: str
    source_path: str
    labels: list[str]
    assignees: list[str]
    milestone: str | None
    diff_base_sha: str | None
    diff_id: int | None


def facts(db: Session, mr: MergeRequest) -> MergeRequestFacts:
    labels = db.scalars(
        select(Label.title)
        .join(LabelLink, LabelLink.label_id == Label.id)
        .where(LabelLink.target_type == MERGE_REQUEST, LabelLink.target_id == mr.id)
        .order_by(Label.title)
    ).all()
    assignees = db.scalars(
        select(User.username)
        .join(MergeRequestAssignee, MergeRequestAssignee.user_id == User.id)
        .where(MergeRequestAssignee.merge_request_id == mr.id)
        .order_by(MergeRequestAssignee.created_at, User.id)
    ).all()
    milestone = (
        db.scalars(select(Milestone.title).where(Milestone.id == mr.milestone_id)).first()
        if mr.milestone_id is not None
        else None
    )
    diff = db.get(MergeRequestDiff, mr.latest_diff_id) if mr.latest_diff_id is not None else None
    target = project_path(db, mr.project_id)
    source = project_path(db, mr.source_project_id) if mr.source_project_id is not None else ""
    return MergeRequestFacts(
        target_path=target,
        source_path=source if mr.source_project_id != mr.project_id else target,
        labels=list(labels),
        assignees=list(assignees),
        milestone=milestone,
        diff_base_sha=diff.base_commit_sha if diff is not None else None,
        diff_id=diff.id if diff is not None else None,
    )
