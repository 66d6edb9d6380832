"""Tags of a project's repository: list, show, create (lightweight, or annotated when a
message is given, with the caller as tagger) and delete. Ref changes are compare-and-swap
updates under the repository's write lock, recorded like a tag push."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import BadRequest, NotFound
from kiln.git import branches as git_refs
from kiln.git import names
from kiln.git.branches import TAG_PREFIX, TagRef
from kiln.git.errors import ConcurrentUpdate, RefNotFound
from kiln.git.refs import resolve_commit
from kiln.git.writes import Person
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.preconditions import require_unmodified_since
from kiln.queries.paging import list_page
from kiln.queries.text import matches_search
from kiln.schemas.tags import TagCreate, TagList
from kiln.services import repositories
from kiln.services.repositories import RepoContext

TARGET_EMPTY = "Target is empty"
NAME_INVALID = "Tag name invalid"
OBJECT_NAME = "You cannot create a tag with a SHA-1 or SHA-256 tag name."
DEFAULT_NAME = "You cannot use default branch name to create a tag"
PROHIBITED = "You cannot create a tag with a prohibited pattern."
REMOVE_FAILED = "Failed to remove tag"
_CHUNK = re.compile(r"(\d+)")


@dataclass(slots=True)
class Tags:
    full_path: str
    page: PageResult  # items: TagRef


@dataclass(slots=True)
class OneTag:
    full_path: str
    tag: TagRef


def _updated(t: TagRef) -> int:
    """When a tag was made: its tagger's time, or its commit's for a lightweight tag."""
    if t.annotation is not None and t.annotation.tagger is not None:
        return int(t.annotation.tagger.time)
    return int(t.commit.committer.time) if t.commit is not None else 0


def _version_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """`v1.10` after `v1.9`: digit runs compare as numbers, the rest as text."""
    parts = _CHUNK.split(name)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p != "")


def list_tags(
    db: Session, actor: Actor | None, ident: str, settings: Settings, q: TagList, page: Page
) -> Tags:
    ctx = repositories.for_read(db, actor, ident, settings)
    tags = git_refs.list_tags(ctx.repo) if ctx.repo is not None else []
    if q.search:
        tags = [t for t in tags if matches_search(t.name, q.search)]
    reverse = q.sort == "desc"
    if q.order_by == "updated":
        tags.sort(key=lambda t: (_updated(t), t.name), reverse=reverse)
    elif q.order_by == "version":
        tags.sort(key=lambda t: _version_key(t.name), reverse=reverse)
    else:
        tags.sort(key=lambda t: t.name, reverse=reverse)
    return Tags(ctx.full_path, list_page(list(tags), page))


def _existing(ctx: RepoContext, name: str) -> TagRef:
    found = git_refs.find_tag(ctx.repo, name) if ctx.repo is not None and name else None
    if found is None:
        raise NotFound("Tag")
    return found


def get_tag(db: Session, actor: Actor | None, ident: str, settings: Settings, name: str) -> OneTag:
    ctx = repositories.for_read(db, actor, ident, settings)
    return OneTag(ctx.full_path, _existing(ctx, name))


def create_tag(db: Session, actor: Actor, ident: str, settings: Settings, p: TagCreate) -> OneTag:
    ctx = repositories.for_write(db, actor, ident, settings)
    name = p.tag_name
    if not p.ref.strip():
        raise BadRequest(TARGET_EMPTY, raw=True)
    if not names.valid_ref_name(name):
        raise BadRequest(NAME_INVALID, raw=True)
    exists = BadRequest(f"Tag {name} already exists", raw=True)
    repo = ctx.repo
    try:
        if repo is None:
            raise RefNotFound(p.ref)
        commit = resolve_commit(repo, p.ref)
    except RefNotFound:
        raise BadRequest(f"Target {p.ref} is invalid", raw=True) from None
    if names.object_name_like(name):
        raise BadRequest(OBJECT_NAME, raw=True)
    if name == ctx.project.default_branch:
        raise BadRequest(DEFAULT_NAME, raw=True)
    if name.startswith(TAG_PREFIX):
        raise BadRequest(PROHIBITED, raw=True)
    if git_refs.find_tag(repo, name) is not None or git_refs.hierarchy_conflict(repo, TAG_PREFIX, name):
        raise exists
    message = p.message.strip() if p.message is not None else ""
    target = str(commit.id)
    if message:
        tagger = Person(actor.user.name, actor.user.email).signature()
        target = git_refs.write_tag_object(repo, name, commit, tagger, message)
    ref = f"{TAG_PREFIX}{name}"
    try:
        git_refs.create_ref(ctx.path, ref, target, f"kiln: create tag {name}")
    except ConcurrentUpdate:
        raise exists from None  # a push made the tag (or a clashing one) after the checks
    repositories.bookkeeping(db, ctx, actor, ref, None, target)
    return OneTag(ctx.full_path, _existing(ctx, name))


def delete_tag(
    db: Session,
    actor: Actor,
    ident: str,
    settings: Settings,
    name: str,
    unmodified_since: datetime | None = None,
) -> None:
    """404 for a missing tag comes before 403 (GitLab finds the tag, then authorizes)."""
    ctx = repositories.for_read(db, actor, ident, settings)
    found = _existing(ctx, name)
    policy.require(actor, Action.PUSH_CODE, ctx.subject)
    if found.commit is not None:
        require_unmodified_since(datetime.fromtimestamp(found.commit.author.time, UTC), unmodified_since)
    ref = f"{TAG_PREFIX}{name}"
    try:
        git_refs.remove_ref(ctx.path, ref, found.target)
    except ConcurrentUpdate:
        raise BadRequest(REMOVE_FAILED, raw=True) from None
    repositories.bookkeeping(db, ctx, actor, ref, found.target, None)
