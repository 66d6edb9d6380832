"""Who may clone, fetch and push over git's smart HTTP, and what a push changes in kiln.

GitLab's rules (git_http_client_controller.rb, git_access.rb, checks/branch_check.rb):
credentials come as HTTP Basic; without them only downloads of public code go through and
everything else is challenged with 401, so git asks for credentials and retries. Errors are
plain text because git shows such bodies to its user.

Two instance settings apply (Gitlab::Auth.find_for_git_client, GitAccess#check_protocol!):
with `password_authentication_enabled_for_git` off a password is not even checked (tokens as
the password still work) and a caller without a valid token is denied as a wrong password
is; with `enabled_git_access_protocol` "ssh" every clone, fetch and push over HTTP is refused
with 403, except a CI job's own (its job token).

The git processes themselves start here too (advertise, upload_pack, receive_pack): routes
stream what these return and never run git."""

from __future__ import annotations

import asyncio
import base64
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.auth.credentials import Credentials, JobTokenResolver, authenticate, require_usable_for_git
from kiln.auth.tokens import API, READ_API, READ_REPOSITORY, WRITE_REPOSITORY
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden, InvalidToken, NotFound, Unauthorized
from kiln.git import names, transport
from kiln.git.pre_receive import Rules
from kiln.git.transport import RECEIVE_PACK, UPLOAD_PACK, GitProcess, PushRequest, ReceiveHook, RefCommand
from kiln.models import Project
from kiln.policy import Action, ProjectSubject
from kiln.services import branches, instance_settings, repositories, subjects, tags
from kiln.services.sessions import password_owner

# What routes and the ASGI front door need to know of git's smart HTTP protocol.
SERVICES = transport.SERVICES
MalformedRequest = transport.MalformedRequest
content_type = transport.content_type
inflate = transport.inflate

# Runs a blocking call off the event loop (the caller's thread pool).
Runner = Callable[..., Awaitable[Any]]
log = logging.getLogger(__name__)
# Pushes still being recorded after their client went away.
_finishing: set[asyncio.Task[None]] = set()

ACCESS_DENIED = (
    "HTTP Basic: Access denied. If a password was provided for Git authentication, the password was "
    "incorrect or you're required to use a token instead of a password. If a token was provided, it "
    "was either incorrect, expired, or improperly scoped."
)
HTTP_NOT_ALLOWED = "Git access over HTTP is not allowed"
PROJECT_NOT_FOUND = (
    "The project you were looking for could not be found or you don't have permission to view it."
)
NO_REPOSITORY = "A repository for this project does not exist yet."
COMMAND_NOT_ALLOWED = "The command you're trying to execute is not allowed."
DOWNLOAD_REFUSED_TOKEN = "You are not allowed to download code."
UPLOAD_REFUSED_TOKEN = "You are not allowed to upload code."
DOWNLOAD_REFUSED = "You are not allowed to download code from this project."
ARCHIVED = "You can't push code to an archived project."
PUSH_REFUSED = "You are not allowed to push code to this project."
# Per-ref refusals (checks/branch_check.rb, checks/tag_check.rb).
DELETE_DEFAULT = "The default branch of a project cannot be deleted."
INVALID_BRANCH = "You cannot create a branch with an invalid name."
FORCE_PROTECTED = "You are not allowed to force push code to a protected branch on this project."
DELETE_PROTECTED = (
    "You are not allowed to delete protected branches from this project. "
    "Only a project maintainer or owner can delete a protected branch."
)
DELETE_PROTECTED_VIA_GIT = "You can only delete protected branches using the web interface."
PUSH_PROTECTED = "You are not allowed to push code to protected branches on this project."
CREATE_PROTECTED = "You are not allowed to create protected branches on this project."
CHANGE_TAG = "You are not allowed to change existing tags on this project."
# Refs kiln keeps itself (merge request heads and merges, kept commits, pipelines): readable by
# fetch, never written by a push (GitLab hides them from receive-pack; git's own words).
KEPT_REF_PREFIXES = ("refs/merge-requests/", "refs/keep-around/", "refs/pipelines/", "refs/environments/")
HIDDEN_REF = "deny updating a hidden ref"
# What kiln's pre-receive hook refuses once the objects are there (kiln.git.pre_receive).
PATH_REFUSED = "You cannot push {path}: {reason}."
NOT_A_COMMIT = "You can only push commits to a branch."
TREE_REFUSED = "You cannot push commit {commit}: its tree holds more than {limit} files."
CHECK_FAILED = "The push could not be checked. Please try again."
# The prefix GitLab's hooks put before their messages; clients match on it.
MESSAGE_PREFIX = "GitLab: "

DOWNLOAD_SCOPES = frozenset({API, READ_API, READ_REPOSITORY, WRITE_REPOSITORY})
PUSH_SCOPES = frozenset({API, WRITE_REPOSITORY})
JOB_TOKEN_USER = "gitlab-ci-token"
_PATH = re.compile(
    r"^/*(?P<project>[^/].*?)(?:\.git)?/(?P<action>info/refs|git-upload-pack|git-receive-pack)$"
)


@dataclass(slots=True, frozen=True)
class GitRoute:
    project: str
    # info/refs, git-upload-pack or git-receive-pack
    action: str


@dataclass(slots=True)
class GitAccess:
    """A caller cleared for one service on one project's repository."""

    actor: Actor | None
    subject: ProjectSubject  # row records: a push's bookkeeping loads the model it changes
    repo_path: Path
    service: str


@dataclass(slots=True)
class PushCheck:
    """A push judged before git runs: refused with a message, or allowed, with the hook that
    judges what only the objects tell (its paths and their number, its non-fast-forward
    updates)."""

    refused: str | None
    hook: ReceiveHook | None
    had_branches: bool
    before: dict[str, str | None]


def route(path: str) -> GitRoute | None:
    """`<full path>[.git]/info/refs|git-upload-pack|git-receive-pack`, else no git route."""
    match = _PATH.match(path)
    if match is None or "/" not in match.group("project"):
        return None
    return GitRoute(match.group("project"), match.group("action"))


def open_repository(
    db: Session,
    settings: Settings,
    *,
    authorization: str | None,
    project_path: str,
    service: str | None,
    job_token_resolver: JobTokenResolver | None = None,
) -> GitAccess:
    """The caller and repository for `service`; Unauthorized (challenge), Forbidden or
    NotFound with git's plain-text messages otherwise."""
    credentials = basic_credentials(authorization)
    values = instance_settings.current(db)
    actor = None
    if credentials is not None:
        passwords = bool(values["password_authentication_enabled_for_git"])
        actor = authenticate_basic(db, settings, *credentials, job_token_resolver, passwords=passwords)
    if actor is None:
        return _anonymous(db, settings, project_path, service, values)
    if actor.via != "job_token":
        _check_protocol(values)
    _check_abilities(actor, service)
    if service not in transport.SERVICES:
        raise Forbidden(message=COMMAND_NOT_ALLOWED)
    try:
        s = subjects.project(db, actor, project_path, rows=True)
    except NotFound:
        raise NotFound(message=PROJECT_NOT_FOUND) from None
    return _cleared(settings, actor, s, service)


def basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    if not authorization or authorization[:6].lower() != "basic ":
        return None
    try:
        decoded = base64.b64decode(authorization[6:].strip(), validate=True).decode("utf-8")
    except ValueError:
        # binascii.Error (not base64), UnicodeDecodeError (not UTF-8), and the plain
        # ValueError of a header holding characters other than ASCII.
        raise Unauthorized(ACCESS_DENIED) from None
    login, sep, password = decoded.partition(":")
    if not sep or not password:
        raise Unauthorized(ACCESS_DENIED)
    return login, password


def authenticate_basic(
    db: Session,
    settings: Settings,
    login: str,
    password: str,
    job_token_resolver: JobTokenResolver | None,
    *,
    passwords: bool = True,
) -> Actor:
    """GitLab's order: CI job token, OAuth token, personal access token (any login), then the
    user's password, unless `passwords` (password_authentication_enabled_for_git) is off."""
    if login == JOB_TOKEN_USER:
        actor = job_token_resolver(db, password) if job_token_resolver else None
        if actor is None:
            raise Unauthorized(ACCESS_DENIED)
        return actor
    try:
        actor = authenticate(db, settings, Credentials(bearer=password))
    except Unauthorized:
        actor = None
    except InvalidToken:
        raise Unauthorized(ACCESS_DENIED) from None
    except Forbidden as refused:
        raise Forbidden(message=str(refused).removeprefix("403 Forbidden - ")) from None
    if actor is not None:
        return actor
    if not passwords:
        raise Unauthorized(ACCESS_DENIED)
    user = password_owner(db, login, password, settings)
    if user is None:
        raise Unauthorized(ACCESS_DENIED)
    # The right password of a user who may not use git: GitLab says why (403).
    require_usable_for_git(db, settings, user)
    return Actor(user=user, via="session", scopes=None, admin_mode=settings.admin_mode)


def _check_protocol(values: instance_settings.InstanceSettings) -> None:
    """`enabled_git_access_protocol`: "ssh" only refuses HTTP; "http" or none allows it."""
    if values["enabled_git_access_protocol"] == "ssh":
        raise Forbidden(message=HTTP_NOT_ALLOWED)


def _check_abilities(actor: Actor, service: str | None) -> None:
    """What the credential itself allows, whatever the project (a token's scopes)."""
    if actor.via == "job_token":
        if service != UPLOAD_PACK:
            raise Forbidden(message=UPLOAD_REFUSED_TOKEN)
        return
    if service == UPLOAD_PACK and not actor.has_scope(DOWNLOAD_SCOPES):
        raise Forbidden(message=DOWNLOAD_REFUSED_TOKEN)
    if service == RECEIVE_PACK and not actor.has_scope(PUSH_SCOPES):
        raise Forbidden(message=UPLOAD_REFUSED_TOKEN)


def _anonymous(
    db: Session,
    settings: Settings,
    project_path: str,
    service: str | None,
    values: instance_settings.InstanceSettings,
) -> GitAccess:
    """Without credentials only public code can be downloaded; anything else is challenged
    (also for projects that don't exist, so nothing leaks before authentication)."""
    if service != UPLOAD_PACK:
        raise Unauthorized(ACCESS_DENIED)
    try:
        s = subjects.project(db, None, project_path, rows=True)
    except NotFound:
        raise Unauthorized(ACCESS_DENIED) from None
    if not policy.may(None, Action.READ_CODE, s):
        raise Unauthorized(ACCESS_DENIED)
    _check_protocol(values)
    return _cleared(settings, None, s, service)


def _cleared(settings: Settings, actor: Actor | None, s: ProjectSubject, service: str) -> GitAccess:
    store = repositories.store(settings)
    if service == UPLOAD_PACK:
        if not policy.may(actor, Action.READ_CODE, s):
            raise Forbidden(message=DOWNLOAD_REFUSED)
        if not store.exists(s.project.id):
            raise NotFound(message=NO_REPOSITORY)
    else:
        if s.project.archived:
            raise Forbidden(message=ARCHIVED)
        if not policy.may(actor, Action.PUSH_CODE, s):
            raise Forbidden(message=PUSH_REFUSED)
        if not store.exists(s.project.id):
            store.create(s.project.id, s.project.default_branch or "main")
    return GitAccess(actor=actor, subject=s, repo_path=store.path(s.project.id), service=service)


def check_push(db: Session, settings: Settings, access: GitAccess, push: PushRequest) -> PushCheck:
    """Each ref command against the naming and protection rules, before git receives the
    pack. What only the objects tell (a non-fast-forward update, the paths of its trees and
    how many a new commit's tree holds, up to settings.max_tree_entries) is left to the
    pre-receive hook, which every push that brings objects runs."""
    refs = [c.ref for c in push.commands]
    before = transport.read_refs(access.repo_path, refs)
    had_branches = bool(transport.branch_names(access.repo_path))
    no_force: list[str] = []
    for command in push.commands:
        refused = _refusal(db, access, command)
        if refused is not None:
            return PushCheck(MESSAGE_PREFIX + refused, None, had_branches, before)
        if _force_refused(db, access, command):
            no_force.append(command.ref)
    hook = None
    if not all(command.deletion for command in push.commands):
        rules = Rules(
            no_force=tuple(no_force),
            force_refused=MESSAGE_PREFIX + FORCE_PROTECTED,
            not_a_commit=MESSAGE_PREFIX + NOT_A_COMMIT,
            path_refused=MESSAGE_PREFIX + PATH_REFUSED,
            check_failed=MESSAGE_PREFIX + CHECK_FAILED,
            max_tree_entries=settings.max_tree_entries,
            tree_refused=MESSAGE_PREFIX + TREE_REFUSED,
        )
        hook = ReceiveHook(transport.hooks_dir(settings.data_dir), rules)
    return PushCheck(None, hook, had_branches, before)


def _refusal(db: Session, access: GitAccess, command: RefCommand) -> str | None:
    s, actor = access.subject, access.actor
    if command.ref.startswith(KEPT_REF_PREFIXES):
        return HIDDEN_REF
    if command.ref.startswith("refs/tags/"):
        tag = command.ref.removeprefix("refs/tags/")
        if not command.creation and not policy.may(actor, Action.ADMIN_PROTECTED_BRANCHES, s):
            return CHANGE_TAG
        if command.creation and not command.deletion:
            return _new_tag_refusal(tag)
        return None
    if not command.ref.startswith("refs/heads/"):
        return None
    branch = command.ref.removeprefix("refs/heads/")
    if command.deletion and branch == s.project.default_branch:
        return DELETE_DEFAULT
    if command.creation and not command.deletion:
        refused = _new_branch_refusal(branch)
        if refused is not None:
            return refused
    if repositories.protection_for(db, s.project.id, branch) is None:
        return None
    if command.deletion:
        if policy.may(actor, Action.ADMIN_PROTECTED_BRANCHES, s):
            return DELETE_PROTECTED_VIA_GIT
        return DELETE_PROTECTED
    if not repositories.may_push(db, actor, s, branch):
        return CREATE_PROTECTED if command.creation else PUSH_PROTECTED
    return None


def _new_branch_refusal(branch: str) -> str | None:
    """kiln's one rule for new branch names (kiln.git.names), with GitLab's messages."""
    if names.valid_new_branch(branch):
        return None
    return branches.HEX_NAME if names.object_name_like(branch) else INVALID_BRANCH


def _new_tag_refusal(tag: str) -> str | None:
    if names.valid_new_tag(tag):
        return None
    return tags.OBJECT_NAME if names.object_name_like(tag) else tags.PROHIBITED


def _force_refused(db: Session, access: GitAccess, command: RefCommand) -> bool:
    if command.creation or command.deletion or not command.ref.startswith("refs/heads/"):
        return False
    branch = command.ref.removeprefix("refs/heads/")
    return not repositories.may_push(db, access.actor, access.subject, branch, force=True)


def record_push(db: Session, access: GitAccess, check: PushCheck, options: list[str]) -> list[str]:
    """The bookkeeping of what the push changed (refs compared before and after git ran):
    one transaction with a push event per moved branch or tag, on a first push the
    project's default branch (HEAD follows it). Returns the refs that moved."""
    after = transport.read_refs(access.repo_path, list(check.before))
    moved = [ref for ref, old in check.before.items() if after.get(ref) != old]
    if not moved:
        return []
    repo = pygit2.Repository(str(access.repo_path))
    with transaction(db):
        project = db.get(Project, access.subject.project.id)
        if project is None:
            return moved
        if not check.had_branches:
            _first_push(db, project, repo, moved, after)
        for ref in moved:
            if ref.startswith(("refs/heads/", "refs/tags/")):
                repositories.record_push(
                    db, project, access.actor, ref, check.before[ref], after[ref], repo, options
                )
    return moved


def _first_push(
    db: Session, project: Project, repo: pygit2.Repository, moved: list[str], after: dict[str, str | None]
) -> None:
    """The first branches pushed into an empty repository: the project's default branch stays
    if it was among them, else the first one pushed becomes the default."""
    pushed = [r.removeprefix("refs/heads/") for r in moved if r.startswith("refs/heads/") and after[r]]
    if pushed:
        branch = project.default_branch if project.default_branch in pushed else pushed[0]
        repositories.adopt_first_branch(db, project, repo, branch)


# ---------------------------------------------------------------------------- git processes


async def advertise(access: GitAccess, protocol: str | None) -> AsyncIterator[bytes]:
    """info/refs: git's ref advertisement for the service the caller was cleared for."""
    git = await GitProcess.start(access.service, access.repo_path, advertise=True, protocol=protocol)
    return transport.advertisement(git)


async def upload_pack(
    access: GitAccess, body: AsyncIterator[bytes], protocol: str | None
) -> AsyncIterator[bytes]:
    """A clone or fetch: the request fed to git-upload-pack, its answer streamed back."""
    git = await GitProcess.start(UPLOAD_PACK, access.repo_path, protocol=protocol)
    try:
        await git.feed(body)
    except BaseException:
        git.stop()
        raise

    async def result() -> AsyncIterator[bytes]:
        try:
            async for chunk in git.output():
                yield chunk
            await git.wait()
        finally:
            git.stop()

    return result()


async def receive_pack(
    db: Session,
    settings: Settings,
    access: GitAccess,
    body: AsyncIterator[bytes],
    protocol: str | None,
    run: Runner,
) -> bytes | AsyncIterator[bytes]:
    """A push: its commands judged before git runs (a refusal is git's report, answered
    whole), else the pack fed to git-receive-pack and its report streamed back while the push
    is recorded. Takes over `db`: it is closed once the push is recorded, even if the client
    went away meanwhile."""
    try:
        head, push = await transport.read_push(body)
        check = await run(check_push, db, settings, access, push)
        if check.refused is not None:
            async for _ in body:  # the pack the client sends anyway
                pass
            db.close()
            return transport.refusal(push, check.refused)
        git = await GitProcess.start(
            RECEIVE_PACK,
            access.repo_path,
            protocol=protocol,
            hook=check.hook,
            max_input=settings.max_push_bytes,
        )
    except BaseException:
        db.close()
        raise
    try:
        await git.feed(body, first=head)
    except BaseException:
        git.stop()
        db.close()
        raise
    # From here the push runs to its end and is recorded even if the client goes away.
    chunks: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def finish() -> None:
        try:
            async for chunk in git.output():
                chunks.put_nowait(chunk)
            await git.wait()
            await run(record_push, db, access, check, push.options)
        except Exception:
            log.exception("recording the push to %s failed", access.subject.project.id)
        finally:
            db.close()
            chunks.put_nowait(None)

    task = asyncio.create_task(finish())
    _finishing.add(task)
    task.add_done_callback(_finishing.discard)

    async def result() -> AsyncIterator[bytes]:
        while (chunk := await chunks.get()) is not None:
            yield chunk

    return result()
