"""Namespace finders: a user's namespace or a group by id or full path."""

from __future__ import annotations

from urllib.parse import unquote

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln.models import Namespace


def by_ident(db: Session, ident: str) -> Namespace | None:
    """A namespace by numeric id or full path (case-insensitive; `%2F` decoded here)."""
    ident = unquote(ident)
    if ident.isdigit():
        return db.get(Namespace, int(ident))
    return db.scalars(select(Namespace).where(func.lower(Namespace.full_path) == ident.lower())).first()
