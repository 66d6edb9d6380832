"""Groups, projects and memberships, written through the models with the services' rules."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.db import transaction
from kiln.models import Member, Namespace, Project, ProjectStatistics
from kiln.models.namespaces import KIND_GROUP, OWNER
from kiln.services.namespaces import place
from kiln.services.project_creation import runners_token_columns
from tests.factories.users import MadeUser


class ProjectFactory:
    db: Session
    settings: Settings

    def seq(self) -> int:
        raise NotImplementedError

    def group(
        self,
        *,
        owners: list[MadeUser] | None = None,
        path: str | None = None,
        parent: Namespace | None = None,
        visibility: str = "private",
        members: dict[Any, int] | None = None,
        **fields: Any,
    ) -> Namespace:
        """A group (under `parent` when given) with Owner members and other `members`."""
        n = self.seq()
        path = path or f"group{n}"
        with transaction(self.db):
            group = Namespace(
                kind=KIND_GROUP,
                name=fields.pop("name", path),
                path=path,
                parent_id=parent.id if parent is not None else None,
                visibility=visibility,
                **fields,
            )
            self.db.add(group)
            self.db.flush()
            place(self.db, group, parent)
            for owner in owners or []:
                self.db.add(Member(namespace_id=group.id, user_id=owner.id, access_level=OWNER))
            for user, level in (members or {}).items():
                self.db.add(Member(namespace_id=group.id, user_id=user.id, access_level=level))
        return group

    def project(
        self,
        *,
        owner: MadeUser | None = None,
        namespace: Namespace | None = None,
        visibility: str = "private",
        path: str | None = None,
        members: dict[Any, int] | None = None,
        **fields: Any,
    ) -> Project:
        """A project in `namespace`, or in `owner`'s own namespace (root's when neither)."""
        n = self.seq()
        path = path or f"project{n}"
        with transaction(self.db):
            if namespace is None:
                owner_id = owner.id if owner is not None else 1
                namespace = self.db.scalars(select(Namespace).where(Namespace.owner_id == owner_id)).one()
            project = Project(
                namespace_id=namespace.id,
                creator_id=owner.id if owner is not None else 1,
                name=fields.pop("name", path),
                path=path,
                visibility=visibility,
                **runners_token_columns(self.settings),
                **fields,
            )
            self.db.add(project)
            self.db.flush()
            self.db.add(ProjectStatistics(project_id=project.id))
            for user, level in (members or {}).items():
                self.db.add(Member(project_id=project.id, user_id=user.id, access_level=level))
        return project

    def member(self, source: Namespace | Project, user: MadeUser, level: int, **fields: Any) -> Member:
        with transaction(self.db):
            key = "project_id" if isinstance(source, Project) else "namespace_id"
            row = Member(user_id=user.id, access_level=level, **{key: source.id}, **fields)
            self.db.add(row)
        return row
