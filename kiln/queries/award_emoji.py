"""Emoji reaction reads: an awardable's reactions in the order they were given, and one of
them. The ORM `AwardEmoji` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import AwardEmoji
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_column, run

_AWARDS = AwardEmoji.__table__
_COLUMNS = ("id", "name", "user_id", "created_at", "updated_at", "awardable_id", "awardable_type")

AwardRow = namedtuple("AwardRow", _COLUMNS)  # type: ignore[misc]


def _of_awardable() -> Any:
    return (_AWARDS.c.awardable_type == bindparam("awardable_type")) & (
        _AWARDS.c.awardable_id == bindparam("awardable_id")
    )


@cache
def _list_statement() -> Select[Any]:
    columns = [row_column(_AWARDS.c[name]) for name in _COLUMNS]
    return select(*columns).where(_of_awardable()).order_by(_AWARDS.c.id)


@cache
def _one_statement() -> Select[Any]:
    return _list_statement().where(_AWARDS.c.id == bindparam("award_id"))


def page_of_awardable(db: Session, awardable_type: str, awardable_id: int, page: Page) -> PageResult:
    values = {"awardable_type": awardable_type, "awardable_id": awardable_id}
    result = offset_page(db, _list_statement(), page, core=True, params=values)
    result.items = [AwardRow._make(row) for row in result.items]
    return result


def award_of(db: Session, awardable_type: str, awardable_id: int, award_id: int) -> AwardRow | None:
    values = {"awardable_type": awardable_type, "awardable_id": awardable_id, "award_id": award_id}
    row = run(db, _one_statement(), values).first()
    return None if row is None else AwardRow._make(row)
