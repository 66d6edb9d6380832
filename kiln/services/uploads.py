"""Files uploaded to a project (for Markdown to link), stored under an unguessable secret
and served back at their URL to whoever may read the project."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound, PayloadTooLarge
from kiln.models import Namespace, Project, ProjectStatistics, Upload
from kiln.policy import Action
from kiln.queries import uploads as upload_reads
from kiln.queries.uploads import UploadRow
from kiln.services import instance_settings, subjects
from kiln.storage import Storage, user_avatar_key


@dataclass(slots=True)
class Uploaded:
    upload: Upload
    project: Project
    namespace: Namespace


def upload(
    db: Session, actor: Actor, ident: str, filename: str, data: Any, size: int, storage: Storage
) -> Uploaded:
    s = subjects.project(db, actor, ident, Action.UPLOAD_FILE)
    inst = instance_settings.current(db)
    limit = int(inst["max_attachment_size"]) * 1024 * 1024
    if size > limit:
        raise PayloadTooLarge()
    name = sanitize_filename(filename)
    secret = secrets.token_hex(16)
    key = f"project/{s.project.id}/{secret}/{name}"
    written = storage.put(key, data)
    try:
        with transaction(db):
            row = Upload(
                project_id=s.project.id,
                secret=secret,
                filename=name,
                size=written,
                storage_key=key,
                uploaded_by_id=actor.user.id,
            )
            db.add(row)
            db.execute(
                update(ProjectStatistics)
                .where(ProjectStatistics.project_id == s.project.id)
                .values(uploads_size=ProjectStatistics.uploads_size + written)
            )
            db.flush()
    except BaseException:
        storage.delete_prefix(f"project/{s.project.id}/{secret}")
        raise
    return Uploaded(upload=row, project=s.project, namespace=s.namespace)


def sanitize_filename(filename: str) -> str:
    """The last path component, with characters that would break a URL or a path replaced,
    and short enough for a file system to store."""
    base = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
    cleaned = "".join(ch if ch.isalnum() or ch in "._-+" else "_" for ch in base).lstrip(".")
    return _shortened(cleaned) or "file"


# The longest file name (in bytes) that common file systems store.
NAME_BYTES = 255
# An extension longer than this is part of the name, and may be cut.
_EXTENSION_BYTES = 16


def _shortened(name: str) -> str:
    """`name` cut to NAME_BYTES of UTF-8 (never inside a character), its extension kept: the
    extension is what the file is served as."""
    if len(name.encode()) <= NAME_BYTES:
        return name
    stem, dot, ext = name.rpartition(".")
    if not stem or len(ext.encode()) > _EXTENSION_BYTES:
        stem, dot, ext = name, "", ""
    room = NAME_BYTES - len((dot + ext).encode())
    return stem.encode()[:room].decode("utf-8", "ignore") + dot + ext


def find_upload(db: Session, actor: Actor | None, project_path: str, secret: str, filename: str) -> UploadRow:
    """An upload served back at its URL: hidden projects and wrong secrets are 404 alike."""
    s = subjects.find_project(db, actor, project_path, rows=True)
    if s is None or not policy.may(actor, Action.READ_PROJECT, s):
        raise NotFound()
    row = upload_reads.project_upload(db, s.project.id, secret, filename)
    if row is None:
        raise NotFound()
    return row


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file in the uploads storage as it goes out: the name is what its type and its
    Content-Disposition are decided from, the size its length when the row knows it."""

    key: str
    name: str
    size: int | None = None


def project_upload(
    db: Session, actor: Actor | None, project_path: str, secret: str, filename: str, files: Storage
) -> StoredFile:
    """A project's upload to serve: `find_upload`, and its bytes still in storage."""
    row = find_upload(db, actor, project_path, secret, filename)
    if not files.exists(row.storage_key):
        raise NotFound()
    return StoredFile(row.storage_key, row.filename, row.size)


def user_avatar(files: Storage, user_id: int, filename: str) -> StoredFile:
    """A user's avatar (public, as GitLab serves them): a plain file name that exists."""
    key = user_avatar_key(user_id, filename)
    if "/" in filename or filename.startswith(".") or len(filename.encode()) > NAME_BYTES:
        raise NotFound()
    if not files.exists(key):
        raise NotFound()
    return StoredFile(key, filename)
