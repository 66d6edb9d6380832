"""Job reads: a project's or a pipeline's jobs (by type, statuses, retried or not), one job,
the latest successful job of a name on a ref, and what a job's view shows beside it (its
runner and artifacts; its pipeline is queries.pipelines'), each by ids in one statement. Statements are built once per
shape. The ORM `CiJob` and `JobArtifact` are for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, or_, select
from sqlalchemy.orm import Session

from kiln.models.ci import BRIDGE, BUILD, SUCCESS, CiJob, JobArtifact, Pipeline, Runner
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_J = CiJob.__table__
_P = Pipeline.__table__
_A = JobArtifact.__table__
_R = Runner.__table__

_JOB_COLUMNS = (
    "id",
    "pipeline_id",
    "project_id",
    "type",
    "name",
    "stage",
    "status",
    "when",
    "allow_failure",
    "ref",
    "sha",
    "tag",
    "user_id",
    "runner_id",
    "created_at",
    "queued_at",
    "started_at",
    "finished_at",
    "erased_at",
    "duration",
    "coverage",
    "failure_reason",
    "retried",
    "artifacts_expire_at",
    "tag_list",
)
JobRow = namedtuple("JobRow", _JOB_COLUMNS)  # type: ignore[misc]

_ARTIFACT_COLUMNS = ("id", "job_id", "file_type", "file_format", "filename", "size", "store_key", "expire_at")
ArtifactRow = namedtuple("ArtifactRow", _ARTIFACT_COLUMNS)  # type: ignore[misc]

# What entities.runners.runner renders.
_RUNNER_COLUMNS = (
    "id",
    "description",
    "ip_address",
    "active",
    "runner_type",
    "name",
    "contacted_at",
    "created_at",
)
RunnerRow = namedtuple("RunnerRow", _RUNNER_COLUMNS)  # type: ignore[misc]

ARCHIVE = "archive"


def _jobs() -> list[Any]:
    return [_J.c[name] for name in _JOB_COLUMNS]


# ----------------------------------------------------------------------------- lists


@cache
def _list_statement(in_pipeline: bool, job_type: str, scoped: bool, retried: bool) -> Select[Any]:
    """A project's (or one of its pipelines') jobs of one type, newest first."""
    stmt = select(*_jobs()).where(_J.c.project_id == bindparam("project_id"), _J.c.type == job_type)
    if in_pipeline:
        stmt = stmt.where(_J.c.pipeline_id == bindparam("pipeline_id"))
    if scoped:
        stmt = stmt.where(_J.c.status.in_(bindparam("statuses", expanding=True)))
    if not retried:
        stmt = stmt.where(_J.c.retried.is_(False))
    return stmt.order_by(_J.c.id.desc())


def page_of_jobs(
    db: Session,
    project_id: int,
    page: Page,
    *,
    pipeline_id: int | None = None,
    job_type: str = BUILD,
    statuses: list[str] | None = None,
    include_retried: bool = True,
) -> PageResult:
    stmt = _list_statement(pipeline_id is not None, job_type, bool(statuses), include_retried)
    values: dict[str, Any] = {"project_id": project_id}
    if pipeline_id is not None:
        values["pipeline_id"] = pipeline_id
    if statuses:
        values["statuses"] = list(statuses)
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [JobRow._make(row) for row in result.items]
    return result


# ----------------------------------------------------------------------------- one job


@cache
def _by_id_statement(any_type: bool) -> Select[Any]:
    stmt = select(*_jobs()).where(_J.c.id == bindparam("job_id"), _J.c.project_id == bindparam("project_id"))
    return stmt.where(_J.c.type.in_((BUILD, BRIDGE)) if any_type else _J.c.type == BUILD)


def job_of(db: Session, project_id: int, job_id: int, *, any_type: bool = False) -> JobRow | None:
    """The project's job `job_id`: a build, or with `any_type` a bridge too (GitLab's
    processables); commit statuses never."""
    row = run(db, _by_id_statement(any_type), {"job_id": job_id, "project_id": project_id}).first()
    return None if row is None else JobRow._make(row)


@cache
def _latest_for_ref_statement(recent: bool) -> Select[Any]:
    """The newest successful build called `name` with an unexpired archive, in the project's latest
    successful pipeline on `ref` (with `recent`: in any successful pipeline on `ref`, the
    newest first)."""
    has_archive = (
        select(_A.c.id)
        .where(
            _A.c.job_id == _J.c.id,
            _A.c.file_type == ARCHIVE,
            or_(_A.c.expire_at.is_(None), _A.c.expire_at > bindparam("now")),
        )
        .exists()
    )
    stmt = (
        select(*_jobs())
        .join(_P, _P.c.id == _J.c.pipeline_id)
        .where(
            _J.c.project_id == bindparam("project_id"),
            _J.c.type == BUILD,
            _J.c.name == bindparam("name"),
            _J.c.status == SUCCESS,
            _J.c.retried.is_(False),
            _P.c.ref == bindparam("ref"),
            _P.c.status == SUCCESS,
            has_archive,
        )
    )
    if not recent:
        latest = (
            select(func.max(_P.c.id))
            .where(
                _P.c.project_id == bindparam("project_id"),
                _P.c.ref == bindparam("ref"),
                _P.c.status == SUCCESS,
            )
            .scalar_subquery()
        )
        stmt = stmt.where(_P.c.id == latest)
    return stmt.order_by(_P.c.id.desc(), _J.c.id.desc()).limit(1)


def latest_successful(
    db: Session, project_id: int, ref: str, name: str, *, recent: bool, now: datetime
) -> JobRow | None:
    values = {"project_id": project_id, "ref": ref, "name": name, "now": now}
    row = run(db, _latest_for_ref_statement(recent), values).first()
    return None if row is None else JobRow._make(row)


# ----------------------------------------------------------------------------- beside a job


@cache
def _artifacts_statement() -> Select[Any]:
    return (
        select(*(_A.c[name] for name in _ARTIFACT_COLUMNS))
        .where(_A.c.job_id.in_(bindparam("ids", expanding=True)))
        .order_by(_A.c.job_id, _A.c.id)
    )


def artifacts_of(db: Session, job_ids: Iterable[int]) -> dict[int, list[ArtifactRow]]:
    """Each job's artifact files, in the order they were stored."""
    wanted = sorted(set(job_ids))
    out: dict[int, list[ArtifactRow]] = {}
    if not wanted:
        return out
    for row in run(db, _artifacts_statement(), {"ids": wanted}):
        out.setdefault(row.job_id, []).append(ArtifactRow._make(row))
    return out


@cache
def _runners_statement() -> Select[Any]:
    return select(*(_R.c[name] for name in _RUNNER_COLUMNS)).where(
        _R.c.id.in_(bindparam("ids", expanding=True))
    )


def runners_by_ids(db: Session, ids: Iterable[int | None]) -> dict[int, RunnerRow]:
    wanted = sorted({i for i in ids if i is not None})
    if not wanted:
        return {}
    return {row.id: RunnerRow._make(row) for row in run(db, _runners_statement(), {"ids": wanted})}


@cache
def _project_job_ids_statement() -> Select[Any]:
    return select(_A.c.job_id, _A.c.store_key).where(_A.c.project_id == bindparam("project_id"))


def stored_artifacts_of_project(db: Session, project_id: int) -> list[tuple[int, str]]:
    """(job id, storage key) of every artifact file of the project."""
    return [(row[0], row[1]) for row in run(db, _project_job_ids_statement(), {"project_id": project_id})]
