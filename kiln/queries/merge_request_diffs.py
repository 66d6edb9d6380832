"""Merge request diff version reads: a merge request's versions, newest first, one version
and the commits it held. The ORM models are for writes (kiln.services.merge_request_diffs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from kiln.git.diffs import FileDiff
from kiln.models import MergeRequest, MergeRequestDiff, MergeRequestDiffCommit, Namespace, Project
from kiln.models.merge_requests import OPENED
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page


@dataclass(slots=True)
class VersionCommit:
    """A commit of a version as recorded, with its parents as the repository has them."""

    row: MergeRequestDiffCommit
    parent_ids: list[str]


@dataclass(slots=True)
class Version:
    """One version with its commits (newest first) and its diff."""

    version: MergeRequestDiff
    commits: list[VersionCommit]
    diffs: list[FileDiff]
    # The target project's full path (commit web URLs point there).
    full_path: str


# Built once: the pager keeps what it derives from a statement per statement.
_VERSIONS = (
    select(MergeRequestDiff)
    .where(MergeRequestDiff.merge_request_id == bindparam("merge_request_id"))
    .order_by(MergeRequestDiff.id.desc())
)


def versions(db: Session, merge_request_id: int, page: Page) -> PageResult:
    """The merge request's versions, newest first (GitLab's order_id_desc)."""
    return offset_page(db, _VERSIONS, page, params={"merge_request_id": merge_request_id})


def version(db: Session, merge_request_id: int, version_id: int) -> MergeRequestDiff | None:
    """Version `version_id` when it belongs to the merge request (another's is not found)."""
    return db.scalars(
        select(MergeRequestDiff).where(
            MergeRequestDiff.id == version_id, MergeRequestDiff.merge_request_id == merge_request_id
        )
    ).first()


def commits(db: Session, version_id: int) -> list[MergeRequestDiffCommit]:
    """The version's commits, newest first."""
    return list(
        db.scalars(
            select(MergeRequestDiffCommit)
            .where(MergeRequestDiffCommit.merge_request_diff_id == version_id)
            .order_by(MergeRequestDiffCommit.relative_order)
        )
    )


def latest(db: Session, merge_request_id: int) -> MergeRequestDiff | None:
    found: Any = db.scalars(
        select(MergeRequestDiff)
        .where(MergeRequestDiff.merge_request_id == merge_request_id)
        .order_by(MergeRequestDiff.id.desc())
        .limit(1)
    ).first()
    return found


def open_from_source(db: Session, source_project_id: int, branch: str) -> list[MergeRequest]:
    """Open merge requests whose source is `branch` of `source_project_id` (the models: a push
    changes them), oldest first, locked for the caller's transaction and read afresh: one
    merged or closed meanwhile is not among them (PostgreSQL re-reads a row it waited for)."""
    return list(
        db.scalars(
            select(MergeRequest)
            .where(
                MergeRequest.source_project_id == source_project_id,
                MergeRequest.source_branch == branch,
                MergeRequest.state == OPENED,
            )
            .order_by(MergeRequest.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    )


def open_into(db: Session, project_id: int, branch: str) -> list[MergeRequest]:
    """Open merge requests targeting `branch` of `project_id` (the models), oldest first,
    locked for the caller's transaction and read afresh, as open_from_source."""
    return list(
        db.scalars(
            select(MergeRequest)
            .where(
                MergeRequest.project_id == project_id,
                MergeRequest.target_branch == branch,
                MergeRequest.state == OPENED,
            )
            .order_by(MergeRequest.id)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
    )


def commit_shas(db: Session, version_id: int | None) -> list[str]:
    """The shas of a version's commits, newest first (none for no version)."""
    if version_id is None:
        return []
    return list(
        db.scalars(
            select(MergeRequestDiffCommit.sha)
            .where(MergeRequestDiffCommit.merge_request_diff_id == version_id)
            .order_by(MergeRequestDiffCommit.relative_order)
        )
    )


def project_path(db: Session, project_id: int) -> str:
    """A project's full path (namespace path / project path); empty when it is gone."""
    row = db.execute(
        select(Namespace.full_path, Project.path)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(Project.id == project_id)
    ).first()
    return f"{row[0]}/{row[1]}" if row is not None else ""
