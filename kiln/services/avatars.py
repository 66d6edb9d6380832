"""Avatars of projects and groups: checked as GitLab checks them (an image extension it
allows, 200 KiB at most), stored in the uploads storage at the path their URL names, and
served to whoever may see their project or group.

A new avatar is written before the row that names it and removed again if that row is not
written, so a refused or failed request leaves no file behind; the file it replaces goes
once the row is committed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import NotFound, ParamError
from kiln.policy import Action
from kiln.schemas._types import Upload
from kiln.services import subjects
from kiln.services.uploads import NAME_BYTES, StoredFile, sanitize_filename
from kiln.storage import Storage, avatar_key

FORMATS = ("png", "jpg", "jpeg", "gif", "bmp", "tiff", "ico", "webp")
MAX_BYTES = 200 * 1024
REMOVE = ""


def requested(params: Any) -> Upload | str | None:
    """What the request asks of the avatar: a new image, REMOVE (`avatar=""`), or None
    (not given). Anything else is GitLab's 400 for a parameter of the wrong type."""
    if "avatar" not in params.given():
        return None
    avatar = params.avatar
    if isinstance(avatar, Upload):
        return avatar
    if avatar is None or avatar == REMOVE:
        return REMOVE
    raise ParamError("avatar is invalid")


def errors(avatar: Upload | str | None) -> dict[str, list[str]]:
    """The model errors GitLab gives an avatar it refuses (none for a removal)."""
    if not isinstance(avatar, Upload):
        return {}
    ext = PurePosixPath(avatar.filename or "").suffix.lower().lstrip(".")
    if ext not in FORMATS:
        return {
            "avatar": [
                "file format is not supported. Please try one of the following supported formats: "
                + ", ".join(FORMATS)
            ]
        }
    if avatar.size() > MAX_BYTES:
        return {"avatar": ["is too big (should be at most 200 KiB)"]}
    return {}


@dataclass(slots=True)
class Change:
    """One avatar change of one owner: `apply` inside the write, `undo` if it fails,
    `finish` once it is committed."""

    files: Storage
    kind: str
    owner_id: int
    old: str | None
    new: str | None = None
    _written: list[str] = field(default_factory=list)

    def apply(self, avatar: Upload | str) -> str | None:
        """The avatar_path to store: the new image's key (written now), or None."""
        if not isinstance(avatar, Upload):
            self.new = None
            return None
        key = avatar_key(self.kind, self.owner_id, sanitize_filename(avatar.filename))
        avatar.file.seek(0)
        self.files.put(key, avatar.file)
        if key != self.old:
            self._written.append(key)
        self.new = key
        return key

    def undo(self) -> None:
        for key in self._written:
            self.files.delete(key)
        self._written.clear()

    def finish(self) -> None:
        if self.old and self.old != self.new:
            self.files.delete(self.old)


def copy(files: Storage, kind: str, path: str | None, owner_id: int) -> str | None:
    """A copy of the avatar stored at `path` as `owner_id`'s (a fork's): its key, or None
    when there is none to copy. Each owner's avatar is its own file, so the source may change
    or lose its avatar without the copy's URL breaking."""
    if not path or not files.exists(path):
        return None
    key = avatar_key(kind, owner_id, path.rsplit("/", 1)[-1])
    with files.open(path) as data:
        files.put(key, data)
    return key


def _served(files: Storage, path: str | None, filename: str | None) -> StoredFile:
    """The stored avatar `path`, when it is the one the URL names (any name for None)."""
    if not path:
        raise NotFound()
    name = path.rsplit("/", 1)[-1]
    if filename is not None and (filename != name or len(filename.encode()) > NAME_BYTES):
        raise NotFound()
    if not files.exists(path):
        raise NotFound()
    return StoredFile(path, name)


def project_avatar(
    db: Session, actor: Actor | None, project_id: int, filename: str, files: Storage
) -> StoredFile:
    """/uploads/-/system/project/avatar/:id/:filename: for whoever may see the project; a
    hidden project's avatar is a 404 like a missing one."""
    s = subjects.find_project(db, actor, str(project_id), rows=True)
    if s is None or not policy.may(actor, Action.READ_PROJECT, s):
        raise NotFound()
    return _served(files, s.project.avatar_path, filename)


def group_avatar(
    db: Session, actor: Actor | None, group_id: int, filename: str, files: Storage
) -> StoredFile:
    """/uploads/-/system/group/avatar/:id/:filename: for whoever may see the group."""
    s = subjects.find_group(db, actor, str(group_id), rows=True)
    if s is None or not policy.may(actor, Action.READ_GROUP, s):
        raise NotFound()
    return _served(files, s.group.avatar_path, filename)


def project_avatar_download(db: Session, actor: Actor | None, ident: str, files: Storage) -> StoredFile:
    """GET /projects/:id/avatar."""
    s = subjects.project(db, actor, ident, rows=True)
    try:
        return _served(files, s.project.avatar_path, None)
    except NotFound:
        raise NotFound("Avatar") from None


def group_avatar_download(db: Session, actor: Actor | None, ident: str, files: Storage) -> StoredFile:
    """GET /groups/:id/avatar."""
    s = subjects.group(db, actor, ident, rows=True)
    try:
        return _served(files, s.group.avatar_path, None)
    except NotFound:
        raise NotFound("Avatar") from None
