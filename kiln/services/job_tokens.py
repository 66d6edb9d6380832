"""CI job tokens (CI_JOB_TOKEN): the credential a runner is handed with a job, good while the
job runs, for the job's own calls (trace, state, artifacts) and, as the job's user, for what
GitLab lets a job do in its project (clone it, fetch other jobs' artifacts).

A token is derived under the server key from the job's id and the moment it started, so the
server can still tell a job's own token after the job ended (a canceled job's runner is told
so, with 200, rather than refused); while the job runs it is found by its digest
(CiJob.token_digest, cleared by pipeline_processing when the job ends)."""

from __future__ import annotations

import base64
import hmac
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.auth import server_secret
from kiln.auth.actor import Actor
from kiln.auth.credentials import refusal
from kiln.auth.tokens import derived_mac, digest
from kiln.config import Settings
from kiln.models.ci import CANCELING, RUNNING, CiJob
from kiln.queries import users as user_queries

# GitLab's prefix for CI job tokens.
PREFIX = "glcbt-"
# What a job token reaches: the one project, named in the actor's scopes so that policy can
# keep it there (kiln.policy.job_token_project).
PROJECT_SCOPE = "ci_job_project:"
_PURPOSE = "kiln ci job token"


def derive(settings: Settings, job_id: int, started_at: datetime) -> str:
    """The token of the job that started at `started_at`: unguessable without the server key,
    and another one each time a job (or its retry, a new job) starts."""
    moment = started_at.astimezone(UTC).strftime("%Y%m%d%H%M%S%f")
    mac = derived_mac(server_secret.key(settings), _PURPOSE, f"{job_id}:{moment}")
    return PREFIX + base64.urlsafe_b64encode(mac).decode("ascii").rstrip("=")


def owns(settings: Settings, job: CiJob, token: str | None) -> bool:
    """Whether `token` is `job`'s own, whatever the job's status now."""
    if not token or job.started_at is None:
        return False
    if job.token_digest is not None and hmac.compare_digest(job.token_digest, digest(token)):
        return True
    return hmac.compare_digest(derive(settings, job.id, job.started_at), token)


def running_job(db: Session, token: str | None) -> CiJob | None:
    """The running job whose token this is; None for any other token."""
    if not token or not token.isascii():
        return None
    job = db.scalar(select(CiJob).where(CiJob.token_digest == digest(token)))
    if job is None or job.status not in (RUNNING, CANCELING):
        return None
    return job


def resolve(db: Session, token: str) -> Actor | None:
    """The runtime's job_token_resolver: a running job's token acts as the job's user (a user
    who may no longer sign in gets nothing), in the job's project only, with no admin powers
    and no token scopes beyond that."""
    job = running_job(db, token)
    if job is None or job.user_id is None:
        return None
    user = user_queries.row_by_id(db, job.user_id)
    if user is None or refusal(user, _NO_SETTINGS, None) is not None:
        return None
    return Actor(
        user=user,
        via="job_token",
        scopes=frozenset({f"{PROJECT_SCOPE}{job.project_id}"}),
        token_id=job.id,
        # A job token never carries admin powers: admin mode wants a scope it lacks.
        admin_mode=True,
    )


def project_of(actor: Actor | None) -> int | None:
    """The project a job token's actor is kept to (None: not a job token)."""
    if actor is None or actor.via != "job_token" or not actor.scopes:
        return None
    for scope in actor.scopes:
        if scope.startswith(PROJECT_SCOPE):
            return int(scope[len(PROJECT_SCOPE) :])
    return None


class _Unused:
    """`refusal` reads settings only for a deactivated user's message, which goes unused."""

    external_url = ""


_NO_SETTINGS: Settings = _Unused()  # type: ignore[assignment]
