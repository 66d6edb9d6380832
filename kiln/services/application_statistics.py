"""Application statistics: how much the instance holds, for administrators."""

from __future__ import annotations

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.policy import Action
from kiln.queries import application_statistics as finder
from kiln.queries.application_statistics import Counts


def read(db: Session, actor: Actor) -> Counts:
    policy.require(actor, Action.ADMIN_SETTINGS)
    return finder.counts(db)
