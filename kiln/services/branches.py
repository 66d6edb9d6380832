"""Branches of a project's repository: list, show, create, delete, and the clean-up of
branches merged into the default branch.

Every ref change is a compare-and-swap under the repository's write lock (kiln.git.branches),
against the state this request read: a push that lands in between makes the API change fail
with a 400 rather than overwrite or lose it. Each change is then recorded like a push."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pygit2
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound
from kiln.git import branches as git_refs
from kiln.git import names
from kiln.git.branches import BRANCH_PREFIX, BranchRef
from kiln.git.errors import ConcurrentUpdate, EmptyCommit, RefNotFound
from kiln.git.refs import resolve_commit
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models.repository import DEVELOPER_ACCESS
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.preconditions import require_unmodified_since
from kiln.queries.paging import list_page
from kiln.queries.text import matches_search
from kiln.records import BranchRecord
from kiln.schemas.branches import BranchCreate, BranchList
from kiln.services import protected_branches as protection
from kiln.services import repositories
from kiln.services.repositories import RepoContext

INVALID_REFNAME = "The branch refname is invalid"
NAME_INVALID = "Branch name is invalid"
ALREADY_EXISTS = "Branch already exists"
HEX_NAME = "You cannot create a branch with a SHA-1 or SHA-256 branch name."
DEFAULT_DELETE = "The default branch of a project cannot be deleted."
PROTECTED_DELETE = (
    "You are not allowed to delete protected branches from this project. "
    "Only a project maintainer or owner can delete a protected branch."
)
PROTECTED_CREATE = "You are not allowed to create protected branches on this project."
PROTECTED_BASIS = "You can only use an existing protected branch ref as the basis of a new protected branch."
PROTECTED_PUSH = "You are not allowed to push code to protected branches on this project."
REMOVE_FAILED = "Failed to remove branch"


@dataclass(slots=True)
class Branches:
    full_path: str  # the project's, for web URLs
    page: PageResult  # items: BranchRecord


@dataclass(slots=True)
class OneBranch:
    full_path: str
    branch: BranchRecord


def _default_name(ctx: RepoContext) -> str | None:
    if ctx.project.default_branch:
        return ctx.project.default_branch
    repo = ctx.repo
    if repo is None or repo.head_is_unborn:
        return None
    return str(repo.head.shorthand)


def _records(
    db: Session, actor: Actor | None, ctx: RepoContext, branches: list[BranchRef]
) -> list[BranchRecord]:
    """Views for `branches` with one query for the project's rules, whatever their number."""
    if not branches:
        return []
    repo = ctx.repo
    assert repo is not None
    rules = protection.rules_of(db, ctx.project.id)
    default = _default_name(ctx)
    default_ref = git_refs.find_branch(repo, default) if default else None
    default_tip = default_ref.commit.id if default_ref is not None else None
    out = []
    for b in branches:
        found = protection.matching(rules, b.name)
        rule = protection.governing(rules, b.name)
        out.append(
            BranchRecord(
                name=b.name,
                commit=b.commit,
                merged=git_refs.merged_into(repo, b.commit.id, default_tip),
                protected=bool(found),
                developers_can_push=any(r.push_access_level == DEVELOPER_ACCESS for r in found),
                developers_can_merge=any(r.merge_access_level == DEVELOPER_ACCESS for r in found),
                can_push=policy.may_push_to(
                    actor, ctx.subject, rule.push_access_level if rule is not None else None
                ),
                default=b.name == default,
            )
        )
    return out


# ----------------------------------------------------------------------------- reading


def list_branches(
    db: Session, actor: Actor | None, ident: str, settings: Settings, q: BranchList, page: Page
) -> Branches:
    ctx = repositories.for_read(db, actor, ident, settings)
    refs = git_refs.list_branches(ctx.repo) if ctx.repo is not None else []
    if q.search:
        refs = [b for b in refs if matches_search(b.name, q.search)]
    if q.sort in ("updated_asc", "updated_desc"):
        # Newest first for updated_desc; names break ties the same way in both directions.
        if q.sort == "updated_desc":
            refs.sort(key=lambda b: (-b.commit.committer.time, b.name))
        else:
            refs.sort(key=lambda b: (b.commit.committer.time, b.name))
    result = list_page(list(refs), page)
    result.items = _records(db, actor, ctx, result.items)  # type: ignore[arg-type]
    return Branches(ctx.full_path, result)


def _existing(ctx: RepoContext, name: str) -> BranchRef:
    """GitLab's find_branch!: 400 for a name git would refuse, 404 for a missing branch."""
    if not names.valid_ref_name(name):
        raise BadRequest(INVALID_REFNAME, raw=True)
    found = git_refs.find_branch(ctx.repo, name) if ctx.repo is not None else None
    if found is None:
        raise NotFound("Branch")
    return found


def get_branch(db: Session, actor: Actor | None, ident: str, settings: Settings, name: str) -> OneBranch:
    ctx = repositories.for_read(db, actor, ident, settings)
    found = _existing(ctx, name)
    return OneBranch(ctx.full_path, _records(db, actor, ctx, [found])[0])


def branch_exists(db: Session, actor: Actor | None, ident: str, settings: Settings, name: str) -> bool:
    ctx = repositories.for_read(db, actor, ident, settings)
    return ctx.repo is not None and git_refs.find_branch(ctx.repo, name) is not None


# ----------------------------------------------------------------------------- changing


def _person(actor: Actor) -> Person:
    return Person(actor.user.name, actor.user.email)


def _ensure_default_branch(db: Session, actor: Actor, ctx: RepoContext) -> None:
    """A branch needs something to start from: in an empty repository GitLab first commits
    an empty README.md to the default branch."""
    repo = ctx.ensure()
    if git_refs.list_branches(repo):
        return
    default = ctx.project.default_branch or "main"
    if not repositories.may_push(db, actor, ctx.subject, default):
        raise BadRequest(PROTECTED_PUSH, raw=True)
    try:
        commit, previous = commit_actions(
            repo,
            branch=default,
            actions=[FileAction("create", "README.md", b"")],
            message="Add README.md",
            author=_person(actor),
            committer=_person(actor),
        )
    except (ConcurrentUpdate, EmptyCommit):
        return  # someone pushed the first branch meanwhile: build on theirs
    with transaction(db):
        repositories.adopt_first_branch(db, ctx.project, repo, default)
        repositories.record_push(
            db, ctx.project, actor, f"{BRANCH_PREFIX}{default}", previous, str(commit.id), repo
        )


def create_branch(db: Session, actor: Actor, ident: str, settings: Settings, p: BranchCreate) -> OneBranch:
    ctx = repositories.for_write(db, actor, ident, settings)
    _ensure_default_branch(db, actor, ctx)
    repo = ctx.ensure()
    name = p.branch
    if not names.valid_ref_name(name):
        raise BadRequest(NAME_INVALID, raw=True)
    if git_refs.find_branch(repo, name) is not None:
        raise BadRequest(ALREADY_EXISTS, raw=True)
    try:
        commit = resolve_commit(repo, p.ref)
    except RefNotFound:
        raise BadRequest(
            f"Failed to create branch '{name}': invalid reference name '{p.ref}'", raw=True
        ) from None
    if names.object_name_like(name):
        raise BadRequest(HEX_NAME, raw=True)
    _check_protected_creation(db, actor, ctx, name, commit)
    if git_refs.hierarchy_conflict(repo, BRANCH_PREFIX, name):
        raise BadRequest(_hierarchy_message(name), raw=True)
    ref = f"{BRANCH_PREFIX}{name}"
    try:
        git_refs.create_ref(ctx.path, ref, str(commit.id), f"kiln: create branch {name}")
    except ConcurrentUpdate:
        # A push created the name (or a clashing one) after the checks above.
        if git_refs.find_branch(repo, name) is not None:
            raise BadRequest(ALREADY_EXISTS, raw=True) from None
        raise BadRequest(_hierarchy_message(name), raw=True) from None
    repositories.bookkeeping(db, ctx, actor, ref, None, str(commit.id))
    return OneBranch(ctx.full_path, _records(db, actor, ctx, [BranchRef(name, commit)])[0])


def _hierarchy_message(name: str) -> str:
    return f"Failed to create branch '{name}': Branch name conflicts with existing branch hierarchy."


def _check_protected_creation(
    db: Session, actor: Actor, ctx: RepoContext, name: str, commit: pygit2.Commit
) -> None:
    """Creating a protected branch without push access to it: allowed to those who may merge
    into it, from a commit some protected branch already has (GitLab's branch check)."""
    rules = protection.rules_of(db, ctx.project.id)
    rule = protection.governing(rules, name)
    if rule is None or policy.may_push_to(actor, ctx.subject, rule.push_access_level):
        return
    if not policy.may_push_to(actor, ctx.subject, rule.merge_access_level):
        raise BadRequest(PROTECTED_CREATE, raw=True)
    repo = ctx.ensure()
    tips = [b.commit.id for b in git_refs.list_branches(repo) if protection.matching(rules, b.name)]
    if not git_refs.contained_in_any(repo, commit.id, tips):
        raise BadRequest(PROTECTED_BASIS, raw=True)


def _authored(commit: pygit2.Commit) -> datetime:
    return datetime.fromtimestamp(commit.author.time, UTC)


def delete_branch(
    db: Session,
    actor: Actor,
    ident: str,
    settings: Settings,
    name: str,
    unmodified_since: datetime | None = None,
) -> None:
    ctx = repositories.for_write(db, actor, ident, settings)
    found = _existing(ctx, name)
    require_unmodified_since(_authored(found.commit), unmodified_since)
    if name == _default_name(ctx):
        raise BadRequest(DEFAULT_DELETE, raw=True)
    rules = protection.rules_of(db, ctx.project.id)
    if protection.matching(rules, name) and not policy.may(
        actor, Action.ADMIN_PROTECTED_BRANCHES, ctx.subject
    ):
        raise BadRequest(PROTECTED_DELETE, raw=True)
    _remove(db, actor, ctx, found)


def _remove(db: Session, actor: Actor, ctx: RepoContext, found: BranchRef) -> None:
    ref = f"{BRANCH_PREFIX}{found.name}"
    before = str(found.commit.id)
    try:
        git_refs.remove_ref(ctx.path, ref, before)
    except ConcurrentUpdate:
        # The branch moved since it was read: deleting it now would drop commits unseen.
        raise BadRequest(REMOVE_FAILED, raw=True) from None
    repositories.bookkeeping(db, ctx, actor, ref, before, None)


def delete_merged(db: Session, actor: Actor, ident: str, settings: Settings) -> list[str]:
    """Delete every branch merged into the default branch, except the default branch and
    protected ones; returns the names deleted. A branch that moves meanwhile is kept."""
    ctx = repositories.for_write(db, actor, ident, settings)
    repo = ctx.repo
    default = _default_name(ctx)
    if repo is None or default is None:
        return []
    default_ref = git_refs.find_branch(repo, default)
    if default_ref is None:
        return []
    rules = protection.rules_of(db, ctx.project.id)
    deleted = []
    for b in git_refs.list_branches(repo):
        if b.name == default or protection.matching(rules, b.name):
            continue
        if not git_refs.merged_into(repo, b.commit.id, default_ref.commit.id):
            continue
        try:
            _remove(db, actor, ctx, b)
        except BadRequest:
            continue
        deleted.append(b.name)
    return deleted
