"""Commit reads kept in the database: the comments on a commit, as `CommitNoteRow` records
whose authors come from queries.users.rows_by_ids. The ORM `CommitNote` is for writes."""

from __future__ import annotations

from collections import namedtuple
from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, select
from sqlalchemy.orm import Session

from kiln.models import CommitNote
from kiln.pagination import Page, PageResult
from kiln.queries.paging import offset_page
from kiln.queries.reads import row_columns, run
from kiln.queries.users import UserRow, rows_by_ids

_NOTES = CommitNote.__table__

CommitNoteRow = namedtuple("CommitNoteRow", [c.key for c in _NOTES.c])  # type: ignore[misc]


@cache
def _comments_statement() -> Select[Any]:
    return (
        select(*row_columns(_NOTES))
        .where(_NOTES.c.project_id == bindparam("project_id"), _NOTES.c.commit_sha == bindparam("sha"))
        .order_by(_NOTES.c.created_at, _NOTES.c.id)
    )


@cache
def _by_id_statement() -> Select[Any]:
    return select(*row_columns(_NOTES)).where(_NOTES.c.id == bindparam("id"))


def comment_by_id(db: Session, note_id: int) -> CommitNoteRow | None:
    """One comment as the list shows it: what a comment just saved answers."""
    row = run(db, _by_id_statement(), {"id": note_id}).first()
    return None if row is None else CommitNoteRow._make(row)


def comments(
    db: Session, project_id: int, sha: str, page: Page
) -> tuple[list[tuple[Any, UserRow]], PageResult]:
    """One page of a commit's comments, oldest first, each with its author: the page's rows,
    then their authors by one statement."""
    values = {"project_id": project_id, "sha": sha}
    result = offset_page(db, _comments_statement(), page, core=True, params=values)
    notes = [CommitNoteRow._make(row) for row in result.items]
    authors = {u.id: u for u in rows_by_ids(db, list(dict.fromkeys(n.author_id for n in notes)))}
    result.items = notes
    return [(n, authors[n.author_id]) for n in notes if n.author_id in authors], result
