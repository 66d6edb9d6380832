"""Trigger token reads: a project's tokens and one token. The ORM model is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models.ci import PipelineTrigger
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_TRIGGERS = PipelineTrigger.__table__
_COLUMNS = (
    "id",
    "project_id",
    "owner_id",
    "description",
    "token_nonce",
    "last_used",
    "expires_at",
    "created_at",
    "updated_at",
)
TriggerRow = namedtuple("TriggerRow", _COLUMNS)  # type: ignore[misc]


def _selected() -> list[Any]:
    return [_TRIGGERS.c[n] for n in _COLUMNS]


@cache
def _list_statement() -> Select[Any]:
    return (
        select(*_selected()).where(_TRIGGERS.c.project_id == bindparam("project_id")).order_by(_TRIGGERS.c.id)
    )


def page_of_project(db: Session, project_id: int, page: Page) -> PageResult:
    result = offset_page(db, _list_statement(), page, core=True, params={"project_id": project_id})
    result.items = [TriggerRow._make(r) for r in result.items]
    return result


@cache
def _one_statement() -> Select[Any]:
    return select(*_selected()).where(
        _TRIGGERS.c.id == bindparam("trigger_id"), _TRIGGERS.c.project_id == bindparam("project_id")
    )


def trigger_of(db: Session, project_id: int, trigger_id: int) -> TriggerRow | None:
    row = run(db, _one_statement(), {"trigger_id": trigger_id, "project_id": project_id}).first()
    return None if row is None else TriggerRow._make(row)
