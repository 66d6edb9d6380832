"""Factories: rows for a test's set-up, written through the models (fast) with the same
rules the services apply. One module per resource family; `Factory` gathers them."""

from __future__ import annotations

from sqlalchemy.orm import Session

from kiln.config import Settings
from tests.factories.ci import CiFactory
from tests.factories.merge_requests import MergeRequestFactory
from tests.factories.planning import PlanningFactory
from tests.factories.projects import ProjectFactory
from tests.factories.repositories import RepositoryFactory
from tests.factories.users import MadeUser, UserFactory

__all__ = ["Factory", "MadeUser"]


class Factory(
    CiFactory, MergeRequestFactory, PlanningFactory, RepositoryFactory, ProjectFactory, UserFactory
):
    def __init__(self, db: Session, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.counter = 0

    def seq(self) -> int:
        self.counter += 1
        return self.counter
