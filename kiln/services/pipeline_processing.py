"""How a pipeline moves, as GitLab moves it: a job waits for the earlier stages (or for its
`needs`), then becomes pending, manual, scheduled or skipped by its `when` and by how those
ended; the pipeline's status is composed from its jobs' statuses. Every change runs inside
the caller's transaction and is followed by `process`, so a status is never seen out of step
with the jobs it was composed from.

The writers that move jobs (the runner protocol, the jobs and pipelines APIs, the job queue)
check permissions first and then call the functions here; nothing here checks who asks."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln import events, jobs
from kiln.auth.actor import Actor
from kiln.models.ci import (
    BRIDGE,
    CANCELABLE,
    CANCELED,
    COMPLETED,
    CREATED,
    FAILED,
    MANUAL,
    PENDING,
    PREPARING,
    RUNNING,
    SCHEDULED,
    SKIPPED,
    SUCCESS,
    WAITING_FOR_RESOURCE,
    CiJob,
    Pipeline,
)

PLAY_DELAYED = "ci.play_delayed"

# What a job left behind counts as when later jobs and the pipeline look at it: a failure
# (or a cancel, or an untouched manual job) that was allowed is ignored.
_IGNORED = "ignored"


@dataclass(frozen=True, slots=True)
class Seen:
    """A job as the composition sees it."""

    status: str
    allow_failure: bool


def _key(job: Seen) -> str:
    if job.allow_failure and job.status in (FAILED, CANCELED, MANUAL):
        return _IGNORED
    return job.status


def composite(jobs_seen: Iterable[Seen], *, dag: bool = False) -> str | None:
    """GitLab's composite status of a set of jobs (Ci::Status::Composite); None for none.
    `dag`: the set is a job's needs, where a skipped need skips the job."""
    keys = [_key(j) for j in jobs_seen]
    if not keys:
        return None
    present = set(keys)

    def only(*allowed: str) -> bool:
        return present <= set(allowed)

    if dag and SKIPPED in present:
        return SKIPPED
    if only(SKIPPED, _IGNORED):
        return SKIPPED
    if only(SUCCESS, SKIPPED, _IGNORED):
        return SUCCESS
    if only(CREATED, _IGNORED):
        return CREATED
    if only(PREPARING, _IGNORED):
        return PREPARING
    if only(CANCELED, SUCCESS, SKIPPED, _IGNORED):
        return CANCELED
    if only(PENDING, CREATED, SKIPPED, _IGNORED):
        return PENDING
    if present & {RUNNING, PENDING}:
        return RUNNING
    if WAITING_FOR_RESOURCE in present:
        return WAITING_FOR_RESOURCE
    if MANUAL in present:
        return MANUAL
    if SCHEDULED in present:
        return SCHEDULED
    if PREPARING in present:
        return PREPARING
    if CREATED in present:
        return RUNNING
    return FAILED


def _now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------------------- jobs


def transition(
    db: Session,
    job: CiJob,
    status: str,
    *,
    actor: Actor | None = None,
    failure_reason: str | None = None,
    exit_code: int | None = None,
    now: datetime | None = None,
) -> bool:
    """Move one job to `status` with the times GitLab keeps (queued, started, finished,
    duration) and record it for hooks. False when the job already has that status. The
    caller runs `process` for the pipeline afterwards (once, after moving several jobs)."""
    if job.status == status:
        return False
    now = now or _now()
    previous = job.status
    job.status = status
    job.lock_version += 1
    if status == PENDING:
        job.queued_at = now
    elif status == RUNNING:
        job.started_at = job.started_at or now
    if status in COMPLETED:
        job.finished_at = now
        if job.started_at is not None:
            job.duration = max((now - job.started_at).total_seconds(), 0.0)
        job.token_digest = None
        if status == FAILED:
            job.failure_reason = failure_reason or job.failure_reason or "unknown_failure"
            job.exit_code = exit_code if exit_code is not None else job.exit_code
        elif status == SUCCESS:
            job.exit_code = exit_code if exit_code is not None else job.exit_code
    events.record(
        db,
        "job_status",
        project_id=job.project_id,
        actor=actor,
        target_type="CiJob",
        target_id=job.id,
        data={
            "hook": "job",
            "pipeline_id": job.pipeline_id,
            "name": job.name,
            "stage": job.stage,
            "status": status,
            "previous_status": previous,
        },
    )
    return True


def _latest(db: Session, pipeline_id: int) -> list[CiJob]:
    """The pipeline's jobs that count: retried ones are history."""
    stmt = (
        select(CiJob)
        .where(CiJob.pipeline_id == pipeline_id, CiJob.retried.is_(False))
        .order_by(CiJob.stage_idx, CiJob.id)
    )
    return list(db.scalars(stmt))


def _prerequisites(
    job: CiJob, latest: Sequence[CiJob], by_name: dict[str, CiJob]
) -> tuple[list[CiJob], bool]:
    """What `job` waits for, and whether that is a `needs` list (dag)."""
    if job.scheduling_type == "dag":
        needed = [by_name[n["job"]] for n in job.options.get("needs") or [] if n.get("job") in by_name]
        return needed, True
    return [j for j in latest if j.stage_idx < job.stage_idx], False


def _next_status(job: CiJob, before: str | None, *, dag: bool) -> str | None:
    """The status a created job takes once what it waits for ended as `before` (None:
    nothing to wait for); None while it still waits (something runs, is pending, or is a
    manual job that blocks). GitLab's valid outcomes per `when`; under `needs` a skipped
    need skips the job."""
    before = before or SUCCESS
    if before not in (SUCCESS, FAILED, CANCELED, SKIPPED):
        return None
    when = job.when
    if when == "on_failure":
        valid = {FAILED}
    elif when == "always":
        valid = {SUCCESS, FAILED, SKIPPED}
    else:
        valid = {SUCCESS} if dag else {SUCCESS, SKIPPED}
    if when == "never" or before not in valid:
        return SKIPPED
    return {"manual": MANUAL, "delayed": SCHEDULED}.get(when, PENDING)


def process(db: Session, pipeline_id: int, *, actor: Actor | None = None) -> Pipeline | None:
    """Advance every created job whose turn came, then compose the pipeline's status. Runs
    until nothing moves (a skipped job may let the next stage go at once)."""
    pipeline = db.get(Pipeline, pipeline_id, with_for_update=True)
    if pipeline is None:
        return None
    now = _now()
    while True:
        latest = _latest(db, pipeline_id)
        by_name = {j.name: j for j in latest}
        moved = False
        for job in latest:
            if job.status != CREATED:
                continue
            waits_for, dag = _prerequisites(job, latest, by_name)
            before = composite((Seen(j.status, j.allow_failure) for j in waits_for), dag=dag)
            nxt = _next_status(job, before, dag=dag)
            if nxt is None:
                continue
            if nxt == SCHEDULED:
                delay = int(job.options.get("start_in") or 0)
                job.scheduled_at = now + timedelta(seconds=delay)
                jobs.enqueue(db, PLAY_DELAYED, {"job_id": job.id}, run_at=job.scheduled_at)
            if job.type == BRIDGE and nxt == PENDING:
                # Triggers of downstream pipelines are recorded, not run: they pass at once.
                transition(db, job, SUCCESS, actor=actor, now=now)
            else:
                transition(db, job, nxt, actor=actor, now=now)
            moved = True
        if not moved:
            break
    _compose(db, pipeline, latest, actor=actor, now=now)
    return pipeline


def _compose(
    db: Session, pipeline: Pipeline, latest: Sequence[CiJob], *, actor: Actor | None, now: datetime
) -> None:
    if pipeline.yaml_errors:
        status = FAILED
    else:
        status = composite(Seen(j.status, j.allow_failure) for j in latest) or SKIPPED
    if status == pipeline.status:
        return
    previous = pipeline.status
    pipeline.status = status
    pipeline.lock_version += 1
    if status in (RUNNING,) and pipeline.started_at is None:
        pipeline.started_at = now
    if status in COMPLETED or status == MANUAL:
        if status in COMPLETED:
            pipeline.finished_at = now
        started = [j.started_at for j in latest if j.started_at is not None]
        if started and status in COMPLETED:
            pipeline.duration = int(_busy_seconds(latest))
    else:
        pipeline.finished_at = None
    record_pipeline_event(db, pipeline, "pipeline_status", actor=actor, previous=previous)
    if status == SUCCESS:
        # Merge requests set to merge when this pipeline succeeds (imported here: merges
        # reaches this module through repositories and pipeline creation).
        from kiln.services import merges

        merges.after_pipeline_success(db, pipeline)


def record_pipeline_event(
    db: Session,
    pipeline: Pipeline,
    action: str,
    *,
    actor: Actor | None,
    previous: str | None,
    extra: dict[str, Any] | None = None,
) -> None:
    """The one place a pipeline's status change (its creation included) becomes an event
    for the pipeline hooks."""
    data: dict[str, Any] = {
        "hook": "pipeline",
        "status": pipeline.status,
        "previous_status": previous,
        "ref": pipeline.ref,
    }
    if extra:
        data.update(extra)
    events.record(
        db,
        action,
        project_id=pipeline.project_id,
        actor=actor,
        target_type="Pipeline",
        target_id=pipeline.id,
        data=data,
    )


def _busy_seconds(latest: Sequence[CiJob]) -> float:
    """GitLab's pipeline duration: the time some job was running, overlaps counted once."""
    spans = sorted(
        (j.started_at, j.finished_at)
        for j in latest
        if j.started_at is not None and j.finished_at is not None
    )
    total = 0.0
    current: tuple[datetime, datetime] | None = None
    for start, end in spans:
        if current is None or start > current[1]:
            if current is not None:
                total += (current[1] - current[0]).total_seconds()
            current = (start, end)
        elif end > current[1]:
            current = (current[0], end)
    if current is not None:
        total += (current[1] - current[0]).total_seconds()
    return total


# ---------------------------------------------------------------------------- what users do


def cancel_pipeline(db: Session, pipeline: Pipeline, *, actor: Actor | None) -> Pipeline:
    """Every job that may still be canceled is canceled (a runner hears it on its next trace
    update through Job-Status)."""
    now = _now()
    for job in _latest(db, pipeline.id):
        if job.status in CANCELABLE:
            transition(db, job, CANCELED, actor=actor, now=now)
    process(db, pipeline.id, actor=actor)
    return pipeline


def cancel_job(db: Session, job: CiJob, *, actor: Actor | None) -> CiJob:
    if job.status in CANCELABLE:
        transition(db, job, CANCELED, actor=actor)
        process(db, job.pipeline_id, actor=actor)
    return job


def _copy(db: Session, job: CiJob, *, actor: Actor | None) -> CiJob:
    """A new job in place of `job`, which stays as history (`retried`)."""
    job.retried = True
    copy = CiJob(
        pipeline_id=job.pipeline_id,
        project_id=job.project_id,
        type=job.type,
        name=job.name,
        stage=job.stage,
        stage_idx=job.stage_idx,
        status=CREATED,
        when=job.when,
        allow_failure=job.allow_failure,
        scheduling_type=job.scheduling_type,
        options=dict(job.options),
        yaml_variables=list(job.yaml_variables),
        tag_list=list(job.tag_list),
        ref=job.ref,
        sha=job.sha,
        tag=job.tag,
        protected=job.protected,
        user_id=actor.id if actor is not None else job.user_id,
        description=job.description,
        target_url=job.target_url,
    )
    db.add(copy)
    db.flush()
    return copy


def retry_job(db: Session, job: CiJob, *, actor: Actor | None) -> CiJob:
    """A copy of the job that runs again; the jobs after it that were skipped because of it
    wait for it again."""
    copy = _copy(db, job, actor=actor)
    _reopen_later(db, job.pipeline_id, copy.stage_idx)
    pipeline = db.get(Pipeline, job.pipeline_id)
    if pipeline is not None:
        pipeline.finished_at = None
    process(db, job.pipeline_id, actor=actor)
    return copy


def retry_pipeline(db: Session, pipeline: Pipeline, *, actor: Actor | None) -> Pipeline:
    """Failed and canceled jobs run again; jobs skipped after them wait again."""
    retried = [j for j in _latest(db, pipeline.id) if j.status in (FAILED, CANCELED)]
    if not retried:
        return pipeline
    first = min(j.stage_idx for j in retried)
    for job in retried:
        _copy(db, job, actor=actor)
    _reopen_later(db, pipeline.id, first)
    pipeline.finished_at = None
    process(db, pipeline.id, actor=actor)
    return pipeline


def _reopen_later(db: Session, pipeline_id: int, stage_idx: int) -> None:
    db.execute(
        update(CiJob)
        .where(
            CiJob.pipeline_id == pipeline_id,
            CiJob.retried.is_(False),
            CiJob.stage_idx >= stage_idx,
            CiJob.status == SKIPPED,
        )
        .values(status=CREATED, finished_at=None, lock_version=CiJob.lock_version + 1)
        .execution_options(synchronize_session="fetch")
    )


def play_job(
    db: Session, job: CiJob, *, actor: Actor | None, variables: list[dict[str, Any]] | None = None
) -> CiJob:
    """A manual job started by a user (with variables for this run), a delayed one started
    before its time, or a finished one run again as a copy, as GitLab plays it."""
    if job.status not in (MANUAL, SCHEDULED):
        job = _copy(db, job, actor=actor)
    elif actor is not None:
        job.user_id = actor.id
    if variables:
        job.options = {**job.options, "job_variables": variables}
    transition(db, job, PENDING, actor=actor)
    # What was skipped while the job waited (jobs that need it, later stages) waits again
    # (GitLab's ResetSkippedJobsService).
    _reopen_later(db, job.pipeline_id, job.stage_idx)
    process(db, job.pipeline_id, actor=actor)
    return job


@jobs.handler(PLAY_DELAYED)
def _play_delayed(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """A delayed job's time has come: it becomes pending, unless it was played, canceled or
    retried meanwhile."""
    job = ctx.db.get(CiJob, payload["job_id"])
    if job is None or job.status != SCHEDULED or job.retried:
        return
    if job.scheduled_at is not None and job.scheduled_at > _now() + timedelta(seconds=1):
        return
    transition(ctx.db, job, PENDING)
    process(ctx.db, job.pipeline_id)
