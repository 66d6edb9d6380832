"""Upload reads: the file served back at a project's upload URL, as an `UploadRow`. The ORM
`Upload` is for storing a new file."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import Upload
from kiln.queries.reads import run

_UPLOADS = Upload.__table__

UploadRow = namedtuple("UploadRow", ["filename", "size", "storage_key"])


@cache
def _project_upload_statement() -> Select[Any]:
    return (
        select(_UPLOADS.c.filename, _UPLOADS.c.size, _UPLOADS.c.storage_key)
        .where(
            _UPLOADS.c.project_id == bindparam("project_id"),
            _UPLOADS.c.secret == bindparam("secret"),
            _UPLOADS.c.filename == bindparam("filename"),
        )
        .limit(1)
    )


def project_upload(db: Session, project_id: int, secret: str, filename: str) -> UploadRow | None:
    values = {"project_id": project_id, "secret": secret, "filename": filename}
    row = run(db, _project_upload_statement(), values).first()
    return None if row is None else UploadRow._make(row)
