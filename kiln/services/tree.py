"""The repository tree and blobs by id (GitLab's /repository/tree and /repository/blobs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pygit2
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import BadRequest, NotFound, ParamError
from kiln.git import files as git_files
from kiln.git.errors import RefNotFound
from kiln.git.refs import resolve_commit
from kiln.pagination import Page, PageResult
from kiln.queries.files import Content
from kiln.queries.paging import list_page
from kiln.schemas.tree import TreeList
from kiln.services import repositories
from kiln.services.files import LARGE_BLOB, LARGE_DOWNLOADS

NONE_NEEDS_RECURSIVE = 'pagination cannot be "none" unless "recursive" is true'


@dataclass(slots=True)
class TreeListing:
    page: PageResult  # items: git_files.TreeItem
    # pagination=none: every entry, no pagination headers
    unpaginated: bool = False


def list_tree(
    db: Session, viewer: Actor | None, ident: str, q: TreeList, page: Page, settings: Settings
) -> TreeListing:
    if q.pagination == "none" and not q.recursive:
        raise ParamError(NONE_NEEDS_RECURSIVE)
    ctx = repositories.for_read(db, viewer, ident, settings)
    if ctx.repo is None:
        raise NotFound("Tree")
    try:
        commit = resolve_commit(ctx.repo, q.ref)
    except RefNotFound:
        raise NotFound("Tree") from None
    items = git_files.list_tree(commit, q.path or "", recursive=q.recursive)
    if items is None:
        raise NotFound("Tree")
    if q.pagination == "none":
        return TreeListing(PageResult(items=items, total=len(items), has_next=False), unpaginated=True)
    if page.keyset:
        return TreeListing(_after_token(items, q.page_token, page.per_page))
    return TreeListing(list_page(items, page))


def _after_token(items: list[git_files.TreeItem], token: str | None, per_page: int) -> PageResult:
    """Keyset pages continue after the entry whose path is the token (paths are unique)."""
    start = 0
    if token:
        positions = {item.path: n for n, item in enumerate(items)}
        if token not in positions:
            raise BadRequest("page_token is invalid")
        start = positions[token] + 1
    chunk = items[start : start + per_page]
    has_next = len(items) > start + per_page
    # The next page continues after the last entry's path (`page_token`), as GitLab links it.
    return PageResult(
        items=chunk,
        total=None,
        has_next=has_next,
        next_key=chunk[-1].path if has_next else None,
        cursor_param="page_token",
    )


def get_blob(
    db: Session, viewer: Actor | None, ident: str, sha: str, settings: Settings
) -> git_files.BlobRef:
    """A blob by id, found by its header: its content is read when it is rendered."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    found = git_files.find_blob(ctx.repo, sha) if ctx.repo is not None else None
    if found is None:
        raise NotFound("Blob")
    return found


def is_large(found: git_files.BlobRef, settings: Settings) -> bool:
    """Whether the blob is read off the event loop (in pieces, past STREAM_BYTES) and
    counted as a large download, rather than read whole in place."""
    return found.size > min(git_files.STREAM_BYTES, settings.large_blob_bytes)


def large_blob(found: git_files.BlobRef, settings: Settings) -> Iterator[bytes]:
    """A large blob's content in pieces; past large_blob_bytes, GitLab's rate-limited
    large-blob download."""
    if found.size > settings.large_blob_bytes:
        LARGE_DOWNLOADS.take(found.repo.path, settings, LARGE_BLOB)
    return found.pieces()


def raw_blob(db: Session, viewer: Actor | None, ident: str, sha: str, settings: Settings) -> Content:
    found = get_blob(db, viewer, ident, sha, settings)
    whole = found.repo[found.id].peel(pygit2.Blob)
    return Content(whole.data, whole.is_binary)
