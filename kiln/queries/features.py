"""Feature flag reads: a flag's gates, every set flag's gates, and the actors a flag may be
set for, found by username or path. The ORM `FeatureGate` is for writes."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import FeatureGate, Namespace, Project, User
from kiln.models.namespaces import KIND_GROUP
from kiln.queries.reads import run

_GATES = FeatureGate.__table__

BOOLEAN = "boolean"
ACTORS = "actors"
GROUPS = "groups"
PERCENTAGE_OF_ACTORS = "percentage_of_actors"
PERCENTAGE_OF_TIME = "percentage_of_time"

State = Literal["on", "off", "conditional"]

GateRow = namedtuple("GateRow", ["feature_key", "key", "value"])  # type: ignore[misc]
# A project found by its path: its id and its repository's full path.
NamedProject = namedtuple("NamedProject", ["id", "full_path"])  # type: ignore[misc]
NamedNamespace = namedtuple("NamedNamespace", ["id", "kind", "full_path"])  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class Definition:
    """A flag kiln knows, as GitLab's YAML definitions describe theirs."""

    name: str
    type: str
    group: str | None
    milestone: str | None
    default_enabled: bool
    introduced_by_url: str | None = None
    rollout_issue_url: str | None = None
    log_state_changes: bool | None = None


@dataclass(slots=True)
class Flag:
    """A flag that has been set: its name, its gates, and its definition if kiln has one."""

    name: str
    gates: list[GateRow]
    definition: Definition | None = None

    def values(self, key: str) -> list[str]:
        return [g.value for g in self.gates if g.key == key]

    def percentage(self, key: str) -> float:
        found = self.values(key)
        return float(found[0]) if found else 0.0

    @property
    def boolean(self) -> bool:
        return "true" in self.values(BOOLEAN)

    @property
    def state(self) -> State:
        """Flipper's: on for everyone, on for some (conditional), or off."""
        of_time, of_actors = self.percentage(PERCENTAGE_OF_TIME), self.percentage(PERCENTAGE_OF_ACTORS)
        if self.boolean or of_time >= 100 or of_actors >= 100:
            return "on"
        if self.values(ACTORS) or self.values(GROUPS) or of_time > 0 or of_actors > 0:
            return "conditional"
        return "off"


def _columns() -> list[Any]:
    return [_GATES.c.feature_key, _GATES.c.key, _GATES.c.value]


@cache
def _of_flag_statement() -> Select[Any]:
    return select(*_columns()).where(_GATES.c.feature_key == bindparam("name")).order_by(_GATES.c.id)


@cache
def _all_statement() -> Select[Any]:
    return select(*_columns()).order_by(_GATES.c.feature_key, _GATES.c.id)


def gates_of(db: Session, name: str) -> list[GateRow]:
    """The flag's gates, in one statement: what deciding whether it is on reads."""
    return [GateRow._make(row) for row in run(db, _of_flag_statement(), {"name": name})]


def all_gates(db: Session) -> list[GateRow]:
    """Every gate of every flag that has been set, by flag name."""
    return [GateRow._make(row) for row in run(db, _all_statement())]


def users_named(db: Session, usernames: list[str]) -> dict[str, int]:
    """Lower-cased username → user id, for those that exist."""
    stmt = select(func.lower(User.username), User.id).where(func.lower(User.username).in_(usernames))
    return {str(name): int(uid) for name, uid in db.execute(stmt).all()}


def namespaces_at(db: Session, paths: list[str], *, groups_only: bool) -> dict[str, NamedNamespace]:
    """Lower-cased full path → namespace, for those that exist (groups alone if asked)."""
    stmt = select(Namespace.id, Namespace.kind, Namespace.full_path).where(
        func.lower(Namespace.full_path).in_(paths)
    )
    if groups_only:
        stmt = stmt.where(Namespace.kind == KIND_GROUP)
    return {row.full_path.lower(): NamedNamespace._make(row) for row in db.execute(stmt).all()}


def projects_at(db: Session, paths: list[str]) -> dict[str, NamedProject]:
    """Lower-cased full path → project, for those that exist."""
    full_path = Namespace.full_path + "/" + Project.path
    stmt = (
        select(Project.id, full_path)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(func.lower(full_path).in_(paths))
    )
    return {path.lower(): NamedProject(pid, path) for pid, path in db.execute(stmt).all()}
