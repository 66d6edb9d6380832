"""Runners: registration with a registration token (the instance's, a project's or a
group's) or by a signed-in user (`POST /user/runners`), the calls a runner makes with its
authentication token (verify, delete, reset), and their management by users (lists, detail,
update, removal, enabling on projects, registration token resets).

Authentication tokens are `glrt-` followed by a random part; only their digest is kept. A
token expires when the instance sets `runner_token_expiration_interval` (instance runners),
`group_runner_token_expiration_interval` or `project_runner_token_expiration_interval`
(seconds). Registration tokens are shown again later, so they are derived from a nonce under
the server key: the instance's nonce is kept among the application settings' values
(`runners_registration_token_nonce`), a group's on its namespace (made when first needed), a
project's on the project. `allow_runner_registration_token` off refuses every registration
token; `valid_runner_registrars` says whether project and group tokens register.

Interface for the other CI modules:
- `by_token(db, token) -> Runner | None`: the runner an authentication token names, paused or
  not; None for an unknown or expired token.
- `record_contact(db, runner, *, info, ip) -> None`: the runner asked for work now: its
  `contacted_at`, what it says of itself (`info`: name, version, revision, platform,
  architecture, executor) and its address, written at most once a minute unless something
  changed, in the caller's transaction (no commit).
- `instance_registration_token(db, settings)`, `group_registration_token(db, settings,
  group_id)`: the registration tokens, made when first asked for."""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pygit2
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth import server_secret
from kiln.auth.actor import Actor
from kiln.auth.tokens import digest, new_runners_nonce, new_secret, runners_token
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, Forbidden, Gone, NotFound, ValidationFailed
from kiln.models import Namespace, Project
from kiln.models.ci import (
    GROUP_TYPE,
    INSTANCE_TYPE,
    PROJECT_TYPE,
    Runner,
    RunnerNamespace,
    RunnerProject,
    RunnerTag,
)
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import runners as finder
from kiln.queries import users as user_finder
from kiln.queries.runners import RunnerGroupRow, RunnerJobRow, RunnerProjectRow, RunnerRow
from kiln.queries.users import UserRow
from kiln.schemas.runners import (
    GroupRunnerList,
    OwnedRunnerList,
    ProjectRunnerList,
    Registration,
    RunnerFilters,
    RunnerJobList,
    RunnerList,
    RunnerUpdate,
    UserRunnerCreate,
)
from kiln.services import instance_settings, project_creation, repositories, subjects

TOKEN_PREFIX = "glrt-"
# How much of a token is kept in clear, to tell tokens apart where GitLab shows a short one.
SHOWN_PREFIX = len(TOKEN_PREFIX) + 8
INSTANCE_NONCE = "runners_registration_token_nonce"
# GitLab's Ci::Runner validations.
MIN_TIMEOUT = 600
TIMEOUT_TOO_SHORT = "should be greater than or equal to 10 minutes"
TAGS_NEEDED = "can not be empty when runner is not allowed to pick untagged jobs"
MAX_TAGS = 50
TOO_MANY_TAGS = f"Too many tags specified. Please limit the number of tags to {MAX_TAGS}"
MAX_DESCRIPTION = 1024
NO_ACCESS = "No access granted"
INVALID_REGISTRATION_TOKEN = "invalid token supplied"
REGISTRATION_DISALLOWED = "runner registration disallowed"
MORE_THAN_ONE_PROJECT = "Runner associated with more than one project"
ONLY_PROJECT = "Only one project associated with the runner. Please remove the runner instead"
# A runner's contact is written at most this often, unless what it says of itself changed.
CONTACT_EVERY = timedelta(minutes=1)
# What `info` sets: the key a runner sends, the column, the column's length.
_INFO = (
    ("name", "name", 255),
    ("version", "version", 255),
    ("revision", "revision", 255),
    ("platform", "platform", 255),
    ("architecture", "architecture", 255),
    ("executor", "executor_type", 64),
)
_EXPIRY_SETTING = {
    INSTANCE_TYPE: "runner_token_expiration_interval",
    GROUP_TYPE: "group_runner_token_expiration_interval",
    PROJECT_TYPE: "project_runner_token_expiration_interval",
}


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime | None) -> datetime | None:
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


@dataclass(slots=True)
class Registered:
    """A runner and its authentication token, shown this once."""

    id: int
    token: str
    token_expires_at: datetime | None


@dataclass(slots=True)
class TokenResult:
    token: str
    token_expires_at: datetime | None


def _online_after() -> datetime:
    """Runners that asked for work after this are online."""
    return _now() - finder.ONLINE_WINDOW


@dataclass(slots=True)
class RunnerView:
    row: RunnerRow
    tags: list[str]
    projects: list[RunnerProjectRow]
    groups: list[RunnerGroupRow]
    # Whether the caller may change the runner (the maintenance note is theirs to read).
    manages: bool
    creator: UserRow | None = None
    online_after: datetime = field(default_factory=_online_after)


@dataclass(slots=True)
class RunnerPage:
    page: PageResult  # items: RunnerRow
    # The users who made runners of the page (POST /user/runners), by id.
    creators: dict[int, UserRow]
    online_after: datetime = field(default_factory=_online_after)


@dataclass(slots=True)
class RunnerJobs:
    page: PageResult  # items: RunnerJobRow
    users: dict[int, UserRow]
    # Each job's commit by (project id, sha); a commit the repository lacks is absent.
    commits: dict[tuple[int, str], pygit2.Commit]
    ip_address: str | None
    at: datetime = field(default_factory=_now)


@dataclass(slots=True)
class EnabledRunner:
    row: RunnerRow
    online_after: datetime = field(default_factory=_online_after)


# ----------------------------------------------------------------------------- the runner's token


def _new_token() -> tuple[str, str, str]:
    token = new_secret(TOKEN_PREFIX)
    return token, digest(token), token[:SHOWN_PREFIX]


def _expiry(db: Session, runner_type: str) -> datetime | None:
    interval = instance_settings.current(db).get(_EXPIRY_SETTING[runner_type])
    if not interval:
        return None
    return _now() + timedelta(seconds=int(interval))


def by_token(db: Session, token: str | None) -> Runner | None:
    """The runner an authentication token names (paused or not); None when the token is
    unknown or expired."""
    if not token:
        return None
    runner = db.scalars(select(Runner).where(Runner.token_digest == digest(token))).first()
    if runner is None:
        return None
    expires = _aware(runner.token_expires_at)
    if expires is not None and expires <= _now():
        return None
    return runner


def _info_values(info: Mapping[str, Any] | Any | None) -> dict[str, str]:
    if info is None:
        return {}
    if not isinstance(info, Mapping):
        info = info.model_dump(exclude_none=True)
    out: dict[str, str] = {}
    for key, column, length in _INFO:
        value = info.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            out[column] = str(value)[:length]
    return out


def record_contact(db: Session, runner: Runner, *, info: Mapping[str, Any] | None, ip: str | None) -> None:
    """The runner is in contact now (see the module's docstring); no commit."""
    at = _now()
    changes = {k: v for k, v in _info_values(info).items() if getattr(runner, k) != v}
    if ip and runner.ip_address != ip[:64]:
        changes["ip_address"] = ip[:64]
    last = _aware(runner.contacted_at)
    if not changes and last is not None and at - last < CONTACT_EVERY:
        return
    for name, value in changes.items():
        setattr(runner, name, value)
    runner.contacted_at = at


def _authenticated(db: Session, token: str | None) -> Runner:
    runner = by_token(db, token)
    if runner is None:
        raise Forbidden()
    return runner


def verify(db: Session, token: str | None) -> Registered:
    """POST /runners/verify: the token is good (200 with it) or not (403)."""
    runner = _authenticated(db, token)
    return Registered(runner.id, token or "", _aware(runner.token_expires_at))


def unregister(db: Session, token: str | None) -> None:
    """DELETE /runners: the runner removes itself."""
    with transaction(db):
        db.delete(_authenticated(db, token))


def unregister_manager(db: Session, token: str | None) -> None:
    """DELETE /runners/managers: one machine of a runner leaves; kiln keeps no machines apart
    from their runner, so only the token is checked."""
    _authenticated(db, token)


def reset_own_token(db: Session, token: str | None) -> TokenResult:
    """POST /runners/reset_authentication_token: a new token for the runner; the old one
    stops working."""
    with transaction(db):
        runner = _authenticated(db, token)
        return _reset(db, runner)


def _reset(db: Session, runner: Runner) -> TokenResult:
    token, token_digest, prefix = _new_token()
    runner.token_digest = token_digest
    runner.token_prefix = prefix
    runner.token_expires_at = _expiry(db, runner.runner_type)
    db.flush()
    return TokenResult(token, runner.token_expires_at)


# ----------------------------------------------------------------------------- registration tokens


def _derived(settings: Settings, nonce: str) -> str:
    return runners_token(server_secret.key(settings), nonce)


def instance_registration_token(db: Session, settings: Settings) -> str:
    """The instance's registration token, made when first asked for."""
    nonce = instance_settings.current(db).get(INSTANCE_NONCE)
    if not nonce:
        with transaction(db):
            row = instance_settings.row_for_update(db)
            nonce = (row.values or {}).get(INSTANCE_NONCE) if row is not None else None
            if not nonce:
                nonce = new_runners_nonce()
                instance_settings.write(db, row, {INSTANCE_NONCE: nonce})
    return _derived(settings, str(nonce))


def _new_registration_token(settings: Settings, owner: Project | Namespace) -> str:
    """A new registration token for a project or a group: its nonce and digest are written on
    the owner's row (the caller's transaction), the token itself nowhere."""
    nonce = new_runners_nonce()
    token = _derived(settings, nonce)
    owner.runners_token_nonce = nonce
    owner.runners_token_digest = digest(token)
    return token


def group_registration_token(db: Session, settings: Settings, group_id: int) -> str:
    """A group's registration token, made when first asked for."""
    group = db.get(Namespace, group_id)
    if group is None:
        raise NotFound("Group")
    if group.runners_token_nonce:
        return _derived(settings, group.runners_token_nonce)
    with transaction(db):
        group = db.scalars(select(Namespace).where(Namespace.id == group_id).with_for_update()).one()
        if group.runners_token_nonce:
            return _derived(settings, group.runners_token_nonce)
        return _new_registration_token(settings, group)


def reset_instance_registration_token(db: Session, actor: Actor, settings: Settings) -> TokenResult:
    policy.require(actor, Action.ADMIN_INSTANCE_RUNNERS)
    nonce = new_runners_nonce()
    with transaction(db):
        instance_settings.write(db, instance_settings.row_for_update(db), {INSTANCE_NONCE: nonce})
    return TokenResult(_derived(settings, nonce), None)


def _reset_registration_token(
    db: Session, settings: Settings, model: type[Project] | type[Namespace], owner_id: int
) -> TokenResult:
    with transaction(db):
        owner = db.get(model, owner_id)
        assert owner is not None
        token = _new_registration_token(settings, owner)
    return TokenResult(token, None)


def reset_project_registration_token(
    db: Session, actor: Actor, ident: str, settings: Settings
) -> TokenResult:
    s = subjects.project(db, actor, ident, Action.ADMIN_RUNNERS)
    return _reset_registration_token(db, settings, Project, s.project.id)


def reset_group_registration_token(db: Session, actor: Actor, ident: str, settings: Settings) -> TokenResult:
    s = subjects.group(db, actor, ident, Action.ADMIN_RUNNERS)
    return _reset_registration_token(db, settings, Namespace, s.group.id)


@dataclass(slots=True)
class _Owner:
    runner_type: str
    project_id: int | None = None
    group_id: int | None = None


def _registration_owner(db: Session, settings: Settings, token: str) -> _Owner | None:
    """Whose registration token this is; None for none. With registration tokens switched
    off, any token is 410 (GitLab tells "disallowed" apart from "invalid")."""
    current = instance_settings.current(db)
    if not token:
        return None
    if not current.get("allow_runner_registration_token", True):
        raise Gone(REGISTRATION_DISALLOWED)
    registrars = current.get("valid_runner_registrars") or []
    nonce = current.get(INSTANCE_NONCE)
    if nonce and hmac.compare_digest(token.encode(), _derived(settings, str(nonce)).encode()):
        return _Owner(INSTANCE_TYPE)
    if "project" in registrars:
        project = project_creation.project_by_runners_token(db, token)
        if project is not None:
            return _Owner(PROJECT_TYPE, project_id=project.id)
    if "group" in registrars:
        group_id = finder.group_id_by_token_digest(db, digest(token))
        if group_id is not None:
            return _Owner(GROUP_TYPE, group_id=group_id)
    return None


# ----------------------------------------------------------------------------- making runners


def _validate(
    maximum_timeout: int | None,
    run_untagged: bool,
    tags: Sequence[str],
    *,
    description: str | None,
    tags_changed: bool = True,
) -> None:
    """GitLab's Ci::Runner validations, in its order; `description` and `tags_changed` say
    what is being set (a runner already holding more tags keeps them)."""
    errors: dict[str, list[str]] = {}
    if not run_untagged and not tags:
        errors["tags_list"] = [TAGS_NEEDED]
    elif tags_changed and len(tags) > MAX_TAGS:
        errors["tags_list"] = [TOO_MANY_TAGS]
    if description is not None and len(description) > MAX_DESCRIPTION:
        errors["description"] = [f"is too long (maximum is {MAX_DESCRIPTION} characters)"]
    if maximum_timeout is not None and maximum_timeout < MIN_TIMEOUT:
        errors["maximum_timeout"] = [TIMEOUT_TOO_SHORT]
    if errors:
        raise ValidationFailed(errors)


def _active(p: Registration | UserRunnerCreate | RunnerUpdate) -> bool | None:
    if p.paused is not None:
        return not p.paused
    return p.active


def _make(
    db: Session,
    owner: _Owner,
    p: Registration | UserRunnerCreate,
    *,
    registration_type: str,
    creator_id: int | None,
    info: Mapping[str, str],
    ip: str | None,
    note: str | None,
) -> Registered:
    tags = list(p.tag_list or [])
    run_untagged = p.run_untagged if p.run_untagged is not None else True
    _validate(p.maximum_timeout, run_untagged, tags, description=p.description)
    token, token_digest, prefix = _new_token()
    active = _active(p)
    with transaction(db):
        runner = Runner(
            runner_type=owner.runner_type,
            token_digest=token_digest,
            token_prefix=prefix,
            token_expires_at=_expiry(db, owner.runner_type),
            registration_type=registration_type,
            creator_id=creator_id,
            description=p.description or "",
            maintenance_note=note,
            active=True if active is None else active,
            locked=bool(p.locked),
            run_untagged=run_untagged,
            access_level=p.access_level or "not_protected",
            maximum_timeout=p.maximum_timeout,
            ip_address=ip[:64] if ip else None,
            **info,
        )
        db.add(runner)
        db.flush()
        db.add_all(RunnerTag(runner_id=runner.id, name=name) for name in tags)
        if owner.project_id is not None:
            db.add(RunnerProject(runner_id=runner.id, project_id=owner.project_id))
        if owner.group_id is not None:
            db.add(RunnerNamespace(runner_id=runner.id, namespace_id=owner.group_id))
        db.flush()
        return Registered(runner.id, token, _aware(runner.token_expires_at))


def register(db: Session, p: Registration, settings: Settings, ip: str | None) -> Registered:
    """POST /runners: a runner registering with a registration token; 403 for any other
    token (410 while registration tokens are off), with nothing written."""
    owner = _registration_owner(db, settings, p.token)
    if owner is None:
        raise Forbidden(INVALID_REGISTRATION_TOKEN)
    note = p.maintenance_note if p.maintenance_note is not None else p.maintainer_note
    return _make(
        db,
        owner,
        p,
        registration_type="registration_token",
        creator_id=None,
        info=_info_values(p.info),
        ip=ip,
        note=note,
    )


def create_for_user(db: Session, actor: Actor, p: UserRunnerCreate) -> Registered:
    """POST /user/runners: an instance runner (administrators), a group runner (the group's
    Owners) or a project runner (the project's Maintainers)."""
    if p.runner_type == INSTANCE_TYPE:
        policy.require(actor, Action.ADMIN_INSTANCE_RUNNERS)
        owner = _Owner(INSTANCE_TYPE)
    elif p.runner_type == GROUP_TYPE:
        g = subjects.group(db, actor, str(p.group_id), Action.ADMIN_RUNNERS, rows=True)
        owner = _Owner(GROUP_TYPE, group_id=g.group.id)
    else:
        s = subjects.project(db, actor, str(p.project_id), Action.ADMIN_RUNNERS, rows=True)
        owner = _Owner(PROJECT_TYPE, project_id=s.project.id)
    return _make(
        db,
        owner,
        p,
        registration_type="authenticated_user",
        creator_id=actor.user.id,
        info={},
        ip=None,
        note=p.maintenance_note,
    )


# ----------------------------------------------------------------------------- one runner for a user


@dataclass(slots=True)
class _Seen:
    row: RunnerRow
    projects: list[RunnerProjectRow]
    groups: list[RunnerGroupRow]
    manages: bool


def _seen(db: Session, actor: Actor, runner_id: int) -> _Seen:
    """The runner if the actor may see it (404 otherwise), and whether they may change it."""
    row = finder.row_by_id(db, runner_id)
    if row is None:
        raise NotFound("Runner")
    projects = finder.projects_of(db, [row.id])[row.id]
    groups = finder.groups_of(db, [row.id])[row.id]
    project_level = group_level = None
    if not policy.is_admin(actor) and row.runner_type != INSTANCE_TYPE:
        project_level, group_level = finder.standing(
            db, actor.user.id, [p.id for p in projects], [g.id for g in groups]
        )
    if not policy.may_read_runner(actor, row.runner_type, project_level, group_level):
        raise NotFound("Runner")
    manages = policy.may_admin_runner(actor, row.runner_type, project_level, group_level)
    return _Seen(row, projects, groups, manages)


def _managed(db: Session, actor: Actor, runner_id: int) -> _Seen:
    seen = _seen(db, actor, runner_id)
    if not seen.manages:
        raise Forbidden(NO_ACCESS)
    return seen


def _view(db: Session, actor: Actor, seen: _Seen) -> RunnerView:
    """What the detail shows: all projects and groups to administrators, to others those
    they belong to (GitLab's authorized projects and groups)."""
    projects, groups = seen.projects, seen.groups
    if not policy.is_admin(actor) and (projects or groups):
        mine = finder.reachable_of(db, actor.user.id, [p.id for p in projects], [g.id for g in groups])
        projects = [p for p in projects if p.id in mine[0]]
        groups = [g for g in groups if g.id in mine[1]]
    tags = finder.tags_of(db, [seen.row.id])[seen.row.id]
    creators = _creators(db, [seen.row])
    return RunnerView(seen.row, tags, projects, groups, seen.manages, creators.get(seen.row.creator_id))


def _creators(db: Session, rows: Sequence[RunnerRow]) -> dict[int, UserRow]:
    """The users who made these runners, in one statement (none when no runner has one)."""
    wanted = sorted({r.creator_id for r in rows if r.creator_id is not None})
    return {u.id: u for u in user_finder.rows_by_ids(db, wanted)} if wanted else {}


def get_runner(db: Session, actor: Actor, runner_id: int) -> RunnerView:
    return _view(db, actor, _seen(db, actor, runner_id))


def update_runner(db: Session, actor: Actor, p: RunnerUpdate) -> RunnerView:
    """PUT /runners/:id: every field given is set; `tag_list` is the whole new set."""
    seen = _managed(db, actor, p.id)
    given = p.given()
    with transaction(db):
        runner = db.get(Runner, p.id, with_for_update=True)
        if runner is None:
            raise NotFound("Runner")
        old_tags = finder.tags_of(db, [p.id])[p.id]
        tags = list(p.tag_list or []) if "tag_list" in given else old_tags
        run_untagged = p.run_untagged if p.run_untagged is not None else runner.run_untagged
        timeout = p.maximum_timeout if "maximum_timeout" in given else runner.maximum_timeout
        _validate(
            timeout,
            run_untagged,
            tags,
            description=p.description,
            tags_changed="tag_list" in given and tags != old_tags,
        )
        active = _active(p)
        if active is not None:
            runner.active = active
        for name in ("description", "locked", "access_level", "maintenance_note"):
            value = getattr(p, name)
            if value is not None:
                setattr(runner, name, value)
        runner.run_untagged = run_untagged
        runner.maximum_timeout = timeout
        if tags != old_tags:
            db.execute(delete(RunnerTag).where(RunnerTag.runner_id == p.id))
            db.flush()
            db.add_all(RunnerTag(runner_id=p.id, name=name) for name in tags)
        db.flush()
    row = finder.row_by_id(db, p.id)
    assert row is not None
    return _view(db, actor, _Seen(row, seen.projects, seen.groups, seen.manages))


def delete_runner(db: Session, actor: Actor, runner_id: int) -> None:
    """DELETE /runners/:id; a project runner of several projects is removed by an
    administrator only (others disable it in their project)."""
    seen = _seen(db, actor, runner_id)
    if not policy.may_delete_runner(actor, len(seen.projects), seen.manages):
        raise Forbidden(MORE_THAN_ONE_PROJECT if len(seen.projects) > 1 else NO_ACCESS)
    with transaction(db):
        runner = db.get(Runner, runner_id)
        if runner is not None:
            db.delete(runner)


def reset_authentication_token(db: Session, actor: Actor, runner_id: int) -> TokenResult:
    _managed(db, actor, runner_id)
    with transaction(db):
        runner = db.get(Runner, runner_id, with_for_update=True)
        if runner is None:
            raise NotFound("Runner")
        return _reset(db, runner)


def list_jobs(db: Session, actor: Actor, q: RunnerJobList, page: Page, settings: Settings) -> RunnerJobs:
    """The jobs a runner ran, in the projects where the caller is at least a Reporter
    (administrators: all). Its owners list them; an instance runner's are administrators'."""
    seen = _managed(db, actor, q.id)
    result = finder.page_of_jobs(
        db,
        q.id,
        page,
        status=q.status,
        ascending=q.sort == "asc",
        user_id=None if policy.is_admin(actor) else actor.user.id,
    )
    jobs: list[RunnerJobRow] = result.items
    user_ids = sorted({j.user_id for j in jobs if j.user_id is not None})
    users = {u.id: u for u in user_finder.rows_by_ids(db, user_ids)} if user_ids else {}
    return RunnerJobs(result, users, _commits(settings, jobs), seen.row.ip_address)


def _commits(settings: Settings, jobs: Sequence[RunnerJobRow]) -> dict[tuple[int, str], pygit2.Commit]:
    """Each job's commit, read from its project's repository (no statement); a commit the
    repository no longer holds is left out."""
    store = repositories.store(settings)
    out: dict[tuple[int, str], pygit2.Commit] = {}
    for job in jobs:
        key = (job.project_id, job.sha)
        if key in out:
            continue
        repo = store.find(job.project_id)
        if repo is None:
            continue
        try:
            commit = repo.get(job.sha)
        except (ValueError, KeyError):
            commit = None
        if commit is None or commit.type_str != "commit":
            continue
        out[key] = commit
    return out


# ----------------------------------------------------------------------------- lists


def _conditions(q: RunnerFilters, scope: str | None) -> list[str]:
    """The scope and status names a list's rows must all hold (each list's schema says which
    scopes it takes, as GitLab's parameters do)."""
    out: list[str] = []
    if scope is not None:
        out.append(scope)
    if q.type is not None:
        out.append(q.type)
    if q.status is not None:
        out.append(q.status)
    if q.paused is not None:
        out.append("paused" if q.paused else "active")
    return out


def _page(db: Session, q: RunnerFilters, page: Page, conditions: list[str], **scope: Any) -> RunnerPage:
    result = finder.page_of_runners(
        db, page, conditions=conditions, tags=q.tag_list or None, version_prefix=q.version_prefix, **scope
    )
    return RunnerPage(result, _creators(db, result.items))


def list_owned(db: Session, actor: Actor, q: OwnedRunnerList, page: Page) -> RunnerPage:
    """GET /runners: the runners the caller owns through their memberships, administrators
    included (as GitLab's ci_owned_runners; /runners/all has every runner)."""
    return _page(db, q, page, _conditions(q, q.scope), kind="owned", user_id=actor.user.id)


def list_all(db: Session, actor: Actor, q: RunnerList, page: Page) -> RunnerPage:
    policy.require(actor, Action.ADMIN_INSTANCE_RUNNERS)
    return _page(db, q, page, _conditions(q, q.scope), kind="all")


def list_for_project(db: Session, actor: Actor, q: ProjectRunnerList, page: Page) -> RunnerPage:
    """GET /projects/:id/runners: the project's own runners, its groups' (when group runners
    are on) and the instance's (when shared runners are on and there is one)."""
    s = subjects.project(db, actor, q.id, Action.READ_RUNNERS, rows=True)
    conditions = _conditions(q, q.scope)
    groups = bool(s.project.group_runners_enabled) and s.namespace.is_group
    return _page(
        db,
        q,
        page,
        conditions,
        kind="project",
        project_id=s.project.id,
        group_ids=s.namespace.ancestor_ids if groups else [],
        groups=groups,
        shared=bool(s.project.shared_runners_enabled),
    )


def list_for_group(db: Session, actor: Actor, q: GroupRunnerList, page: Page) -> RunnerPage:
    """GET /groups/:id/runners: the runners of the group and its ancestors, and the
    instance's."""
    s = subjects.group(db, actor, q.id, Action.READ_RUNNERS, rows=True)
    return _page(
        db,
        q,
        page,
        _conditions(q, None),
        kind="group",
        group_ids=s.group.ancestor_ids,
        groups=True,
        shared=True,
    )


# ----------------------------------------------------------------------------- project runners


def enable(db: Session, actor: Actor, ident: str, runner_id: int) -> EnabledRunner:
    """POST /projects/:id/runners: a project runner the caller manages elsewhere also serves
    this project. Group runners never; locked runners only by administrators."""
    s = subjects.project(db, actor, ident, Action.ADMIN_RUNNERS, rows=True)
    seen = _seen(db, actor, runner_id)
    row = seen.row
    if row.runner_type == GROUP_TYPE:
        raise Forbidden("Runner is a group runner")
    if not policy.may_enable_runner(actor, row.locked, seen.manages):
        raise Forbidden("Runner is locked" if row.locked else NO_ACCESS)
    if row.runner_type != PROJECT_TYPE:
        raise BadRequest("Runner is not a project runner")
    if any(p.id == s.project.id for p in seen.projects):
        raise BadRequest("Runner has already been taken")
    with transaction(db):
        db.add(RunnerProject(runner_id=row.id, project_id=s.project.id))
    return EnabledRunner(row)


def disable(db: Session, actor: Actor, ident: str, runner_id: int) -> None:
    """DELETE /projects/:id/runners/:runner_id: the runner stops serving the project, unless
    it is its only project (the runner is removed instead)."""
    s = subjects.project(db, actor, ident, Action.ADMIN_RUNNERS, rows=True)
    with transaction(db):
        links = list(db.scalars(select(RunnerProject).where(RunnerProject.runner_id == runner_id)))
        mine = next((link for link in links if link.project_id == s.project.id), None)
        if mine is None:
            raise NotFound("Runner")
        if len(links) == 1:
            raise Forbidden(ONLY_PROJECT)
        db.delete(mine)
