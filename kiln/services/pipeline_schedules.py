"""Pipeline schedules: a ref, a cron line and its time zone, variables, an owner as whom the
pipelines run. The job queue runs them: creating, changing or running one enqueues
`ci.run_schedule` for its next time, and each run enqueues the one after, so a schedule
needs no process of its own and a change makes the queued run stale (its expected time no
longer the schedule's).

Reading needs sight of the project's pipelines (Reporters); Developers create schedules and
run them now; a schedule is changed by its owner (a Developer or up) and administrators,
taken over, deleted and its variables read by Maintainers and its owner, as GitLab's
PipelineSchedulePolicy says. An owner who may no longer create pipelines (blocked, gone, no
longer a Developer) has their schedule turned off at its next run, as GitLab does."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter
from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln import jobs, policy
from kiln.auth import sealing
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden, KilnError, NotFound, ParamError, ValidationFailed
from kiln.git import branches as git_refs
from kiln.models import Project
from kiln.models.base import utcnow
from kiln.models.ci import PipelineSchedule, PipelineScheduleVariable
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import pipeline_schedules as finder
from kiln.queries import users as user_finder
from kiln.queries.pipeline_schedules import PipelineBasicRow, ScheduleRow
from kiln.queries.users import UserRow
from kiln.schemas.pipeline_schedules import (
    ScheduleCreate,
    ScheduleUpdate,
    ScheduleVariableCreate,
    ScheduleVariableUpdate,
)
from kiln.services import ci_variables, pipeline_creation, repositories, subjects

log = logging.getLogger("kiln.ci.schedules")

RUN = "ci.run_schedule"
INVALID_SYNTAX = " is invalid syntax"
KEY_LIMIT = 255
CRON_LIMIT = 255
HEADS, TAGS = "refs/heads/", "refs/tags/"


@dataclass(slots=True)
class Schedules:
    page: PageResult  # items: ScheduleRow
    owners: dict[int, UserRow]


@dataclass(slots=True)
class ScheduleDetail:
    row: ScheduleRow
    owner: UserRow | None
    last_pipeline: PipelineBasicRow | None
    # None: the caller may not read them.
    variables: list[dict[str, Any]] | None
    full_path: str


@dataclass(slots=True)
class Variable:
    key: str
    value: str
    variable_type: str
    raw: bool


# ---------------------------------------------------------------------------- cron


def next_run(cron: str, timezone: str, after: datetime) -> datetime:
    """The first time after `after` the cron line names, read in `timezone`, in UTC."""
    local = after.astimezone(ZoneInfo(timezone))
    found: datetime = croniter(cron, local).get_next(datetime)
    return found.astimezone(UTC)


def _zone_ok(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def _validate(cron: str | None, timezone: str | None, description: str | None) -> None:
    errors: dict[str, list[str]] = {}
    if cron is not None and (not cron.strip() or len(cron) > CRON_LIMIT or not croniter.is_valid(cron)):
        errors["cron"] = [INVALID_SYNTAX]
    if timezone is not None and (not timezone.strip() or not _zone_ok(timezone)):
        errors["cron_timezone"] = [INVALID_SYNTAX]
    if description is not None and not description.strip():
        errors["description"] = ["can't be blank"]
    if errors:
        raise ValidationFailed(errors)


# ---------------------------------------------------------------------------- refs


def _full_ref(settings: Settings, project_id: int, ref: str) -> str:
    """A branch or tag named short or in full, stored in full as GitLab stores it (short
    when it names both a branch and a tag); 400 when it names neither."""
    if not ref.strip():
        raise ParamError("ref is empty")
    repo = repositories.store(settings).find(project_id)
    if repo is None:
        raise ValidationFailed({"ref": ["is invalid"]})
    if ref.startswith(HEADS):
        if git_refs.find_branch(repo, ref[len(HEADS) :]) is None:
            raise ValidationFailed({"ref": ["is invalid"]})
        return ref
    if ref.startswith(TAGS):
        if git_refs.find_tag(repo, ref[len(TAGS) :]) is None:
            raise ValidationFailed({"ref": ["is invalid"]})
        return ref
    branch = git_refs.find_branch(repo, ref) is not None
    tag = git_refs.find_tag(repo, ref) is not None
    if branch and tag:
        return ref
    if branch:
        return HEADS + ref
    if tag:
        return TAGS + ref
    raise ValidationFailed({"ref": ["is invalid"]})


def short_ref(ref: str) -> str:
    for prefix in (HEADS, TAGS):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def may_use_ref(db: Session, actor: Actor, s: ProjectSubject, ref: str) -> bool:
    """Pipelines of a protected branch are made only by those who may push or merge to it
    (GitLab's protected ref check); tags and unprotected branches are open to all who may
    create pipelines."""
    if ref.startswith(TAGS):
        return True
    name = short_ref(ref)
    rule = repositories.protection_for(db, s.project.id, name)
    if rule is None:
        return True
    return policy.may_push_to(actor, s, rule.push_access_level) or policy.may_push_to(
        actor, s, rule.merge_access_level
    )


# ---------------------------------------------------------------------------- subjects


def _project(
    db: Session, actor: Actor | None, ident: str, action: Action = Action.READ_PIPELINE
) -> ProjectSubject:
    return subjects.project(db, actor, ident, action, rows=True)


def _full_path(s: ProjectSubject) -> str:
    return f"{s.namespace.full_path}/{s.project.path}"


def _row(db: Session, s: ProjectSubject, schedule_id: int) -> ScheduleRow:
    row = finder.schedule_of(db, s.project.id, schedule_id)
    if row is None:
        raise NotFound("Pipeline Schedule")
    return row


def _model(db: Session, s: ProjectSubject, schedule_id: int) -> PipelineSchedule:
    found = db.scalars(
        select(PipelineSchedule)
        .where(PipelineSchedule.id == schedule_id, PipelineSchedule.project_id == s.project.id)
        .with_for_update()
    ).first()
    if found is None:
        raise NotFound("Pipeline Schedule")
    return found


def _variables(settings: Settings, schedule_id: int, db: Session) -> list[dict[str, Any]]:
    return [
        {
            "variable_type": v.variable_type,
            "key": v.key,
            "value": sealing.unseal(settings, v.value),
            "raw": v.raw,
        }
        for v in finder.variables_of(db, schedule_id)
    ]


def _detail(
    db: Session, actor: Actor | None, s: ProjectSubject, schedule_id: int, settings: Settings
) -> ScheduleDetail:
    row = _row(db, s, schedule_id)
    owner = user_finder.row_by_id(db, row.owner_id) if row.owner_id is not None else None
    shown = policy.may_admin_pipeline_schedule(actor, s, row.owner_id)
    return ScheduleDetail(
        row,
        owner,
        finder.last_pipeline(db, row.id),
        _variables(settings, row.id, db) if shown else None,
        _full_path(s),
    )


# ---------------------------------------------------------------------------- reads


def list_schedules(db: Session, actor: Actor, ident: str, scope: str | None, page: Page) -> Schedules:
    s = _project(db, actor, ident)
    result = finder.page_of_project(db, s.project.id, scope, page)
    ids = sorted({r.owner_id for r in result.items if r.owner_id is not None})
    return Schedules(result, {u.id: u for u in user_finder.rows_by_ids(db, ids)})


def get_schedule(
    db: Session, actor: Actor, ident: str, schedule_id: int, settings: Settings
) -> ScheduleDetail:
    return _detail(db, actor, _project(db, actor, ident), schedule_id, settings)


def schedule_pipelines(
    db: Session, actor: Actor, ident: str, schedule_id: int, descending: bool, page: Page
) -> tuple[PageResult, str]:
    """The pipelines the schedule made, and the project's full path for their URLs."""
    s = _project(db, actor, ident)
    row = _row(db, s, schedule_id)
    return finder.pipelines_page(db, s.project.id, row.id, descending, page), _full_path(s)


# ---------------------------------------------------------------------------- changes


def _plan_next(db: Session, schedule: PipelineSchedule) -> None:
    """The schedule's next run from now, queued; a run queued before is stale from here on."""
    if not schedule.active:
        schedule.next_run_at = None
        return
    when = next_run(schedule.cron, schedule.cron_timezone, utcnow())
    schedule.next_run_at = when
    db.flush()
    jobs.enqueue(db, RUN, {"schedule_id": schedule.id, "next_run_at": when.isoformat()}, run_at=when)


def create_schedule(db: Session, actor: Actor, p: ScheduleCreate, settings: Settings) -> ScheduleDetail:
    s = _project(db, actor, p.id, Action.CREATE_PIPELINE)
    _validate(p.cron, p.cron_timezone, p.description)
    ref = _full_ref(settings, s.project.id, p.ref)
    if not may_use_ref(db, actor, s, ref):
        raise Forbidden()
    with transaction(db):
        schedule = PipelineSchedule(
            project_id=s.project.id,
            owner_id=actor.id,
            description=p.description,
            ref=ref,
            cron=p.cron.strip(),
            cron_timezone=p.cron_timezone,
            active=p.active,
        )
        db.add(schedule)
        db.flush()
        _plan_next(db, schedule)
        schedule_id = schedule.id
    return _detail(db, actor, s, schedule_id, settings)


def update_schedule(db: Session, actor: Actor, p: ScheduleUpdate, settings: Settings) -> ScheduleDetail:
    s = _project(db, actor, p.id)
    row = _row(db, s, p.pipeline_schedule_id)
    if not policy.may_update_pipeline_schedule(actor, s, row.owner_id):
        raise Forbidden()
    _validate(p.cron, p.cron_timezone, p.description)
    ref = _full_ref(settings, s.project.id, p.ref) if p.ref is not None else None
    if ref is not None and not may_use_ref(db, actor, s, ref):
        raise Forbidden()
    with transaction(db):
        schedule = _model(db, s, row.id)
        if p.description is not None:
            schedule.description = p.description
        if ref is not None:
            schedule.ref = ref
        if p.cron is not None:
            schedule.cron = p.cron.strip()
        if p.cron_timezone is not None:
            schedule.cron_timezone = p.cron_timezone
        if p.active is not None:
            schedule.active = p.active
        schedule.updated_at = utcnow()
        _plan_next(db, schedule)
    return _detail(db, actor, s, row.id, settings)


def take_ownership(
    db: Session, actor: Actor, ident: str, schedule_id: int, settings: Settings
) -> tuple[ScheduleDetail, bool]:
    """The schedule, now the actor's; and whether that changed anything (GitLab answers 200
    when the actor owned it already, 201 otherwise)."""
    s = _project(db, actor, ident)
    row = _row(db, s, schedule_id)
    if not policy.may_admin_pipeline_schedule(actor, s, row.owner_id):
        raise Forbidden()
    changed = row.owner_id != actor.id
    if changed:
        with transaction(db):
            schedule = _model(db, s, row.id)
            schedule.owner_id = actor.id
            schedule.updated_at = utcnow()
    return _detail(db, actor, s, row.id, settings), changed


def delete_schedule(db: Session, actor: Actor, ident: str, schedule_id: int) -> None:
    s = _project(db, actor, ident)
    row = _row(db, s, schedule_id)
    if not policy.may_admin_pipeline_schedule(actor, s, row.owner_id):
        raise Forbidden()
    with transaction(db):
        db.delete(_model(db, s, row.id))


def play(db: Session, actor: Actor, ident: str, schedule_id: int) -> None:
    """Run the schedule now, as the actor, through the job queue; its next planned run stays."""
    s = _project(db, actor, ident)
    row = _row(db, s, schedule_id)
    if not policy.may(actor, Action.CREATE_PIPELINE, s) or not may_use_ref(db, actor, s, row.ref):
        raise Forbidden()
    with transaction(db):
        jobs.enqueue(db, RUN, {"schedule_id": row.id, "user_id": actor.id})


# ---------------------------------------------------------------------------- variables


def _variable_key_errors(key: str) -> None:
    if not key or len(key) > KEY_LIMIT or not ci_variables.KEY_FORMAT.fullmatch(key):
        raise ValidationFailed(
            {"key": ["can contain only letters, digits and '_'."]}
            if key and len(key) <= KEY_LIMIT
            else {"key": ["is too long (maximum is 255 characters)" if key else "can't be blank"]}
        )


def _variable_model(db: Session, schedule_id: int, key: str) -> PipelineScheduleVariable:
    found = db.scalars(
        select(PipelineScheduleVariable).where(
            PipelineScheduleVariable.schedule_id == schedule_id, PipelineScheduleVariable.key == key
        )
    ).first()
    if found is None:
        raise NotFound("Pipeline Schedule Variable")
    return found


def _shown(settings: Settings, v: PipelineScheduleVariable) -> Variable:
    return Variable(v.key, sealing.unseal(settings, v.value), v.variable_type, v.raw)


def _for_variables(
    db: Session,
    actor: Actor,
    ident: str,
    schedule_id: int,
    may: Callable[[Actor, ProjectSubject, int | None], bool] = policy.may_update_pipeline_schedule,
) -> ScheduleRow:
    """The schedule whose variables the actor touches: adding and changing them takes what
    updating the schedule does; reading and removing one, what administering it does."""
    s = _project(db, actor, ident)
    row = _row(db, s, schedule_id)
    if not may(actor, s, row.owner_id):
        raise Forbidden()
    return row


def get_variable(
    db: Session, actor: Actor, ident: str, schedule_id: int, key: str, settings: Settings
) -> Variable:
    row = _for_variables(db, actor, ident, schedule_id, policy.may_admin_pipeline_schedule)
    return _shown(settings, _variable_model(db, row.id, key))


def create_variable(db: Session, actor: Actor, p: ScheduleVariableCreate, settings: Settings) -> Variable:
    row = _for_variables(db, actor, p.id, p.pipeline_schedule_id)
    _variable_key_errors(p.key)
    with transaction(db):
        taken = db.scalars(
            select(PipelineScheduleVariable.id).where(
                PipelineScheduleVariable.schedule_id == row.id, PipelineScheduleVariable.key == p.key
            )
        ).first()
        if taken is not None:
            raise ValidationFailed({"key": ["(" + p.key + ") has already been taken"]})
        variable = PipelineScheduleVariable(
            schedule_id=row.id,
            key=p.key,
            value=sealing.seal(settings, p.value),
            variable_type=p.variable_type,
        )
        db.add(variable)
        db.flush()
        return Variable(p.key, p.value, p.variable_type, False)


def update_variable(db: Session, actor: Actor, p: ScheduleVariableUpdate, settings: Settings) -> Variable:
    row = _for_variables(db, actor, p.id, p.pipeline_schedule_id)
    with transaction(db):
        variable = _variable_model(db, row.id, p.key)
        if p.value is not None:
            variable.value = sealing.seal(settings, p.value)
        if p.variable_type is not None:
            variable.variable_type = p.variable_type
        db.flush()
        return _shown(settings, variable)


def delete_variable(
    db: Session, actor: Actor, ident: str, schedule_id: int, key: str, settings: Settings
) -> Variable:
    row = _for_variables(db, actor, ident, schedule_id, policy.may_admin_pipeline_schedule)
    with transaction(db):
        variable = _variable_model(db, row.id, key)
        shown = _shown(settings, variable)
        db.delete(variable)
    return shown


# ---------------------------------------------------------------------------- runs


def _as_actor(user: UserRow) -> Actor:
    return Actor(user=user, via="personal_access_token", scopes=None)


def _may_run(db: Session, user: UserRow | None, project_id: int) -> tuple[Actor, ProjectSubject] | None:
    """The user as whom a run creates its pipeline, if they still may create pipelines there."""
    if user is None or user.state != "active":
        return None
    actor = _as_actor(user)
    s = subjects.find_project(db, actor, str(project_id), rows=True)
    if s is None or not policy.may(actor, Action.CREATE_PIPELINE, s):
        return None
    return actor, s


def _variables_for_run(db: Session, settings: Settings, schedule_id: int) -> list[dict[str, str]]:
    return [
        {"key": v.key, "value": sealing.unseal(settings, v.value), "variable_type": v.variable_type}
        for v in finder.variables_of(db, schedule_id)
    ]


def _run(
    db: Session, settings: Settings, schedule: PipelineSchedule, runner: tuple[Actor, ProjectSubject]
) -> None:
    """One pipeline of the schedule. A run that cannot make one (the ref gone or protected
    from its user, no configuration) is logged and leaves the schedule as it is, as
    GitLab's does."""
    actor, s = runner
    project = db.get(Project, schedule.project_id)
    if project is None:
        return
    if not may_use_ref(db, actor, s, schedule.ref):
        log.info("schedule %s made no pipeline: %s", schedule.id, pipeline_creation.PROTECTED_REF)
        return
    try:
        with db.begin_nested():
            pipeline_creation.create(
                db,
                settings,
                project=project,
                ref=schedule.ref,
                source="schedule",
                actor=actor,
                variables=_variables_for_run(db, settings, schedule.id),
                schedule_id=schedule.id,
            )
    except KilnError as exc:
        log.info("schedule %s made no pipeline: %s", schedule.id, exc)


def _due(expected: str | None, schedule: PipelineSchedule) -> bool:
    """A planned run is still the schedule's: it is active and its next run is the one this
    job was queued for (a change since planned another)."""
    if not schedule.active or schedule.next_run_at is None or expected is None:
        return False
    planned = datetime.fromisoformat(expected)
    at = schedule.next_run_at if schedule.next_run_at.tzinfo else schedule.next_run_at.replace(tzinfo=UTC)
    return abs((at - planned).total_seconds()) < 1 and at <= utcnow() + timedelta(seconds=1)


@jobs.handler(RUN)
def _run_schedule(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """A schedule's time came (or a user pressed play: `user_id`, run as them, the plan
    untouched). A planned run makes its pipeline as the owner, then plans the next."""
    db = ctx.db
    schedule = db.get(PipelineSchedule, payload["schedule_id"], with_for_update=True)
    if schedule is None:
        return
    if "user_id" in payload:
        user = user_finder.row_by_id(db, int(payload["user_id"]))
        runner = _may_run(db, user, schedule.project_id)
        if runner is not None:
            _run(db, ctx.settings, schedule, runner)
        return
    if not _due(payload.get("next_run_at"), schedule):
        return
    owner = user_finder.row_by_id(db, schedule.owner_id) if schedule.owner_id is not None else None
    runner = _may_run(db, owner, schedule.project_id)
    if runner is None:
        schedule.active = False
        schedule.next_run_at = None
        return
    _run(db, ctx.settings, schedule, runner)
    _plan_next(db, schedule)
