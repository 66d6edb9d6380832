"""Reads of the runner protocol: the runner behind a token, the queue of pending jobs a runner
may take, and what a job's payload is built from."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, false, func, literal, or_, select, true
from sqlalchemy.orm import Session

from kiln.models import Namespace, Project, User
from kiln.models.ci import (
    BUILD,
    GROUP_TYPE,
    INSTANCE_TYPE,
    PENDING,
    REF_PROTECTED,
    CiJob,
    JobArtifact,
    Pipeline,
    PipelineVariable,
    Runner,
    RunnerNamespace,
    RunnerProject,
    RunnerTag,
)
from kiln.models.jobs import QUEUED as JOB_QUEUED
from kiln.models.jobs import RUNNING as JOB_RUNNING
from kiln.models.jobs import Job
from kiln.models.projects import DISABLED
from kiln.queries.reads import run

_JOBS = CiJob.__table__
_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__
# How many pending jobs one look at the queue weighs against a runner's tags at once.
BATCH = 100


@dataclass(frozen=True, slots=True)
class RunnerScope:
    """What a runner may take: its tags, and the projects or group it serves."""

    tags: frozenset[str]
    project_ids: tuple[int, ...]
    group_traversal: str | None


def scope_of(db: Session, runner: Runner) -> RunnerScope:
    tags = frozenset(db.scalars(select(RunnerTag.name).where(RunnerTag.runner_id == runner.id)))
    project_ids: tuple[int, ...] = ()
    traversal = None
    if runner.runner_type == GROUP_TYPE:
        traversal = db.scalar(
            select(Namespace.traversal)
            .join(RunnerNamespace, RunnerNamespace.namespace_id == Namespace.id)
            .where(RunnerNamespace.runner_id == runner.id)
        )
    elif runner.runner_type != INSTANCE_TYPE:
        project_ids = tuple(
            db.scalars(select(RunnerProject.project_id).where(RunnerProject.runner_id == runner.id))
        )
    return RunnerScope(tags, project_ids, traversal)


@dataclass(frozen=True, slots=True)
class Candidate:
    id: int
    lock_version: int
    tag_list: list[str]


def candidates(
    db: Session, runner: Runner, scope: RunnerScope, *, after: int, skip_locked: bool
) -> list[Candidate]:
    """The next pending build jobs (oldest first, past `after`) of the projects the runner
    serves, protected ones only for a runner of protected refs; tags are weighed by the
    caller. `skip_locked` (PostgreSQL, inside the taking transaction): rows another runner is
    taking right now are passed over, not waited for."""
    conditions = [
        _JOBS.c.status == PENDING,
        _JOBS.c.type == BUILD,
        _JOBS.c.retried == false(),
        _JOBS.c.id > after,
        _PROJECTS.c.builds_access_level != DISABLED,
        _PROJECTS.c.archived == false(),
    ]
    if runner.runner_type == INSTANCE_TYPE:
        conditions.append(_PROJECTS.c.shared_runners_enabled == true())
    elif runner.runner_type == GROUP_TYPE:
        if scope.group_traversal is None:
            return []
        conditions.append(_PROJECTS.c.group_runners_enabled == true())
        # The group and every group below it: their traversals start with the group's.
        conditions.append(
            func.substr(_NAMESPACES.c.traversal, 1, len(scope.group_traversal)) == scope.group_traversal
        )
    else:
        if not scope.project_ids:
            return []
        conditions.append(_JOBS.c.project_id.in_(scope.project_ids))
    if runner.access_level == REF_PROTECTED:
        conditions.append(_JOBS.c.protected == true())
    stmt: Select[Any] = (
        select(_JOBS.c.id, _JOBS.c.lock_version, _JOBS.c.tag_list)
        .join(_PROJECTS, _PROJECTS.c.id == _JOBS.c.project_id)
        .join(_NAMESPACES, _NAMESPACES.c.id == _PROJECTS.c.namespace_id)
        .where(and_(*conditions))
        .order_by(_JOBS.c.id)
        .limit(BATCH)
    )
    if skip_locked:
        stmt = stmt.with_for_update(of=_JOBS, skip_locked=True)
    return [Candidate(r.id, r.lock_version, list(r.tag_list or [])) for r in db.execute(stmt)]


@cache
def _queue_statement() -> Select[Any]:
    pending = and_(_JOBS.c.status == PENDING, _JOBS.c.type == BUILD)
    return select(
        func.count(),
        func.coalesce(func.max(_JOBS.c.id), literal(0)),
        func.coalesce(func.sum(_JOBS.c.id + _JOBS.c.lock_version), literal(0)),
    ).where(pending)


def queue_state(db: Session) -> tuple[int, int, int]:
    """A value that changes whenever a job enters or leaves the queue (count, newest id, and
    a sum over the pending jobs' ids and versions): one indexed statement."""
    row = run(db, _queue_statement()).all()[0]
    return int(row[0]), int(row[1]), int(row[2])


# ---------------------------------------------------------------------------- the payload


@dataclass(frozen=True, slots=True)
class PayloadSources:
    """Everything a job's payload is built from, read in a fixed number of statements."""

    job: CiJob
    pipeline: Pipeline
    project: Project
    namespaces: list[Namespace]  # the project's namespace and its ancestors, root first
    user: User | None
    runner: Runner | None
    runner_tags: list[str]
    earlier: list[CiJob]  # the pipeline's jobs of earlier stages (and needs), oldest first
    archives: dict[int, JobArtifact]  # their archives by job id
    pipeline_variables: list[PipelineVariable]


def payload_sources(db: Session, job: CiJob) -> PayloadSources:
    pipeline = db.get(Pipeline, job.pipeline_id)
    project = db.get(Project, job.project_id)
    assert pipeline is not None
    assert project is not None
    namespace = db.get(Namespace, project.namespace_id)
    assert namespace is not None
    ids = namespace.ancestor_ids or [namespace.id]
    by_id = {n.id: n for n in db.scalars(select(Namespace).where(Namespace.id.in_(ids)))}
    namespaces = [by_id[i] for i in ids if i in by_id]
    user = db.get(User, job.user_id) if job.user_id is not None else None
    runner = db.get(Runner, job.runner_id) if job.runner_id is not None else None
    tags = (
        sorted(db.scalars(select(RunnerTag.name).where(RunnerTag.runner_id == runner.id)))
        if runner is not None
        else []
    )
    earlier = list(
        db.scalars(
            select(CiJob)
            .where(
                CiJob.pipeline_id == job.pipeline_id,
                CiJob.retried.is_(False),
                CiJob.type == BUILD,
                CiJob.id != job.id,
                or_(CiJob.stage_idx < job.stage_idx, CiJob.name.in_(_named(job))),
            )
            .order_by(CiJob.stage_idx, CiJob.id)
        )
    )
    archives: dict[int, JobArtifact] = {}
    if earlier:
        for artifact in db.scalars(
            select(JobArtifact).where(
                JobArtifact.job_id.in_([j.id for j in earlier]), JobArtifact.file_type == "archive"
            )
        ):
            archives[artifact.job_id] = artifact
    variables = list(
        db.scalars(
            select(PipelineVariable)
            .where(PipelineVariable.pipeline_id == job.pipeline_id)
            .order_by(PipelineVariable.id)
        )
    )
    return PayloadSources(
        job, pipeline, project, namespaces, user, runner, tags, earlier, archives, variables
    )


def _named(job: CiJob) -> list[str]:
    """Jobs a job names in `needs` or `dependencies` (perhaps of its own or a later stage)."""
    names = [n.get("job") for n in job.options.get("needs") or [] if isinstance(n, dict)]
    names += [n for n in job.options.get("dependencies") or [] if isinstance(n, str)]
    return [n for n in names if isinstance(n, str)] or [""]


# ---------------------------------------------------------------------------- stuck jobs


@cache
def _stale_pending_statement() -> Select[Any]:
    return (
        select(_JOBS.c.id)
        .where(
            _JOBS.c.status == PENDING,
            _JOBS.c.type == BUILD,
            _JOBS.c.queued_at < bindparam("before"),
        )
        .order_by(_JOBS.c.id)
        .limit(BATCH)
    )


def stale_pending_ids(db: Session, before: Any) -> Sequence[int]:
    return [r[0] for r in db.execute(_stale_pending_statement(), {"before": before})]


def job_queued(db: Session, kind: str) -> bool:
    """Whether a background job of `kind` waits in the queue (or runs)."""
    found = db.scalar(
        select(Job.id).where(Job.kind == kind, Job.state.in_((JOB_QUEUED, JOB_RUNNING))).limit(1)
    )
    return found is not None
