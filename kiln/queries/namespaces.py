"""Namespace finders (a user's namespace or a group by id or full path) and the record the
namespaces API renders."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln.models import Namespace, User


def by_ident(db: Session, ident: str) -> Namespace | None:
    """A namespace by numeric id or full path (case-insensitive; `%2F` decoded here)."""
    ident = unquote(ident)
    if ident.isdigit():
        return db.get(Namespace, int(ident))
    return db.scalars(select(Namespace).where(func.lower(Namespace.full_path) == ident.lower())).first()


@dataclass(slots=True)
class NamespaceRecord:
    """A namespace with the counts its view shows to those who administer it."""

    namespace: Namespace
    owner: User | None = None
    can_admin: bool = False
    admin_view: bool = False
    members_count: int = 0
    billable_members_count: int = 0
    projects_count: int = 0
    root_repository_size: int = 0
