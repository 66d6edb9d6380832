"""Note reads: a noteable's notes and one note (threads: queries.discussions). A caller who may not
see internal notes never gets one (the filter is part of each statement's shape), so a page
holds only notes the caller may read. The ORM `Note` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, false, select, true, tuple_
from sqlalchemy.orm import Session

from kiln.models import Note
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_column, run

_NOTES = Note.__table__
_COLUMNS = (
    "id",
    "type",
    "body",
    "author_id",
    "created_at",
    "updated_at",
    "system",
    "noteable_id",
    "noteable_type",
    "project_id",
    "group_id",
    "internal",
    "discussion_id",
    "resolvable",
    "resolved_at",
    "resolved_by_id",
    "position",
    "commit_id",
)

NoteRow = namedtuple("NoteRow", _COLUMNS)  # type: ignore[misc]

# GitLab's activity_filter: every note, only what people wrote, only what kiln wrote.
ACTIVITY_FILTERS = ("all_notes", "only_comments", "only_activity")


def columns() -> list[Any]:
    """What a NoteRow holds, times as the API renders them."""
    return [row_column(_NOTES.c[name]) for name in _COLUMNS]


def of_noteable(internal: bool) -> ColumnElement[bool]:
    """The noteable's notes; without `internal`, none of its internal notes."""
    where = and_(
        _NOTES.c.noteable_type == bindparam("noteable_type"),
        _NOTES.c.noteable_id == bindparam("noteable_id"),
    )
    return where if internal else and_(where, _NOTES.c.internal == false())


def noteable_values(noteable_type: str, noteable_id: int) -> dict[str, Any]:
    return {"noteable_type": noteable_type, "noteable_id": noteable_id}


@cache
def _list_statement(order_by: str, sort: str, activity: str, internal: bool) -> Select[Any]:
    stmt = select(*columns()).where(of_noteable(internal))
    if activity == "only_comments":
        stmt = stmt.where(_NOTES.c.system == false())
    elif activity == "only_activity":
        stmt = stmt.where(_NOTES.c.system == true())
    column = _NOTES.c[order_by]
    if sort == "asc":
        return stmt.order_by(column.asc(), _NOTES.c.id.asc())
    return stmt.order_by(column.desc(), _NOTES.c.id.desc())


def page_of_noteable(
    db: Session,
    noteable_type: str,
    noteable_id: int,
    page: Page,
    *,
    order_by: str,
    sort: str,
    activity: str,
    internal: bool,
) -> PageResult:
    """One page of the noteable's notes in the order asked for (ties by id)."""
    stmt = _list_statement(order_by, sort, activity, internal)
    result = offset_page(db, stmt, page, core=True, params=noteable_values(noteable_type, noteable_id))
    result.items = [NoteRow._make(row) for row in result.items]
    return result


@cache
def _one_statement(internal: bool) -> Select[Any]:
    return select(*columns()).where(of_noteable(internal), _NOTES.c.id == bindparam("note_id"))


def note_of(
    db: Session, noteable_type: str, noteable_id: int, note_id: int, *, internal: bool
) -> NoteRow | None:
    """One note of the noteable, if the caller may read it."""
    values = {**noteable_values(noteable_type, noteable_id), "note_id": note_id}
    row = run(db, _one_statement(internal), values).first()
    return None if row is None else NoteRow._make(row)


def system_notes_present(db: Session, wanted: list[tuple[str, int, str]]) -> set[tuple[str, int, str]]:
    """Which of (noteable type, noteable id, body) already have that system note."""
    if not wanted:
        return set()
    stmt = select(Note.noteable_type, Note.noteable_id, Note.body).where(
        Note.system.is_(True),
        tuple_(Note.noteable_type, Note.noteable_id).in_({(kind, target) for kind, target, _ in wanted}),
        Note.body.in_({body for _, _, body in wanted}),
    )
    return {(kind, target, body) for kind, target, body in db.execute(stmt)}
