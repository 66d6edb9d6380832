"""The repository tree and blobs by id (GitLab's /repository/tree and /repository/blobs)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

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
from kiln.queries.paging import stream_page
from kiln.schemas.tree import TreeList
from kiln.services import repositories
from kiln.services.files import LARGE_BLOB, LARGE_DOWNLOADS

NONE_NEEDS_RECURSIVE = 'pagination cannot be "none" unless "recursive" is true'


@dataclass(slots=True)
class TreeListing:
    page: PageResult  # items: git_files.TreeItem
    # pagination=none: every entry, read as it is taken (a tree may hold millions), and no
    # pagination headers
    everything: Iterator[git_files.TreeItem] | None = None


def list_tree(
    db: Session, viewer: Actor | None, ident: str, q: TreeList, page: Page, settings: Settings
) -> TreeListing:
    """A page of a tree's entries, read up to the page's last entry (and the total up to
    TOTAL_LIMIT + 1), never the whole tree; past settings.max_tree_entries a recursive
    listing is the first that many entries (git_files.TreeEntries)."""
    if q.pagination == "none" and not q.recursive:
        raise ParamError(NONE_NEEDS_RECURSIVE)
    ctx = repositories.for_read(db, viewer, ident, settings)
    if ctx.repo is None:
        raise NotFound("Tree")
    try:
        commit = resolve_commit(ctx.repo, q.ref)
    except RefNotFound:
        raise NotFound("Tree") from None
    entries = git_files.list_tree(
        commit, q.path or "", recursive=q.recursive, limit=settings.max_tree_entries
    )
    if entries is None:
        raise NotFound("Tree")
    if q.pagination == "none":
        return TreeListing(PageResult(items=[], total=None, has_next=False), everything=iter(entries))
    if page.keyset:
        return TreeListing(_after_token(entries, q.page_token, page.per_page))
    return TreeListing(stream_page(entries, page, entries.count))


def _after_token(entries: git_files.TreeEntries, token: str | None, per_page: int) -> PageResult:
    """Keyset pages continue after the entry whose path is the token (paths are unique),
    read up to it and a page more."""
    listed = iter(entries)
    if token:
        for item in listed:
            if item.path == token:
                break
        else:
            raise BadRequest("page_token is invalid")
    chunk = list(islice(listed, per_page + 1))
    has_next = len(chunk) > per_page
    chunk = chunk[:per_page]
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


def large_blob(found: git_files.BlobRef, settings: Settings) -> Iterator[bytes]:
    """A large blob's content in pieces; past large_blob_bytes, GitLab's rate-limited
    large-blob download."""
    if found.size > settings.large_blob_bytes:
        LARGE_DOWNLOADS.take(found.repo.path, settings, LARGE_BLOB)
    return found.pieces()


def raw_blob(found: git_files.BlobRef) -> Content:
    """A small blob's raw bytes, read whole."""
    whole = found.repo[found.id].peel(pygit2.Blob)
    return Content(whole.data, whole.is_binary)


def large_raw_blob(found: git_files.BlobRef, *, head: bool) -> git_files.RawBlob:
    """A large blob's raw bytes: its first piece, which tells text from binary, and the rest
    read as it is sent. Not a large-blob download: GitLab leaves raw reads out of that rate
    limit."""
    return git_files.open_blob(found.repo, found.id, found.size, head=head)
