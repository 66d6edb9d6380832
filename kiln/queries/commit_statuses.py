"""Commit status reads: the jobs of a commit's pipelines (external statuses and the
configuration's jobs alike, as GitLab lists them); a commit's latest pipeline is
kiln.queries.pipelines.latest_for_sha. The ORM models are for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models.ci import CiJob, Pipeline
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_JOBS = CiJob.__table__
_PIPELINES = Pipeline.__table__
_COLUMNS = (
    "id",
    "sha",
    "ref",
    "status",
    "name",
    "stage",
    "target_url",
    "description",
    "created_at",
    "started_at",
    "finished_at",
    "allow_failure",
    "coverage",
    "pipeline_id",
    "user_id",
)

StatusRow = namedtuple("StatusRow", _COLUMNS)  # type: ignore[misc]
# The filters a list may combine; each adds one condition.
FILTERS = ("ref", "stage", "name", "pipeline_id")


@cache
def _list_statement(filters: tuple[str, ...], every: bool, order_by: str, descending: bool) -> Select[Any]:
    where: list[ColumnElement[bool]] = [
        _PIPELINES.c.project_id == bindparam("project_id"),
        _PIPELINES.c.sha == bindparam("sha"),
    ]
    if not every:
        where.append(_JOBS.c.retried.is_(False))
    for name in filters:
        where.append(_JOBS.c[name] == bindparam(name))
    column = _JOBS.c.pipeline_id if order_by == "pipeline_id" else _JOBS.c.id
    orders = [column.desc(), _JOBS.c.id.desc()] if descending else [column, _JOBS.c.id]
    return (
        select(*(_JOBS.c[n] for n in _COLUMNS))
        .join(_PIPELINES, _PIPELINES.c.id == _JOBS.c.pipeline_id)
        .where(*where)
        .order_by(*orders)
    )


def page_of_commit(
    db: Session,
    project_id: int,
    sha: str,
    filters: dict[str, Any],
    *,
    every: bool,
    order_by: str,
    descending: bool,
    page: Page,
) -> PageResult:
    """The jobs of the project's pipelines for `sha`: the latest of each name unless `every`
    (retried ones too), with the given filters (FILTERS) equal."""
    names = tuple(n for n in FILTERS if filters.get(n) is not None)
    stmt = _list_statement(names, every, order_by, descending)
    values = {"project_id": project_id, "sha": sha, **{n: filters[n] for n in names}}
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [StatusRow._make(r) for r in result.items]
    return result


@cache
def _one_statement() -> Select[Any]:
    return select(*(_JOBS.c[n] for n in _COLUMNS)).where(_JOBS.c.id == bindparam("id"))


def status_row(db: Session, job_id: int) -> StatusRow | None:
    row = run(db, _one_statement(), {"id": job_id}).first()
    return None if row is None else StatusRow._make(row)
