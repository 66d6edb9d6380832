"""Accepting the terms of service (GitLab's web `-/users/terms`): while the instance enforces
them, a user who has not accepted the latest version is refused on the API and git
(auth.credentials); accepting a version records it on the user."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound
from kiln.models import Term, User


@dataclass(slots=True, frozen=True)
class LatestTerms:
    id: int
    terms: str
    accepted: bool | None  # None: nobody is signed in


def latest(db: Session, viewer: Actor | None) -> LatestTerms:
    """The version a user is asked to accept (the web page anyone may read)."""
    row = db.execute(select(Term.id, Term.terms).order_by(Term.id.desc()).limit(1)).first()
    if row is None:
        raise NotFound("Term")
    accepted = None if viewer is None else viewer.user.accepted_term_id == row.id
    return LatestTerms(id=row.id, terms=row.terms, accepted=accepted)


def accept(db: Session, actor: Actor, term_id: int) -> None:
    """Any stored version may be accepted; only the latest lets the user in."""
    with transaction(db):
        if db.scalar(select(Term.id).where(Term.id == term_id)) is None:
            raise NotFound("Term")
        db.execute(update(User).where(User.id == actor.id).values(accepted_term_id=term_id))
