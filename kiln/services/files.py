"""Repository files (spec part 1 "Repository files"): read a file, its raw bytes and its
blame at a ref; create, update and delete one file as a commit on a branch.

Writes go through kiln.git.writes (one lock per repository, compare-and-swap on the branch),
so an edit racing a push fails with 400 and leaves the branch where the push put it."""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import pygit2
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound, ParamError, PayloadTooLarge, Throttled
from kiln.git import files as git_files
from kiln.git import names
from kiln.git.blame import BlameGroup, RangeOutsideFile, blame
from kiln.git.errors import ActionFailed, ConcurrentUpdate, EmptyCommit, InvalidRefName, RefNotFound
from kiln.git.refs import branch_tip, resolve_commit
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.kept import Kept, text_size
from kiln.queries.files import BlameRange, FileRecord
from kiln.schemas.files import FileDelete, FileWrite
from kiln.services import repositories
from kiln.services.repositories import PUSH_REFUSED, RepoContext

NOT_ON_BRANCH = "You can only create or edit files when you are on a branch"
NO_CHANGES = "No changes were made: the new content is identical to the current content"
INVALID_PATH = "Your changes could not be committed, because the file path is invalid"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
# GitLab's answers past its large-blob threshold (API::Helpers::BlobHelpers), by route.
LARGE_FILE = (
    "The requested blob is over the threshold size of {limit}.\n"
    "Access this blob using '/projects/:id/repository/files/:file_path/raw' to avoid this error.\n"
)
LARGE_BLOB = (
    "The requested blob is over the threshold size of {limit}.\n"
    "Access this blob using '/projects/:id/repository/blobs/:sha/raw' to avoid this error.\n"
)
BLAME_TOO_LARGE = "413 Request Entity Too Large - blame reads files of at most {limit} bytes"

Change = Literal["create", "update", "delete"]


def _commit_at(ctx: RepoContext, ref: str | None) -> pygit2.Commit:
    """GitLab's `project.commit(ref)`: an empty repository has no commit at any ref."""
    repo = ctx.repo
    if repo is None:
        raise NotFound("Commit")
    try:
        return resolve_commit(repo, ref)
    except RefNotFound:
        raise NotFound("Commit") from None


def _record(ctx: RepoContext, commit: pygit2.Commit, path: str, ref: str) -> FileRecord:
    repo = ctx.repo
    assert repo is not None  # a commit was found in it
    commit_id = str(commit.id)
    repo_path = ctx.path
    key = (str(repo_path), commit_id, path)
    kept = _FILES.get(key)
    if kept is None:
        found = git_files.find_file(repo, commit, path)
        if found is None:
            raise NotFound("File")
        last = git_files.last_commit_for_path(repo_path, commit_id, found.git_path)
        kept = (found, last or commit_id)
        _FILES.put(key, kept)
    found, last_commit_id = kept
    return FileRecord(
        file=found,
        ref=ref,
        commit_id=commit_id,
        last_commit_id=last_commit_id,
        key=key,
        repo=repo,
        project_id=ctx.project.id,
    )


# A path at a commit: the file the tree holds there and the last commit that touched it,
# neither of which ever changes (a missing file is not kept: it is cheap to find missing).
_FILES: Kept[tuple[git_files.FoundFile, str]] = Kept(
    limit=4096, budget=4 << 20, size=lambda kept: text_size(kept[0].path, kept[0].git_path, kept[1]) + 64
)


def read_file(
    db: Session, viewer: Actor | None, ident: str, path: str, ref: str, settings: Settings
) -> FileRecord:
    ctx = repositories.for_read(db, viewer, ident, settings)
    return _record(ctx, _commit_at(ctx, ref), path, ref)


def unchanged(settings: Settings, rec: FileRecord) -> Callable[[], bool]:
    """Whether the record's ref still names its commit: all that an answer kept for it checks
    besides the database (kiln.api._answers)."""
    store = repositories.store(settings)
    project_id, ref, commit_id = rec.project_id, rec.ref, rec.commit_id

    def check() -> bool:
        repo = store.find(project_id)
        return repo is not None and str(resolve_commit(repo, ref).id) == commit_id

    return check


def content_sha256(rec: FileRecord) -> str:
    """The file's SHA-256, its content read in pieces and the digest remembered by blob."""
    return git_files.blob_sha256(rec.repo, rec.file.blob_id, rec.file.size)


def is_large(size: int, settings: Settings) -> bool:
    """Whether a file or blob of `size` is read off the event loop (in pieces, past
    STREAM_BYTES) and counted as a large download, rather than read whole in place."""
    return size > min(git_files.STREAM_BYTES, settings.large_blob_bytes)


@dataclass(slots=True)
class LargeFile:
    digest: str
    # The content in pieces, None for HEAD.
    pieces: Iterator[bytes] | None


def large_file(rec: FileRecord, settings: Settings, *, head: bool) -> LargeFile:
    """What the files API sends for a file read in pieces: its digest, and its content
    unless only the headers go out. Past large_blob_bytes, GET is GitLab's rate-limited
    large-blob download."""
    if not head and rec.file.size > settings.large_blob_bytes:
        LARGE_DOWNLOADS.take(rec.repo.path, settings, LARGE_FILE)
    digest = content_sha256(rec)
    pieces = None if head else git_files.blob_pieces(rec.repo, rec.file.blob_id, rec.file.size)
    return LargeFile(digest, pieces)


class LargeDownloads:
    """GitLab's large_blob_download rate limit: large blobs served per project (by its
    repository) in the last minute. Counted by each process (nothing here is shared between
    nodes), so a limit of N is N per process."""

    WINDOW = 60.0
    _PROJECTS_LIMIT = 4096

    def __init__(self) -> None:
        self._served: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def take(self, repository: str, settings: Settings, message: str) -> None:
        """Count one more download, or refuse it with 429 when the minute's are used."""
        now = time.monotonic()
        with self._lock:
            served = self._served.get(repository)
            if served is None:
                if len(self._served) >= self._PROJECTS_LIMIT:
                    self._forget_idle(now)
                served = self._served[repository] = deque()
            while served and served[0] <= now - self.WINDOW:
                served.popleft()
            if len(served) >= settings.large_blob_downloads_per_minute:
                raise Throttled(message.format(limit=settings.large_blob_bytes), int(self.WINDOW))
            served.append(now)

    def _forget_idle(self, now: float) -> None:
        for repository in [r for r, d in self._served.items() if not d or d[-1] <= now - self.WINDOW]:
            del self._served[repository]


LARGE_DOWNLOADS = LargeDownloads()


def raw_file(
    db: Session, viewer: Actor | None, ident: str, path: str, ref: str | None, settings: Settings
) -> FileRecord:
    """Without `ref`, the default branch (clients.md 7)."""
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit_at(ctx, ref)
    return _record(ctx, commit, path, ref or ctx.project.default_branch or "")


def streams_raw(size: int) -> bool:
    """Whether the raw bytes of a file or blob of `size` are read from git in pieces, each in
    a thread as it goes out, rather than read whole in place."""
    return size > git_files.STREAM_BYTES


@dataclass(slots=True)
class LargeRaw:
    digest: str
    content: git_files.RawBlob


def large_raw(rec: FileRecord, *, head: bool) -> LargeRaw:
    """A large file's raw bytes: its digest (for its metadata headers) and its first piece,
    which tells text from binary; the rest is read as it is sent. Not a large-blob download:
    GitLab leaves raw reads out of that rate limit."""
    digest = content_sha256(rec)
    return LargeRaw(digest, git_files.open_blob(rec.repo, rec.file.blob_id, rec.file.size, head=head))


@dataclass(slots=True)
class Blamed:
    record: FileRecord
    ranges: list[BlameRange]
    # The file's content_sha256, read off the event loop with the blame.
    digest: str


def blame_file(
    db: Session,
    viewer: Actor | None,
    ident: str,
    path: str,
    ref: str,
    settings: Settings,
    *,
    lines: tuple[int, int] | None,
    headers_only: bool = False,
) -> Blamed:
    """A file's blame ranges; a file over large_blob_bytes is refused with 413 before git
    reads it (GitLab's API sets no bound; git's output runs to several times the file)."""
    if lines is not None and lines[0] > lines[1]:
        raise BadRequest("range[start] must be less than or equal to range[end]", raw=True)
    ctx = repositories.for_read(db, viewer, ident, settings)
    commit = _commit_at(ctx, ref)
    record = _record(ctx, commit, path, ref)
    if not headers_only and record.file.size > settings.large_blob_bytes:
        raise PayloadTooLarge(BLAME_TOO_LARGE.format(limit=settings.large_blob_bytes))
    digest = content_sha256(record)
    if headers_only:
        return Blamed(record, [], digest)
    start, end = lines if lines is not None else (None, None)
    try:
        groups = blame(ctx.path, str(commit.id), record.file.git_path, start=start, end=end)
    except RangeOutsideFile as exc:
        raise BadRequest(str(exc)) from None
    return Blamed(record, _with_commits(ctx.ensure(), groups), digest)


def _with_commits(repo: pygit2.Repository, groups: list[BlameGroup]) -> list[BlameRange]:
    commits: dict[str, pygit2.Commit] = {}
    out: list[BlameRange] = []
    for group in groups:
        commit = commits.get(group.sha)
        if commit is None:
            commit = commits[group.sha] = repo[group.sha].peel(pygit2.Commit)
        out.append(BlameRange(commit=commit, lines=group.lines))
    return out


# ---------------------------------------------------------------------------- writes


def _content(p: FileWrite) -> bytes:
    if p.encoding == "text":
        try:
            return p.content.encode("utf-8")
        except UnicodeEncodeError:
            raise ParamError("content is invalid") from None
    # Line-wrapped or unpadded base64 is still base64; anything else is refused.
    text = "".join(p.content.split())
    if not _BASE64.fullmatch(text):
        raise ParamError("content is invalid")
    bare = text.rstrip("=")
    try:
        return base64.b64decode(bare + "=" * (-len(bare) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ParamError("content is invalid") from None


def _actions(change: Change, path: str, p: FileDelete) -> list[FileAction]:
    if change == "delete":
        return [FileAction("delete", path, last_commit_id=p.last_commit_id)]
    assert isinstance(p, FileWrite)
    content = _content(p)
    if change == "create":
        return [FileAction("create", path, content=content, execute_filemode=bool(p.execute_filemode))]
    actions = [FileAction("update", path, content=content, last_commit_id=p.last_commit_id)]
    if p.execute_filemode is not None:
        actions.append(FileAction("chmod", path, execute_filemode=p.execute_filemode))
    return actions


def write_file(
    db: Session, actor: Actor, ident: str, path: str, p: FileDelete, settings: Settings, change: Change
) -> str:
    """Commit one file change onto `p.branch`; returns the branch. Every refusal is a 400 with
    GitLab's message (Commits::CreateService and Gitaly's index errors)."""
    ctx = repositories.for_write(db, actor, ident, settings)
    if not repositories.may_push(db, actor, ctx.subject, p.branch):
        raise BadRequest(PUSH_REFUSED, raw=True)
    if any(part in ("", ".") for part in path.split("/")):
        raise BadRequest(f"{INVALID_PATH}: {path}", raw=True)
    repo = ctx.ensure()
    empty = not git_files.has_branches(repo)
    start: pygit2.Commit | None = None
    if not empty:
        start_name = p.start_branch or p.branch
        start_tip = branch_tip(repo, start_name)
        if start_tip is None:
            raise BadRequest(NOT_ON_BRANCH, raw=True)
        if start_name != p.branch and branch_tip(repo, p.branch) is not None:
            raise BadRequest(
                f"A branch called '{p.branch}' already exists. Switch to that branch in order to make changes",
                raw=True,
            )
        start = repo[start_tip].peel(pygit2.Commit)
    if branch_tip(repo, p.branch) is None and not names.valid_new_branch(p.branch):
        raise BadRequest(
            f"Something went wrong when we tried to create '{p.branch}' for you: Branch name is invalid",
            raw=True,
        )
    if change != "create" and start is not None:
        # An existing file may be stored under a name that isn't UTF-8 (kiln.git.files).
        found = git_files.find_file(repo, start, path)
        if found is not None:
            path = found.git_path
    actions = _actions(change, path, p)
    user = actor.user
    author = Person(p.author_name or user.name, p.author_email or user.email)
    try:
        commit, before = commit_actions(
            repo,
            branch=p.branch,
            actions=actions,
            message=p.commit_message,
            author=author,
            committer=Person(user.name, user.email),
            start=start,
        )
    except ActionFailed as exc:
        raise BadRequest(str(exc), raw=True) from None
    except EmptyCommit:
        raise BadRequest(NO_CHANGES, raw=True) from None
    except (ConcurrentUpdate, InvalidRefName):
        raise BadRequest(
            f"Could not update branch {p.branch}. Please refresh and try again.", raw=True
        ) from None
    with transaction(db):
        if empty:
            repositories.adopt_first_branch(db, ctx.project, repo, p.branch)
        repositories.record_push(
            db, ctx.project, actor, f"refs/heads/{p.branch}", before, str(commit.id), repo
        )
    return p.branch
