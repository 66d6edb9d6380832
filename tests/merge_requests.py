"""What the merge request tests share: a public project's merge request, an owner with a
project with its repository, and the system notes a merge request or an issue holds."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from kiln.models import Issue, MergeRequest, Note
from kiln.models.notes import ISSUE, MERGE_REQUEST


def owned(make: Any, **fields: Any) -> tuple[Any, Any]:
    """A user and a project with its repository that the user owns."""
    owner = make.user()
    return owner, make.project_with_repository(owner=owner, **fields)


def public_mr(make: Any, **fields: Any) -> tuple[Any, Any, MergeRequest]:
    """The owner, a public project with its repository and a merge request the owner opened in it."""
    owner = make.user()
    project = make.project_with_repository(owner=owner, visibility="public")
    return owner, project, make.merge_request(project, owner, **fields)


def fork_id(api: Any, forker: Any, upstream: Any) -> int:
    """The id of `forker`'s fork of `upstream`, made through the API."""
    r = api(forker).post(f"/projects/{upstream.id}/fork", json={})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def system_notes(db: Any, noteable: MergeRequest | Issue) -> list[str]:
    """The bodies of the system notes on a merge request or an issue, oldest first, read afresh."""
    kind = MERGE_REQUEST if isinstance(noteable, MergeRequest) else ISSUE
    noteable_id = noteable.id
    db.expire_all()
    return list(
        db.scalars(
            select(Note.body)
            .where(Note.noteable_type == kind, Note.noteable_id == noteable_id, Note.system.is_(True))
            .order_by(Note.id)
        )
    )
