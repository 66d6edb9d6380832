"""Trigger tokens and the pipelines they start. A token is derived from its row's nonce under
the server key (shown again, whole, to its owner; its first characters to other
Maintainers) and found by its digest; a request to `/trigger/pipeline` needs no user: the
token names the project's pipeline to start and the user it runs as (its owner). A CI job
token in its place starts a pipeline as the job's user, with source `pipeline`.

Listing, reading, creating and deleting tokens take a Maintainer (GitLab's admin_build and
manage_trigger); changing one takes its owner (admin_trigger)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth import server_secret
from kiln.auth.actor import Actor
from kiln.auth.credentials import JobTokenResolver
from kiln.auth.tokens import derived_mac, digest
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, NotFound, ParamError
from kiln.models import Project
from kiln.models.base import utcnow
from kiln.models.ci import PipelineTrigger
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import pipeline_triggers as finder
from kiln.queries import pipelines as pipeline_reads
from kiln.queries import users as user_finder
from kiln.queries.pipeline_triggers import TriggerRow
from kiln.queries.pipelines import PipelineRow
from kiln.queries.users import UserRow
from kiln.services import pipeline_creation, subjects
from kiln.services.pipeline_schedules import may_use_ref

PREFIX = "glptt-"
SHORT = 4
BAD_VARIABLES = "variables needs to be a map of key-valued strings"


@dataclass(slots=True)
class ShownTrigger:
    row: TriggerRow
    token: str
    owner: UserRow | None


@dataclass(slots=True)
class Triggers:
    page: PageResult
    shown: list[ShownTrigger]


@dataclass(slots=True)
class Triggered:
    pipeline: PipelineRow
    user: UserRow | None
    coverage: float | None


def trigger_token(key: bytes, nonce: str) -> str:
    """A trigger token in GitLab's form (`glptt-` and 40 hex digits), derived from the
    trigger's nonce under the server key."""
    return PREFIX + derived_mac(key, "trigger_token", nonce).hex()[:40]


def short_token(token: str) -> str:
    """What others than the owner see of a token: its first characters after the prefix."""
    return token.removeprefix(PREFIX)[:SHORT]


def _shown(
    db: Session, settings: Settings, actor: Actor, s: ProjectSubject, rows: list[TriggerRow]
) -> list[ShownTrigger]:
    key = server_secret.key(settings)
    owners = {u.id: u for u in user_finder.rows_by_ids(db, sorted({r.owner_id for r in rows if r.owner_id}))}
    out = []
    for r in rows:
        token = trigger_token(key, r.token_nonce)
        whole = policy.may_admin_trigger(actor, s, r.owner_id)
        out.append(ShownTrigger(r, token if whole else short_token(token), owners.get(r.owner_id)))
    return out


def _project(db: Session, actor: Actor, ident: str) -> ProjectSubject:
    return subjects.project(db, actor, ident, Action.ADMIN_TRIGGERS, rows=True)


def _row(db: Session, s: ProjectSubject, trigger_id: int) -> TriggerRow:
    row = finder.trigger_of(db, s.project.id, trigger_id)
    if row is None:
        raise NotFound("Trigger")
    return row


def _model(db: Session, s: ProjectSubject, trigger_id: int) -> PipelineTrigger:
    found = db.scalars(
        select(PipelineTrigger).where(
            PipelineTrigger.id == trigger_id, PipelineTrigger.project_id == s.project.id
        )
    ).first()
    if found is None:
        raise NotFound("Trigger")
    return found


# ---------------------------------------------------------------------------- tokens


def list_triggers(db: Session, actor: Actor, ident: str, page: Page, settings: Settings) -> Triggers:
    s = _project(db, actor, ident)
    result = finder.page_of_project(db, s.project.id, page)
    return Triggers(result, _shown(db, settings, actor, s, result.items))


def get_trigger(db: Session, actor: Actor, ident: str, trigger_id: int, settings: Settings) -> ShownTrigger:
    s = _project(db, actor, ident)
    return _shown(db, settings, actor, s, [_row(db, s, trigger_id)])[0]


def create_trigger(
    db: Session, actor: Actor, ident: str, description: str, settings: Settings
) -> ShownTrigger:
    s = _project(db, actor, ident)
    key = server_secret.key(settings)
    nonce = secrets.token_urlsafe(24)
    with transaction(db):
        row = PipelineTrigger(
            project_id=s.project.id,
            owner_id=actor.id,
            description=description,
            token_nonce=nonce,
            token_digest=digest(trigger_token(key, nonce)),
        )
        db.add(row)
        db.flush()
        trigger_id = row.id
    return get_trigger(db, actor, ident, trigger_id, settings)


def update_trigger(
    db: Session, actor: Actor, ident: str, trigger_id: int, description: str | None, settings: Settings
) -> ShownTrigger:
    s = _project(db, actor, ident)
    row = _row(db, s, trigger_id)
    if not policy.may_admin_trigger(actor, s, row.owner_id):
        raise Forbidden()
    if description is not None:
        with transaction(db):
            trigger = _model(db, s, trigger_id)
            trigger.description = description
            trigger.updated_at = utcnow()
    return get_trigger(db, actor, ident, trigger_id, settings)


def delete_trigger(db: Session, actor: Actor, ident: str, trigger_id: int) -> None:
    s = _project(db, actor, ident)
    with transaction(db):
        db.delete(_model(db, s, trigger_id))


# ---------------------------------------------------------------------------- pipelines


def _variables(raw: Any) -> list[dict[str, str]]:
    """A hash of strings (or a JSON text of one), as GitLab takes `variables`."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise BadRequest(BAD_VARIABLES, raw=True) from None
    if not isinstance(raw, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
    ):
        raise BadRequest(BAD_VARIABLES, raw=True)
    return [{"key": k, "value": v, "variable_type": "env_var"} for k, v in raw.items()]


def _as_actor(user: UserRow) -> Actor:
    return Actor(user=user, via="personal_access_token", scopes=None)


def _trigger_for(db: Session, project_id: int, token: str) -> PipelineTrigger | None:
    found = db.scalars(
        select(PipelineTrigger).where(
            PipelineTrigger.token_digest == digest(token), PipelineTrigger.project_id == project_id
        )
    ).first()
    if found is None or (found.expires_at is not None and found.expires_at <= utcnow()):
        return None
    return found


def trigger_pipeline(
    db: Session,
    settings: Settings,
    ident: str,
    token: str,
    ref: str,
    variables: Any,
    job_tokens: JobTokenResolver | None,
) -> Triggered:
    """A pipeline for `ref`, started by a trigger token (source `trigger`, as the token's
    owner) or a CI job token (source `pipeline`, as the job's user). 404 for a token that
    names nothing here; 403 when its user may not create pipelines in the project."""
    wanted = _variables(variables)
    if not ref:
        raise ParamError("ref is empty")
    project_found = subjects.find_project(db, None, ident, rows=True)
    if project_found is None:
        raise NotFound()
    project_id = project_found.project.id
    trigger = _trigger_for(db, project_id, token)
    if trigger is not None:
        owner = user_finder.row_by_id(db, trigger.owner_id) if trigger.owner_id is not None else None
        actor = _as_actor(owner) if owner is not None else None
        source = "trigger"
    else:
        job_actor = job_tokens(db, token) if job_tokens is not None else None
        if job_actor is None:
            raise NotFound()
        # The job's user, with their own rights on this project (a job token alone reaches
        # only its job's project).
        actor = _as_actor(job_actor.user)
        source = "pipeline"
    if actor is None or actor.user.state != "active":
        raise Forbidden()
    s = subjects.find_project(db, actor, str(project_id), rows=True)
    if s is None or not policy.may(actor, Action.CREATE_PIPELINE, s):
        raise Forbidden()
    if not may_use_ref(db, actor, s, ref):
        raise pipeline_creation.Refused(pipeline_creation.PROTECTED_REF)
    with transaction(db):
        if trigger is not None:
            trigger.last_used = utcnow()
        project = db.get(Project, project_id)
        assert project is not None
        pipeline = pipeline_creation.create(
            db,
            settings,
            project=project,
            ref=ref,
            source=source,
            actor=actor,
            variables=wanted,
            trigger_id=trigger.id if trigger is not None else None,
        )
        db.flush()
        pipeline_id = pipeline.id
    row = pipeline_reads.row_of(db, project_id, pipeline_id)
    assert row is not None
    return Triggered(row, actor.user, pipeline_reads.coverage_of(db, pipeline_id))
