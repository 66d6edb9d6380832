"""Resource event reads: a page of one target's label, milestone, state or weight events,
oldest first, and the labels and milestones they name (one statement each, by ids)."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from sqlalchemy import Select, Table, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import (
    Label,
    Milestone,
    ResourceLabelEvent,
    ResourceMilestoneEvent,
    ResourceStateEvent,
    ResourceWeightEvent,
)
from kiln.pagination import Page, PageResult
from kiln.queries.milestones import MilestoneRow
from kiln.queries.paging import offset_page
from kiln.queries.reads import reusable, row_columns, run
from kiln.queries.users import UserRow

Kind = Literal["label", "milestone", "state", "weight"]
_TABLES: dict[str, Table] = {
    "label": ResourceLabelEvent.__table__,
    "milestone": ResourceMilestoneEvent.__table__,
    "state": ResourceStateEvent.__table__,
    "weight": ResourceWeightEvent.__table__,
}
EVENT_ROWS = {
    kind: namedtuple(f"{kind.title()}EventRow", [c.key for c in t.c]) for kind, t in _TABLES.items()
}  # type: ignore[misc]

_LABELS = Label.__table__
_MILESTONES = Milestone.__table__
LabelRow = namedtuple("LabelRow", ["id", "title", "color", "description"])  # type: ignore[misc]


@dataclass(slots=True)
class Events:
    """Events of one target (a page, or one with `page` None) with the users, labels and
    milestones they name."""

    items: list[Any]
    page: PageResult | None
    users: dict[int, UserRow]
    labels: dict[int, LabelRow]
    milestones: dict[int, MilestoneRow]


@cache
def _page_statement(kind: str) -> Select[Any]:
    table = _TABLES[kind]
    return (
        select(*row_columns(table))
        .where(table.c.target_type == bindparam("target_type"), table.c.target_id == bindparam("target_id"))
        .order_by(table.c.id)
    )


def page_of(db: Session, kind: Kind, target_type: str, target_id: int, page: Page) -> PageResult:
    values = {"target_type": target_type, "target_id": target_id}
    result = offset_page(db, _page_statement(kind), page, core=True, params=values)
    result.items = [EVENT_ROWS[kind]._make(row) for row in result.items]
    return result


@cache
def _one_statement(kind: str) -> Select[Any]:
    table = _TABLES[kind]
    return select(*row_columns(table)).where(
        table.c.id == bindparam("event_id"),
        table.c.target_type == bindparam("target_type"),
        table.c.target_id == bindparam("target_id"),
    )


def one_of(db: Session, kind: Kind, target_type: str, target_id: int, event_id: int) -> Any | None:
    """An event by id, only if it is the target's."""
    values = {"event_id": event_id, "target_type": target_type, "target_id": target_id}
    row = run(db, _one_statement(kind), values).first()
    return None if row is None else EVENT_ROWS[kind]._make(row)


@cache
def _labels_statement() -> Select[Any]:
    return reusable(
        select(_LABELS.c.id, _LABELS.c.title, _LABELS.c.color, _LABELS.c.description).where(
            _LABELS.c.id.in_(bindparam("ids", expanding=True))
        )
    )


def labels_by_ids(db: Session, ids: list[int]) -> dict[int, LabelRow]:
    if not ids:
        return {}
    return {r[0]: LabelRow._make(r) for r in run(db, _labels_statement(), {"ids": sorted(set(ids))})}
