"""Runner reads: lists (every runner, a user's own, a project's, a group's) with their filters,
one runner with its projects, group and tags, the caller's standing on a runner, and the jobs
a runner ran. Statements are built once per shape; a page costs the page, its count, and one
statement per related table by ids. The ORM `Runner` is for writes.

Exported for other modules: `tags_of(db, runner_ids) -> dict[int, list[str]]` (each runner's
tags, sorted), `RunnerRow`, `row_by_id`."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Date,
    Select,
    and_,
    bindparam,
    false,
    func,
    literal,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from kiln import policy
from kiln.models import Namespace, Project
from kiln.models.ci import (
    GROUP_TYPE,
    INSTANCE_TYPE,
    PROJECT_TYPE,
    CiJob,
    Pipeline,
    Runner,
    RunnerNamespace,
    RunnerProject,
    RunnerTag,
)
from kiln.models.namespaces import GUEST
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

# GitLab's Ci::Runner timeouts: online while it asked within two hours; stale after a week.
ONLINE_WINDOW = timedelta(hours=2)
STALE_AFTER = timedelta(days=7)

_R = Runner.__table__
_TAGS = RunnerTag.__table__
_RP = RunnerProject.__table__
_RN = RunnerNamespace.__table__
_COLUMNS = (
    "id",
    "runner_type",
    "description",
    "active",
    "locked",
    "run_untagged",
    "access_level",
    "maximum_timeout",
    "maintenance_note",
    "name",
    "version",
    "revision",
    "platform",
    "architecture",
    "executor_type",
    "ip_address",
    "contacted_at",
    "created_at",
    "token_expires_at",
    "creator_id",
    "registration_type",
)
RunnerRow = namedtuple("RunnerRow", _COLUMNS)  # type: ignore[misc]
# A project as a runner's detail shows it (GitLab's BasicProjectDetails, its first fields).
RunnerProjectRow = namedtuple(  # type: ignore[misc]
    "RunnerProjectRow",
    [
        "runner_id",
        "id",
        "description",
        "name",
        "path",
        "created_at",
        "namespace_full_path",
        "namespace_full_name",
    ],
)
RunnerGroupRow = namedtuple("RunnerGroupRow", ["runner_id", "id", "name", "full_path"])  # type: ignore[misc]
# A job of a runner with its pipeline and project (the runner-jobs view).
RunnerJobRow = namedtuple(  # type: ignore[misc]
    "RunnerJobRow",
    [
        "id",
        "status",
        "stage",
        "name",
        "ref",
        "tag",
        "coverage",
        "allow_failure",
        "created_at",
        "started_at",
        "finished_at",
        "erased_at",
        "queued_at",
        "duration",
        "failure_reason",
        "user_id",
        "sha",
        "pipeline_id",
        "pipeline_iid",
        "pipeline_sha",
        "pipeline_ref",
        "pipeline_status",
        "pipeline_source",
        "pipeline_created_at",
        "pipeline_updated_at",
        "project_id",
        "project_description",
        "project_name",
        "project_path",
        "project_created_at",
        "namespace_full_path",
        "namespace_full_name",
    ],
)


def _selected() -> list[Any]:
    return [_R.c[name] for name in _COLUMNS]


def now() -> datetime:
    return datetime.now(UTC)


# ----------------------------------------------------------------------------- one runner


@cache
def _by_id_statement() -> Select[Any]:
    return select(*_selected()).where(_R.c.id == bindparam("id"))


def row_by_id(db: Session, runner_id: int) -> RunnerRow | None:
    row = run(db, _by_id_statement(), {"id": runner_id}).first()
    return None if row is None else RunnerRow._make(row)


# What a runner's project and a runner's job show of the project (JobBasicWithProject's
# `project`, a runner detail's `projects`).
_PROJECT_COLUMNS = (
    Project.id,
    Project.description,
    Project.name,
    Project.path,
    Project.created_at,
    Namespace.full_path,
    Namespace.full_name,
)


@cache
def _projects_statement() -> Select[Any]:
    return (
        select(
            _RP.c.runner_id,
            *_PROJECT_COLUMNS,
        )
        .select_from(_RP)
        .join(Project, Project.id == _RP.c.project_id)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(_RP.c.runner_id.in_(bindparam("ids", expanding=True)))
        .order_by(_RP.c.runner_id, _RP.c.id)
    )


def _by_runner(db: Session, stmt: Select[Any], runner_ids: Iterable[int], make: Any) -> dict[int, list[Any]]:
    """One statement's rows (the runner's id first) made into `make`'s tuples, by runner;
    runners without any get []."""
    ids = list(runner_ids)
    out: dict[int, list[Any]] = {i: [] for i in ids}
    if ids:
        for row in run(db, stmt, {"ids": ids}):
            out[row[0]].append(make(row))
    return out


def projects_of(db: Session, runner_ids: Sequence[int]) -> dict[int, list[RunnerProjectRow]]:
    """Each runner's projects, the one it was registered for first."""
    return _by_runner(db, _projects_statement(), runner_ids, RunnerProjectRow._make)


@cache
def _groups_statement() -> Select[Any]:
    return (
        select(_RN.c.runner_id, Namespace.id, Namespace.name, Namespace.full_path)
        .select_from(_RN)
        .join(Namespace, Namespace.id == _RN.c.namespace_id)
        .where(_RN.c.runner_id.in_(bindparam("ids", expanding=True)))
        .order_by(_RN.c.runner_id, Namespace.id)
    )


def groups_of(db: Session, runner_ids: Sequence[int]) -> dict[int, list[RunnerGroupRow]]:
    return _by_runner(db, _groups_statement(), runner_ids, RunnerGroupRow._make)


@cache
def _tags_statement() -> Select[Any]:
    return (
        select(_TAGS.c.runner_id, _TAGS.c.name)
        .where(_TAGS.c.runner_id.in_(bindparam("ids", expanding=True)))
        .order_by(_TAGS.c.runner_id, _TAGS.c.name)
    )


def tags_of(db: Session, runner_ids: Iterable[int]) -> dict[int, list[str]]:
    """Each runner's tags, sorted by name, in one statement (runners without tags: [])."""
    return _by_runner(db, _tags_statement(), runner_ids, lambda row: row[1])


@cache
def _standing_statement() -> Select[Any]:
    """The user's highest level on some projects and on some groups, in one row."""
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    reach = access.project_level_rows(user_id, bindparam("project_ids", expanding=True), today).subquery(
        "reach"
    )
    project_level = select(func.max(reach.c.level)).scalar_subquery()
    groups = access.group_levels(user_id, bindparam("group_ids", expanding=True), today)
    group_level = select(func.max(groups.c.level)).scalar_subquery()
    return select(project_level.label("project_level"), group_level.label("group_level"))


def standing(
    db: Session, user_id: int, project_ids: Sequence[int], group_ids: Sequence[int]
) -> tuple[int | None, int | None]:
    """(the user's highest level on a runner's projects, on its group), None where none."""
    if not project_ids and not group_ids:
        return None, None
    values = {
        "user_id": user_id,
        "project_ids": list(project_ids),
        "group_ids": list(group_ids),
        "today": date.today(),
    }
    row = run(db, _standing_statement(), values).first()
    return (None, None) if row is None else (row[0], row[1])


@cache
def _reachable_statement() -> Select[Any]:
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    projects = access.project_levels(user_id, bindparam("project_ids", expanding=True), today)
    groups = access.group_levels(user_id, bindparam("group_ids", expanding=True), today)
    return union_all(
        select(literal("project").label("kind"), projects.c.project_id.label("id")).where(
            projects.c.level >= GUEST
        ),
        select(literal("group").label("kind"), groups.c.namespace_id.label("id")).where(
            groups.c.level >= GUEST
        ),
    )  # type: ignore[return-value]


def reachable_of(
    db: Session, user_id: int, project_ids: Sequence[int], group_ids: Sequence[int]
) -> tuple[set[int], set[int]]:
    """Which of these projects and groups the user is a member of (directly or above)."""
    values = {
        "user_id": user_id,
        "project_ids": list(project_ids),
        "group_ids": list(group_ids),
        "today": date.today(),
    }
    projects: set[int] = set()
    groups: set[int] = set()
    for kind, ident in run(db, _reachable_statement(), values):
        (projects if kind == "project" else groups).add(ident)
    return projects, groups


# ----------------------------------------------------------------------------- lists


def _tagged_all() -> ColumnElement[bool]:
    having = (
        select(_TAGS.c.runner_id)
        .where(_TAGS.c.name.in_(bindparam("tags", expanding=True)))
        .group_by(_TAGS.c.runner_id)
        .having(func.count() == bindparam("tag_count"))
    )
    return _R.c.id.in_(having)


def _condition(name: str) -> ColumnElement[bool]:
    """A scope's or status's rows (GitLab's Ci::Runner scopes, the deprecated ones as they
    were: `offline` leaves out runners never in contact)."""
    contacted = _R.c.contacted_at
    if name == "active":
        return _R.c.active.is_(True)
    if name == "paused":
        return _R.c.active.is_(False)
    if name == "online":
        return contacted > bindparam("online_after")
    if name == "offline":
        return contacted <= bindparam("online_after")
    if name in ("never_contacted", "not_connected"):
        return contacted.is_(None)
    if name == "stale":
        return or_(
            contacted <= bindparam("stale_before"),
            and_(contacted.is_(None), _R.c.created_at <= bindparam("stale_before")),
        )
    if name == "specific":  # GitLab's deprecated_specific: every runner but the instance's
        return _R.c.runner_type.in_((PROJECT_TYPE, GROUP_TYPE))
    if name == PROJECT_TYPE:
        return _R.c.runner_type == PROJECT_TYPE
    if name in ("shared", INSTANCE_TYPE):
        return _R.c.runner_type == INSTANCE_TYPE
    if name == GROUP_TYPE:
        return _R.c.runner_type == GROUP_TYPE
    raise ValueError(name)


def _owned() -> ColumnElement[bool]:
    """GitLab's ci_owned_runners: project runners of projects where the user is a Maintainer
    (directly, through a group or a share), group runners of groups (and their subgroups)
    where the user is an Owner."""
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    levels = access.project_levels(user_id, None, today)
    projects = select(levels.c.project_id).where(levels.c.level >= policy.RUNNER_PROJECT_LEVEL)
    glevels = access.group_levels(user_id, None, today)
    groups = select(glevels.c.namespace_id).where(glevels.c.level >= policy.RUNNER_GROUP_ADMIN_LEVEL)
    return or_(
        and_(
            _R.c.runner_type == PROJECT_TYPE,
            _R.c.id.in_(select(_RP.c.runner_id).where(_RP.c.project_id.in_(projects))),
        ),
        and_(
            _R.c.runner_type == GROUP_TYPE,
            _R.c.id.in_(select(_RN.c.runner_id).where(_RN.c.namespace_id.in_(groups))),
        ),
    )


def _of_groups() -> ColumnElement[bool]:
    return and_(
        _R.c.runner_type == GROUP_TYPE,
        _R.c.id.in_(
            select(_RN.c.runner_id).where(_RN.c.namespace_id.in_(bindparam("group_ids", expanding=True)))
        ),
    )


def _scope(kind: str, groups: bool, shared: bool) -> ColumnElement[bool]:
    if kind == "all":
        return and_(True)  # type: ignore[arg-type]
    if kind == "owned":
        return _owned()
    if kind == "project":
        parts: list[ColumnElement[bool]] = [
            _R.c.id.in_(select(_RP.c.runner_id).where(_RP.c.project_id == bindparam("project_id")))
        ]
    else:  # group
        parts = []
    if groups:
        parts.append(_of_groups())
    if shared:
        parts.append(_R.c.runner_type == INSTANCE_TYPE)
    return or_(*parts) if parts else false()


@cache
def _listing(
    kind: str, groups: bool, shared: bool, conditions: tuple[str, ...], tagged: bool, versioned: bool
) -> Select[Any]:
    stmt = select(*_selected()).where(_scope(kind, groups, shared))
    for name in conditions:
        stmt = stmt.where(_condition(name))
    if tagged:
        stmt = stmt.where(_tagged_all())
    if versioned:
        stmt = stmt.where(_R.c.version.like(bindparam("version_prefix"), escape="\\"))
    return stmt.order_by(_R.c.id)


def page_of_runners(
    db: Session,
    page: Page,
    *,
    kind: str,
    conditions: Sequence[str] = (),
    tags: Sequence[str] | None = None,
    version_prefix: str | None = None,
    user_id: int | None = None,
    project_id: int | None = None,
    group_ids: Sequence[int] = (),
    groups: bool = False,
    shared: bool = False,
) -> PageResult:
    """A page of runners, oldest first. `kind`: all, owned (by `user_id`), project (its own,
    with `group_ids`' runners when `groups`, instance runners when `shared`) or group
    (`group_ids`' runners, instance runners when `shared`). `conditions`: scope and status
    names that must all hold; `tags`: runners carrying every one of them."""
    stmt = _listing(kind, groups, shared, tuple(conditions), bool(tags), version_prefix is not None)
    at = now()
    values: dict[str, Any] = {
        "online_after": at - ONLINE_WINDOW,
        "stale_before": at - STALE_AFTER,
        "user_id": user_id,
        "today": date.today(),
        "project_id": project_id,
        "group_ids": list(group_ids),
    }
    if tags:
        values["tags"] = list(tags)
        values["tag_count"] = len(tags)
    if version_prefix is not None:
        escaped = version_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        values["version_prefix"] = escaped + "%"
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [RunnerRow._make(row) for row in result.items]
    return result


# ----------------------------------------------------------------------------- a runner's jobs


@cache
def _jobs_statement(by_status: bool, limited: bool, ascending: bool) -> Select[Any]:
    j, p = CiJob.__table__, Pipeline.__table__
    stmt = (
        select(
            j.c.id,
            j.c.status,
            j.c.stage,
            j.c.name,
            j.c.ref,
            j.c.tag,
            j.c.coverage,
            j.c.allow_failure,
            j.c.created_at,
            j.c.started_at,
            j.c.finished_at,
            j.c.erased_at,
            j.c.queued_at,
            j.c.duration,
            j.c.failure_reason,
            j.c.user_id,
            j.c.sha,
            p.c.id,
            p.c.iid,
            p.c.sha,
            p.c.ref,
            p.c.status,
            p.c.source,
            p.c.created_at,
            p.c.updated_at,
            *_PROJECT_COLUMNS,
        )
        .select_from(j)
        .join(p, p.c.id == j.c.pipeline_id)
        .join(Project, Project.id == j.c.project_id)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(j.c.runner_id == bindparam("runner_id"))
    )
    if by_status:
        stmt = stmt.where(j.c.status == bindparam("status"))
    if limited:
        levels = access.project_levels(bindparam("user_id"), None, bindparam("today", type_=Date()))
        stmt = stmt.where(
            j.c.project_id.in_(select(levels.c.project_id).where(levels.c.level >= policy.RUNNER_JOBS_LEVEL))
        )
    return stmt.order_by(j.c.id.asc() if ascending else j.c.id.desc())


def page_of_jobs(
    db: Session,
    runner_id: int,
    page: Page,
    *,
    status: str | None,
    ascending: bool,
    user_id: int | None,
) -> PageResult:
    """A runner's jobs, newest first unless `ascending`; with `user_id`, only those of
    projects where that user is at least a Reporter."""
    stmt = _jobs_statement(status is not None, user_id is not None, ascending)
    values: dict[str, Any] = {
        "runner_id": runner_id,
        "status": status,
        "user_id": user_id,
        "today": date.today(),
    }
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [RunnerJobRow._make(row) for row in result.items]
    return result


# ----------------------------------------------------------------------------- tokens


@cache
def _group_by_token_statement() -> Select[Any]:
    return select(Namespace.id).where(Namespace.runners_token_digest == bindparam("digest"))


def group_id_by_token_digest(db: Session, token_digest: str) -> int | None:
    row = run(db, _group_by_token_statement(), {"digest": token_digest}).first()
    found: int | None = None if row is None else row[0]
    return found
