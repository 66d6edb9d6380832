"""Commit statuses: what a tool outside kiln reports about a commit (a build, a check) kept
as an external job of the commit's pipeline, so that it folds into the pipeline's status as
any job does; and the list of a commit's statuses (external ones and the configuration's
jobs alike, as GitLab lists them).

A status goes into the commit's newest pipeline for the ref (or the one named), or a new
pipeline with source `external` when there is none. A report for a name that is pending or
running moves that status; for any other name (or after it finished) it starts a new one,
and an earlier one of the same name becomes history (`retried`), as GitLab's do. A move
the state machine refuses (running to pending, pending twice, running twice, running to
skipped) is GitLab's 400 and writes nothing.

Reading takes sight of the project's pipelines; reporting takes a Developer."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound, ValidationFailed
from kiln.git.errors import RefNotFound
from kiln.git.history import refs_containing
from kiln.git.refs import resolve_commit
from kiln.models.ci import (
    CANCELED,
    CREATED,
    EXTERNAL,
    FAILED,
    PENDING,
    RUNNING,
    SKIPPED,
    SUCCESS,
    CiJob,
    Pipeline,
)
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import commit_statuses as finder
from kiln.queries import users as user_finder
from kiln.queries.commit_statuses import StatusRow
from kiln.queries.users import UserRow
from kiln.schemas.commit_statuses import StatusCreate, StatusList
from kiln.services import internal_ids, pipeline_processing, repositories, subjects

PIPELINE_IIDS = "ci_pipelines"
STAGE = "external"
# GitLab's GenericCommitStatus sits after every stage of the configuration.
STAGE_IDX = 1_000_000
DEFAULT_NAME = "default"
NAME_LIMIT = 255
REF_LIMIT = 1024

# The state machine's event for each state asked for, and the states it leaves from.
_EVENTS: dict[str, tuple[str, frozenset[str]]] = {
    PENDING: ("enqueue", frozenset({CREATED, SKIPPED})),
    RUNNING: ("run", frozenset({PENDING})),
    SUCCESS: ("success", frozenset({CREATED, PENDING, RUNNING})),
    FAILED: ("drop", frozenset({CREATED, PENDING, RUNNING})),
    CANCELED: ("cancel", frozenset({CREATED, PENDING, RUNNING})),
    SKIPPED: ("skip", frozenset({CREATED, PENDING})),
}


@dataclass(slots=True)
class Statuses:
    page: PageResult  # items: StatusRow
    authors: dict[int, UserRow]


@dataclass(slots=True)
class OneStatus:
    row: StatusRow
    author: UserRow | None


def _refused(event: str, current: str) -> BadRequest:
    return BadRequest(
        f'Cannot transition status via :{event} from :{current} (Reason(s): Status cannot transition via "{event}")',
        raw=True,
    )


def _check_move(current: str, state: str) -> None:
    """GitLab's state machine: `running` from a new status passes through pending."""
    if state == RUNNING and current == CREATED:
        current = PENDING
    event, sources = _EVENTS[state]
    if current not in sources:
        raise _refused(event, current)


def _check_lengths(name: str, ref: str) -> None:
    errors: dict[str, list[str]] = {}
    if len(name) > NAME_LIMIT:
        errors["name"] = [f"is too long (maximum is {NAME_LIMIT} characters)"]
    if len(ref) > REF_LIMIT:
        errors["ref"] = [f"is too long (maximum is {REF_LIMIT} characters)"]
    if errors:
        raise ValidationFailed(errors)


# ---------------------------------------------------------------------------- reads


def list_statuses(db: Session, actor: Actor, ident: str, q: StatusList, page: Page) -> Statuses:
    s = subjects.project(db, actor, ident, Action.READ_PIPELINE, rows=True)
    result = finder.page_of_commit(
        db,
        s.project.id,
        q.sha,
        {"ref": q.ref, "stage": q.stage, "name": q.name, "pipeline_id": q.pipeline_id},
        every=q.all,
        order_by=q.order_by,
        descending=q.sort == "desc",
        page=page,
    )
    ids = sorted({r.user_id for r in result.items if r.user_id is not None})
    return Statuses(result, {u.id: u for u in user_finder.rows_by_ids(db, ids)})


# ---------------------------------------------------------------------------- reporting


def _commit_and_ref(s: ProjectSubject, settings: Settings, sha: str, ref: str | None) -> tuple[str, str]:
    store = repositories.store(settings)
    repo = store.find(s.project.id)
    if repo is None:
        raise NotFound("Commit")
    try:
        commit = resolve_commit(repo, sha)
    except RefNotFound:
        raise NotFound("Commit") from None
    full = str(commit.id)
    if ref:
        return full, ref
    branches = refs_containing(store.path(s.project.id), full, branches=True, tags=False)
    if not branches:
        raise NotFound("References for commit")
    return full, branches[0][1]


def _pipeline(db: Session, actor: Actor, s: ProjectSubject, sha: str, ref: str, p: StatusCreate) -> Pipeline:
    """The commit's newest pipeline for the ref (the one named by `pipeline_id`), locked; or
    a new one with source `external`."""
    stmt = select(Pipeline).where(Pipeline.project_id == s.project.id, Pipeline.sha == sha)
    if p.ref:
        stmt = stmt.where(Pipeline.ref == ref)
    if p.pipeline_id is not None:
        stmt = stmt.where(Pipeline.id == p.pipeline_id)
    found = db.scalars(stmt.order_by(Pipeline.id.desc()).limit(1).with_for_update()).first()
    if found is not None:
        return found
    if p.pipeline_id is not None:
        raise NotFound("Pipeline")
    pipeline = Pipeline(
        iid=internal_ids.next_iid(db, PIPELINE_IIDS, s.project.id),
        project_id=s.project.id,
        ref=ref,
        sha=sha,
        source="external",
        status=CREATED,
        user_id=actor.id,
        protected=repositories.protection_for(db, s.project.id, ref) is not None,
    )
    db.add(pipeline)
    db.flush()
    return pipeline


def _open_status(db: Session, pipeline_id: int, name: str, ref: str, user_id: int) -> CiJob | None:
    """The status of this name a report moves: pending or running, reported by the same user."""
    return db.scalars(
        select(CiJob)
        .where(
            CiJob.pipeline_id == pipeline_id,
            CiJob.type == EXTERNAL,
            CiJob.name == name,
            CiJob.ref == ref,
            CiJob.user_id == user_id,
            CiJob.retried.is_(False),
            CiJob.status.in_((PENDING, RUNNING)),
        )
        .order_by(CiJob.id.desc())
        .limit(1)
        .with_for_update()
    ).first()


def create_status(db: Session, actor: Actor, ident: str, p: StatusCreate, settings: Settings) -> OneStatus:
    s = subjects.project(db, actor, ident, Action.CREATE_COMMIT_STATUS, rows=True)
    sha, ref = _commit_and_ref(s, settings, p.sha, p.ref)
    name = p.name or p.context or DEFAULT_NAME
    _check_lengths(name, ref)
    with transaction(db):
        pipeline = _pipeline(db, actor, s, sha, ref, p)
        job = _open_status(db, pipeline.id, name, ref, actor.id)
        _check_move(job.status if job is not None else CREATED, p.state)
        if job is None:
            db.execute(
                update(CiJob)
                .where(CiJob.pipeline_id == pipeline.id, CiJob.name == name, CiJob.retried.is_(False))
                .values(retried=True)
                .execution_options(synchronize_session=False)
            )
            job = CiJob(
                pipeline_id=pipeline.id,
                project_id=s.project.id,
                type=EXTERNAL,
                name=name,
                stage=STAGE,
                stage_idx=STAGE_IDX,
                status=CREATED,
                options={},
                ref=ref,
                sha=sha,
                tag=False,
                protected=pipeline.protected,
                user_id=actor.id,
            )
            db.add(job)
        if p.target_url is not None:
            job.target_url = p.target_url
        if p.description is not None:
            job.description = p.description
        if p.coverage is not None:
            job.coverage = p.coverage
        db.flush()
        if p.state == RUNNING and job.status == CREATED:
            pipeline_processing.transition(db, job, PENDING, actor=actor)
        failure = "api_failure" if p.state == FAILED else None
        pipeline_processing.transition(db, job, p.state, actor=actor, failure_reason=failure)
        pipeline_processing.process(db, pipeline.id, actor=actor)
        job_id = job.id
    row = finder.status_row(db, job_id)
    assert row is not None
    return OneStatus(row, actor.user)
