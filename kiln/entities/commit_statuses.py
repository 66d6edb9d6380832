"""Commit status views (GitLab's CommitStatus entity): an external status or a job of the
commit's pipelines."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.commit_statuses import StatusRow
    from kiln.queries.users import UserRow


def commit_status(row: StatusRow, author: UserRow | None, base: str) -> dict[str, Any]:
    return {
        "id": row.id,
        "sha": row.sha,
        "ref": row.ref,
        "status": row.status,
        "name": row.name,
        "target_url": row.target_url,
        "description": row.description,
        "created_at": iso(row.created_at),
        "started_at": iso(row.started_at),
        "finished_at": iso(row.finished_at),
        "allow_failure": row.allow_failure,
        "coverage": row.coverage,
        "pipeline_id": row.pipeline_id,
        "author": user_basic(author, base) if author is not None else None,
    }
