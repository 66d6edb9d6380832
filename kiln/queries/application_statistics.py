"""What the instance holds, counted in one statement (GitLab's application statistics)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln.models import CommitNote, Issue, MergeRequest, Milestone, Namespace, Note, Project, SSHKey, User
from kiln.models.namespaces import KIND_GROUP
from kiln.queries.reads import run

# Users who are people or act for them, as GitLab's active users count them (internal users
# such as the ghost user are not counted).
COUNTED_USER_TYPES = ("human", "project_bot", "service_user", "service_account")


@dataclass(slots=True, frozen=True)
class Counts:
    forks: int
    issues: int
    merge_requests: int
    notes: int
    milestones: int
    ssh_keys: int
    users: int
    groups: int
    projects: int
    active_users: int


def _count(model: Any, *where: Any) -> Any:
    return select(func.count()).select_from(model).where(*where).scalar_subquery()


_COUNTS = select(
    _count(Project, Project.forked_from_id.is_not(None)),
    _count(Issue),
    _count(MergeRequest),
    # Notes on commits and on issues, merge requests and epics (system notes too, as GitLab's Note.count).
    _count(CommitNote) + _count(Note),
    _count(Milestone),
    _count(SSHKey),
    _count(User),
    _count(Namespace, Namespace.kind == KIND_GROUP),
    _count(Project),
    _count(User, User.state == "active", User.user_type.in_(COUNTED_USER_TYPES)),
)


def counts(db: Session) -> Counts:
    row = run(db, _COUNTS).first()
    return Counts(*(int(value or 0) for value in row))
