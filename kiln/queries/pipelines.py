"""Pipeline reads: a project's pipelines with GitLab's list filters, one pipeline, pipelines by
ids (for the views of jobs and commit statuses that show their pipeline), the newest pipeline
of a commit, a pipeline's variables and its jobs' coverage. Statements are built once per
shape; a page costs the page and its count. The ORM `Pipeline` is for writes.

Exported for other modules: `PipelineRow`, `basics_by_ids(db, ids) -> dict[int, PipelineRow]`,
`latest_for_sha(db, project_id, sha, ref=None) -> PipelineRow | None`, `row_of(db,
project_id, pipeline_id) -> PipelineRow | None`."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, func, or_, select
from sqlalchemy.orm import Session

from kiln.models import Namespace, Project, User
from kiln.models.ci import CiJob, Pipeline, PipelineVariable
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_column, run

_P = Pipeline.__table__
_PROJECTS = Project.__table__
_NS = Namespace.__table__
_USERS = User.__table__
_JOBS = CiJob.__table__
_VARS = PipelineVariable.__table__

_OWN = (
    "id",
    "iid",
    "project_id",
    "sha",
    "ref",
    "status",
    "source",
    "created_at",
    "updated_at",
    "name",
    "before_sha",
    "tag",
    "yaml_errors",
    "user_id",
    "started_at",
    "finished_at",
    "committed_at",
    "duration",
    "coverage",
    "protected",
)
# `project_path`: the project's full path, which its web_url is built on.
PipelineRow = namedtuple("PipelineRow", [*_OWN, "project_path"])  # type: ignore[misc]
VariableRow = namedtuple("VariableRow", ["key", "value", "variable_type", "raw"])  # type: ignore[misc]

# GitLab's completed statuses (the `finished` scope).
FINISHED = ("success", "failed", "canceled", "skipped")


def _selected() -> list[Any]:
    path = (_NS.c.full_path + "/" + _PROJECTS.c.path).label("project_path")
    return [*(row_column(_P.c[name]) for name in _OWN), path]


def _from(stmt: Select[Any]) -> Select[Any]:
    return stmt.select_from(
        _P.join(_PROJECTS, _PROJECTS.c.id == _P.c.project_id).join(_NS, _NS.c.id == _PROJECTS.c.namespace_id)
    )


def _rows(found: Iterable[Any]) -> list[PipelineRow]:
    return [PipelineRow._make(row) for row in found]


# ----------------------------------------------------------------------------- lists


@dataclass(frozen=True, slots=True)
class Filters:
    """What a list asks for (GitLab's PipelinesFinder). `refs`: the branch or tag names of
    the `branches`/`tags` scopes, whose newest pipelines are listed."""

    scope: str | None = None
    status: str | None = None
    ref: str | None = None
    sha: str | None = None
    yaml_errors: bool | None = None
    source: str | None = None
    name: str | None = None
    username: str | None = None
    updated_after: datetime | None = None
    updated_before: datetime | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    refs: Sequence[str] = ()
    order_by: str = "id"
    sort: str = "desc"

    def shape(self) -> tuple[Any, ...]:
        return (
            self.scope,
            self.status is not None,
            self.ref is not None,
            self.sha is not None,
            self.yaml_errors,
            self.source is not None,
            self.name is not None,
            self.username is not None,
            self.updated_after is not None,
            self.updated_before is not None,
            self.created_after is not None,
            self.created_before is not None,
            self.order_by,
            self.sort,
        )

    def values(self, project_id: int) -> dict[str, Any]:
        out: dict[str, Any] = {"project_id": project_id}
        for key in (
            "status",
            "ref",
            "sha",
            "source",
            "name",
            "username",
            "updated_after",
            "updated_before",
            "created_after",
            "created_before",
        ):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.scope in ("branches", "tags"):
            out["refs"] = list(self.refs)
        return out


_ORDER = {"id": "id", "status": "status", "ref": "ref", "updated_at": "updated_at", "user_id": "user_id"}


@cache
def _list_statement(shape: tuple[Any, ...]) -> Select[Any]:
    (
        scope,
        status,
        ref,
        sha,
        yaml_errors,
        source,
        name,
        username,
        after,
        before,
        c_after,
        c_before,
        order_by,
        sort,
    ) = shape
    where: list[ColumnElement[bool]] = [_P.c.project_id == bindparam("project_id")]
    if scope == "running":
        where.append(_P.c.status == "running")
    elif scope == "pending":
        where.append(_P.c.status == "pending")
    elif scope == "finished":
        where.append(_P.c.status.in_(FINISHED))
    elif scope in ("branches", "tags"):
        newest = (
            select(func.max(_P.c.id))
            .where(
                _P.c.project_id == bindparam("project_id"),
                _P.c.tag.is_(scope == "tags"),
                _P.c.ref.in_(bindparam("refs", expanding=True)),
            )
            .group_by(_P.c.ref)
        )
        where.append(_P.c.id.in_(newest))
    if status:
        where.append(_P.c.status == bindparam("status"))
    if ref:
        where.append(_P.c.ref == bindparam("ref"))
    if sha:
        where.append(_P.c.sha == bindparam("sha"))
    if yaml_errors is True:
        where.append(_P.c.yaml_errors.is_not(None))
    elif yaml_errors is False:
        where.append(_P.c.yaml_errors.is_(None))
    if source:
        where.append(_P.c.source == bindparam("source"))
    if name:
        # The spec's name of the user who ran it; GitLab's newer pipeline name too.
        where.append(
            or_(
                _P.c.user_id.in_(select(_USERS.c.id).where(_USERS.c.name == bindparam("name"))),
                _P.c.name == bindparam("name"),
            )
        )
    if username:
        where.append(
            _P.c.user_id.in_(
                select(_USERS.c.id).where(func.lower(_USERS.c.username) == func.lower(bindparam("username")))
            )
        )
    if after:
        where.append(_P.c.updated_at > bindparam("updated_after"))
    if before:
        where.append(_P.c.updated_at < bindparam("updated_before"))
    if c_after:
        where.append(_P.c.created_at > bindparam("created_after"))
    if c_before:
        where.append(_P.c.created_at < bindparam("created_before"))
    column = _P.c[_ORDER[order_by]]
    ordering = [column.asc() if sort == "asc" else column.desc()]
    if order_by != "id":
        ordering.append(_P.c.id.asc() if sort == "asc" else _P.c.id.desc())
    return _from(select(*_selected())).where(and_(*where)).order_by(*ordering)


def page_of_project(db: Session, project_id: int, filters: Filters, page: Page) -> PageResult:
    """One page of the project's pipelines: the page and, past the first, its count."""
    if filters.scope in ("branches", "tags") and not filters.refs:
        return PageResult(items=[], total=0, has_next=False)
    stmt = _list_statement(filters.shape())
    result = offset_page(db, stmt, page, core=True, params=filters.values(project_id))
    result.items = _rows(result.items)
    return result


# ----------------------------------------------------------------------------- single rows


@cache
def _by_id_statement() -> Select[Any]:
    return _from(select(*_selected())).where(
        _P.c.id == bindparam("pipeline_id"), _P.c.project_id == bindparam("project_id")
    )


def row_of(db: Session, project_id: int, pipeline_id: int) -> PipelineRow | None:
    """A pipeline of the project by its id."""
    row = run(db, _by_id_statement(), {"pipeline_id": pipeline_id, "project_id": project_id}).first()
    return None if row is None else PipelineRow._make(row)


@cache
def _by_ids_statement() -> Select[Any]:
    return _from(select(*_selected())).where(_P.c.id.in_(bindparam("ids", expanding=True)))


def basics_by_ids(db: Session, ids: Iterable[int]) -> dict[int, PipelineRow]:
    """Pipelines by id in one statement, whatever their number (absent ids are left out)."""
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {row.id: row for row in _rows(run(db, _by_ids_statement(), {"ids": wanted}))}


@cache
def _latest_statement(with_ref: bool) -> Select[Any]:
    stmt = _from(select(*_selected())).where(
        _P.c.project_id == bindparam("project_id"), _P.c.sha == bindparam("sha")
    )
    if with_ref:
        stmt = stmt.where(_P.c.ref == bindparam("ref"))
    return stmt.order_by(_P.c.id.desc()).limit(1)


def latest_for_sha(db: Session, project_id: int, sha: str, ref: str | None = None) -> PipelineRow | None:
    """The newest pipeline of a commit (on `ref` when given), as a commit's last_pipeline."""
    values: dict[str, Any] = {"project_id": project_id, "sha": sha}
    if ref is not None:
        values["ref"] = ref
    row = run(db, _latest_statement(ref is not None), values).first()
    return None if row is None else PipelineRow._make(row)


# ----------------------------------------------------------------------------- related


@cache
def _variables_statement() -> Select[Any]:
    return (
        select(_VARS.c.key, _VARS.c.value, _VARS.c.variable_type, _VARS.c.raw)
        .where(_VARS.c.pipeline_id == bindparam("pipeline_id"))
        .order_by(_VARS.c.id)
    )


def variables_of(db: Session, pipeline_id: int) -> list[VariableRow]:
    """A pipeline's variables as stored (values sealed)."""
    return [VariableRow._make(r) for r in run(db, _variables_statement(), {"pipeline_id": pipeline_id})]


@cache
def _coverage_statement() -> Select[Any]:
    return select(func.avg(_JOBS.c.coverage)).where(
        _JOBS.c.pipeline_id == bindparam("pipeline_id"),
        _JOBS.c.retried.is_(False),
        _JOBS.c.coverage.is_not(None),
    )


def coverage_of(db: Session, pipeline_id: int) -> float | None:
    """GitLab's pipeline coverage: the mean of its current jobs' coverage."""
    value = run(db, _coverage_statement(), {"pipeline_id": pipeline_id}).scalar_one()
    return None if value is None else float(value)


@cache
def _warnings_statement() -> Select[Any]:
    return (
        select(_JOBS.c.id)
        .where(
            _JOBS.c.pipeline_id == bindparam("pipeline_id"),
            _JOBS.c.retried.is_(False),
            _JOBS.c.allow_failure.is_(True),
            _JOBS.c.status == "failed",
        )
        .limit(1)
    )


def has_warnings(db: Session, pipeline_id: int) -> bool:
    """Whether a current job of the pipeline failed and was allowed to."""
    return run(db, _warnings_statement(), {"pipeline_id": pipeline_id}).first() is not None


@cache
def _job_ids_statement() -> Select[Any]:
    return select(_JOBS.c.id).where(_JOBS.c.pipeline_id == bindparam("pipeline_id"))


def job_ids_of(db: Session, pipeline_id: int) -> list[int]:
    """Every job of a pipeline, retried ones included (what a delete removes)."""
    return [row[0] for row in run(db, _job_ids_statement(), {"pipeline_id": pipeline_id})]
