"""The one storage interface for files that are not git objects (uploads, avatars, packages,
artifacts, exports). Local folders now; an S3-compatible store implements the same protocol."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

if TYPE_CHECKING:
    from kiln.config import Settings

CHUNK = 1024 * 1024


class Storage(Protocol):
    def put(self, key: str, data: BinaryIO) -> int: ...
    def open(self, key: str) -> BinaryIO: ...
    def exists(self, key: str) -> bool: ...
    def delete(self, key: str) -> None: ...
    def delete_prefix(self, prefix: str) -> None: ...
    def iter_bytes(self, key: str) -> Iterator[bytes]: ...
    def write_at(self, key: str, offset: int, data: bytes) -> int: ...
    def size(self, key: str) -> int: ...


class LocalStorage:
    """Keys are relative paths under `root`; writes land atomically (temp file + rename)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if path != self.root and self.root not in path.parents:
            raise ValueError(f"storage key escapes its root: {key!r}")
        return path

    def put(self, key: str, data: BinaryIO) -> int:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := data.read(CHUNK):
                    out.write(chunk)
                    size += len(chunk)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return size

    def open(self, key: str) -> BinaryIO:
        return self._path(key).open("rb")

    def exists(self, key: str) -> bool:
        try:
            return self._path(key).is_file()
        except OSError:  # a name no file system stores (too long) names nothing stored
            return False

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        path = self._path(prefix)
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def iter_bytes(self, key: str) -> Iterator[bytes]:
        with self.open(key) as fh:
            while chunk := fh.read(CHUNK):
                yield chunk

    def write_at(self, key: str, offset: int, data: bytes) -> int:
        """`data` written at `offset` and whatever followed it cut off (a job's log taken up
        again where the runner says); the new size. Creates the file at offset 0."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("r+b" if path.exists() else "w+b") as fh:
            fh.seek(offset)
            fh.write(data)
            fh.truncate()
            return fh.tell()

    def size(self, key: str) -> int:
        """The stored size of `key`; 0 when nothing is stored."""
        try:
            return self._path(key).stat().st_size
        except FileNotFoundError:
            return 0


def uploads(settings: Settings) -> Storage:
    """Where uploads and avatars live: the one place that says so."""
    return LocalStorage(settings.data_dir / "uploads")


def ci(settings: Settings) -> Storage:
    """Where jobs' logs and artifacts live."""
    return LocalStorage(settings.data_dir / "artifacts")


def trace_key(project_id: int, job_id: int) -> str:
    """A job's log in the CI storage."""
    return f"{project_id}/jobs/{job_id}/trace.log"


def artifact_key(project_id: int, job_id: int, file_type: str) -> str:
    """One of a job's artifact files (its archive, metadata, or a report) in the CI storage."""
    return f"{project_id}/jobs/{job_id}/artifacts/{file_type}"


def job_prefix(project_id: int, job_id: int) -> str:
    """Everything stored for one job (erase, pipeline delete)."""
    return f"{project_id}/jobs/{job_id}"


def user_avatar_key(user_id: int, filename: str | None = None) -> str:
    """A user's avatar in the uploads storage, and the path its URL serves it at (GitLab's):
    the user's folder, or one file in it."""
    folder = f"-/system/user/avatar/{user_id}"
    return folder if filename is None else f"{folder}/{filename}"


def avatar_key(kind: str, owner_id: int, filename: str | None = None) -> str:
    """A project's or group's avatar (`kind` "project" or "group") in the uploads storage,
    and the path its URL serves it at (GitLab's): the owner's folder, or one file in it."""
    folder = f"-/system/{kind}/avatar/{owner_id}"
    return folder if filename is None else f"{folder}/{filename}"
