"""Thread reads: a noteable's notes grouped by discussion id, threads in the order they began
and each thread's notes oldest first, with the same internal-note filter as note reads."""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import MergeRequestDiff, MergeRequestDiffCommit, Note
from kiln.models.notes import MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.queries.notes import NoteRow, columns, noteable_values, of_noteable
from kiln.queries.paging import offset_page
from kiln.queries.reads import run

_NOTES = Note.__table__


@cache
def _threads_statement(internal: bool) -> Select[Any]:
    """The noteable's thread ids in the order they began (by the first note the caller sees)."""
    return (
        select(_NOTES.c.discussion_id)
        .where(of_noteable(internal))
        .group_by(_NOTES.c.discussion_id)
        .order_by(func.min(_NOTES.c.created_at), func.min(_NOTES.c.id))
    )


@cache
def _thread_notes_statement(internal: bool) -> Select[Any]:
    return (
        select(*columns())
        .where(of_noteable(internal), _NOTES.c.discussion_id.in_(bindparam("discussion_ids", expanding=True)))
        .order_by(_NOTES.c.created_at, _NOTES.c.id)
    )


def page_of_threads(
    db: Session, noteable_type: str, noteable_id: int, page: Page, *, internal: bool
) -> tuple[PageResult, list[NoteRow]]:
    """One page of the noteable's thread ids and all their notes: two statements (and a count
    past the first page) however many threads and notes there are."""
    values = noteable_values(noteable_type, noteable_id)
    result = offset_page(db, _threads_statement(internal), page, core=True, params=values)
    result.items = [row[0] for row in result.items]
    return result, thread_notes(db, noteable_type, noteable_id, result.items, internal=internal)


def thread_notes(
    db: Session, noteable_type: str, noteable_id: int, discussion_ids: list[str], *, internal: bool
) -> list[NoteRow]:
    """The notes of the given threads of the noteable that the caller may read, oldest first."""
    if not discussion_ids:
        return []
    values = {**noteable_values(noteable_type, noteable_id), "discussion_ids": discussion_ids}
    return [NoteRow._make(row) for row in run(db, _thread_notes_statement(internal), values)]


def unresolved_count(db: Session, merge_request_id: int) -> int:
    """How many of the merge request's notes are resolvable and not yet resolved (GitLab's
    unresolved notes, which block a merge when all threads must be resolved)."""
    stmt = select(func.count()).where(
        _NOTES.c.noteable_type == MERGE_REQUEST,
        _NOTES.c.noteable_id == merge_request_id,
        _NOTES.c.resolvable.is_(True),
        _NOTES.c.resolved_at.is_(None),
    )
    return int(db.execute(stmt).scalar_one())


def version_refs(db: Session, merge_request_id: int) -> list[tuple[str | None, str, str]]:
    """The (base, start, head) shas of each of the merge request's diff versions, which a
    thread's diff position must name."""
    stmt = select(
        MergeRequestDiff.base_commit_sha, MergeRequestDiff.start_commit_sha, MergeRequestDiff.head_commit_sha
    ).where(MergeRequestDiff.merge_request_id == merge_request_id)
    return [(r[0], r[1], r[2]) for r in db.execute(stmt)]


def has_commit(db: Session, merge_request_id: int, sha: str) -> bool:
    """Whether `sha` is a commit of one of the merge request's diff versions."""
    stmt = (
        select(MergeRequestDiffCommit.sha)
        .join(MergeRequestDiff, MergeRequestDiff.id == MergeRequestDiffCommit.merge_request_diff_id)
        .where(MergeRequestDiff.merge_request_id == merge_request_id, MergeRequestDiffCommit.sha == sha)
        .limit(1)
    )
    return db.execute(stmt).first() is not None
