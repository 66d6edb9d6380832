"""Records of a repository's files as the files API reads them from git: a file at a ref,
its raw content, its blame ranges. Entities render these; services build them."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass

import pygit2

from kiln.git import files as git_files


@dataclass(slots=True)
class Content:
    """A small blob's bytes to serve raw, read whole and sent in pieces (a large blob is read
    from git in pieces instead: git_files.open_blob)."""

    data: bytes
    binary: bool

    def chunks(self) -> Iterator[bytes]:
        return git_files.chunks(self.data)


@dataclass(slots=True)
class FileRecord:
    file: git_files.FoundFile
    ref: str
    commit_id: str
    last_commit_id: str
    # The repository, commit and path: all a file's view is made of besides its ref.
    key: Hashable
    # Where the file's bytes are read from, when a view needs them.
    repo: pygit2.Repository
    project_id: int

    @property
    def blob(self) -> pygit2.Blob:
        return self.repo[self.file.blob_id].peel(pygit2.Blob)

    @property
    def data(self) -> bytes:
        return self.blob.data

    @property
    def content_sha256(self) -> str:
        """Read in pieces and remembered by blob: a large file is never read whole for it."""
        return git_files.blob_sha256(self.repo, self.file.blob_id, self.file.size)

    def content(self) -> Content:
        blob = self.blob
        return Content(blob.data, blob.is_binary)


@dataclass(slots=True)
class BlameRange:
    commit: pygit2.Commit
    lines: list[str]
