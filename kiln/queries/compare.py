"""Compare reads kept in the database: walking a fork network up to its root."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import Project
from kiln.queries.reads import run

_PROJECTS = Project.__table__


@cache
def _parent_statement() -> Select[Any]:
    return select(_PROJECTS.c.forked_from_id).where(_PROJECTS.c.id == bindparam("id"))


def network_root(db: Session, project_id: int, forked_from_id: int | None) -> int:
    """The project every fork in the network of `project_id` descends from (a parent that no
    longer exists ends the walk, as does a loop)."""
    seen = {project_id}
    current, parent = project_id, forked_from_id
    while parent is not None and parent not in seen:
        row = run(db, _parent_statement(), {"id": parent}).first()
        if row is None:
            break
        seen.add(parent)
        current, parent = parent, row[0]
    return current
