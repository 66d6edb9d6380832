"""Epic reads: the row an epic view renders (with its group's path, its parent's iid and the
milestone dates its inherited dates come from, in one statement), the groups of a hierarchy
with the caller's standing on each, the list statement per shape, and what the views of a
page need besides (labels, users: one statement each). The ORM `Epic` is for writes."""

from __future__ import annotations

from collections import namedtuple
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Date,
    Select,
    bindparam,
    exists,
    false,
    func,
    not_,
    null,
    or_,
    select,
)
from sqlalchemy.orm import Session

from kiln.models import AwardEmoji, Epic, Label, LabelLink, Milestone, Namespace, Note, User
from kiln.models.notes import EPIC
from kiln.queries import access
from kiln.queries.projects import NamespaceRow
from kiln.queries.reads import row_columns, run
from kiln.queries.shapes import Shapes, parameters_key
from kiln.queries.text import ESCAPE, contains
from kiln.schemas.epics import EpicList

_EPICS = Epic.__table__
_NAMESPACES = Namespace.__table__
_PARENT = _EPICS.alias("parent_epic")
_START_MS = Milestone.__table__.alias("start_milestone")
_DUE_MS = Milestone.__table__.alias("due_milestone")
_N = len(_NAMESPACES.c)
_EPIC_FIELDS = [c.key for c in _EPICS.c]
# After the epic's own columns: its group's full path, its parent's iid and group, and the
# dates of the milestones its inherited start and due dates come from.
_EXTRA_FIELDS = ["group_path", "parent_iid", "parent_group_id", "start_milestone_date", "due_milestone_date"]

EpicRow = namedtuple("EpicRow", [*_EPIC_FIELDS, *_EXTRA_FIELDS])  # type: ignore[misc]
LabelRow = namedtuple("LabelRow", ["target_id", "id", "title", "color", "description"])  # type: ignore[misc]


def subject_row(db: Session, group_id: int, ref: int, *, by_id: bool = False) -> Epic | None:
    """The group's epic by iid (or by global id with `by_id`), the model, or None."""
    key = Epic.id if by_id else Epic.iid
    return db.scalars(select(Epic).where(Epic.group_id == group_id, key == ref)).first()


def _selection() -> list[Any]:
    return [
        *row_columns(_EPICS),
        _NAMESPACES.c.full_path.label("group_path"),
        _PARENT.c.iid.label("parent_iid"),
        _PARENT.c.group_id.label("parent_group_id"),
        _START_MS.c.start_date.label("start_milestone_date"),
        _DUE_MS.c.due_date.label("due_milestone_date"),
    ]


def _from() -> Any:
    return (
        _EPICS.join(_NAMESPACES, _NAMESPACES.c.id == _EPICS.c.group_id)
        .outerjoin(_PARENT, _PARENT.c.id == _EPICS.c.parent_id)
        .outerjoin(_START_MS, _START_MS.c.id == _EPICS.c.start_date_sourcing_milestone_id)
        .outerjoin(_DUE_MS, _DUE_MS.c.id == _EPICS.c.due_date_sourcing_milestone_id)
    )


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*_selection()).select_from(_from()).where(_EPICS.c.id.in_(bindparam("ids", expanding=True)))


def rows_by_ids(db: Session, ids: list[int]) -> list[EpicRow]:
    """The epics `ids` as their views read them, in that order (absent ones left out)."""
    if not ids:
        return []
    found = {row[0]: EpicRow._make(row) for row in run(db, _by_ids_statement(), {"ids": list(ids)})}
    return [found[i] for i in ids if i in found]


def row_by_id(db: Session, epic_id: int) -> EpicRow | None:
    rows = rows_by_ids(db, [epic_id])
    return rows[0] if rows else None


@cache
def _children_statement() -> Select[Any]:
    return (
        select(*_selection())
        .select_from(_from())
        .where(_EPICS.c.parent_id == bindparam("parent_id"))
        .order_by(_EPICS.c.relative_position.asc().nulls_last(), _EPICS.c.id.desc())
    )


def children_of(db: Session, parent_id: int) -> list[EpicRow]:
    """An epic's child epics, in their order (relative position, newest first after)."""
    return [EpicRow._make(row) for row in run(db, _children_statement(), {"parent_id": parent_id})]


# ---------------------------------------------------------------------------- hierarchy


@cache
def _hierarchy_statement(shape: str, signed_in: bool) -> Select[Any]:
    """Groups of a hierarchy with the caller's level on each and whether something inside
    relates them to it: `below` the group and its descendants, `ids` named groups, or both."""
    user_id, today = bindparam("user_id"), bindparam("today", type_=Date())
    standing = (
        [
            access.group_level_column(_NAMESPACES, user_id, today).label("level"),
            access.related_column(_NAMESPACES, user_id, today).label("related"),
        ]
        if signed_in
        else [null().label("level"), false().label("related")]
    )
    below = access.within_range(_NAMESPACES.c, bindparam("traversal"), bindparam("traversal_end"))
    named = _NAMESPACES.c.id.in_(bindparam("ids", expanding=True))
    where = {"below": below, "ids": named, "both": or_(below, named)}[shape]
    return select(*row_columns(_NAMESPACES), *standing).where(where).order_by(_NAMESPACES.c.traversal)


def hierarchy(
    db: Session, group: Any, user_id: int | None, *, descendants: bool, ancestor_ids: list[int]
) -> list[tuple[NamespaceRow, int | None, bool]]:
    """The group (and its descendants, and `ancestor_ids`), each with the user's level on it
    and whether they belong to something inside it."""
    shape = "both" if descendants and ancestor_ids else ("below" if descendants else "ids")
    traversal, end = access.within_bounds(group.traversal)
    values: dict[str, Any] = {"traversal": traversal, "traversal_end": end, "ids": [group.id, *ancestor_ids]}
    if user_id is not None:
        values.update(user_id=user_id, today=date.today())
    rows = run(db, _hierarchy_statement(shape, user_id is not None), values)
    return [(NamespaceRow._make(row[:_N]), row[_N], bool(row[_N + 1])) for row in rows]


# ---------------------------------------------------------------------------- lists


def _has_label(title: str) -> ColumnElement[bool]:
    return exists(
        select(LabelLink.id)
        .join(Label, Label.id == LabelLink.label_id)
        .where(LabelLink.target_type == EPIC, LabelLink.target_id == _EPICS.c.id, Label.title == title)
    )


def _any_label() -> ColumnElement[bool]:
    return exists(
        select(LabelLink.id).where(LabelLink.target_type == EPIC, LabelLink.target_id == _EPICS.c.id)
    )


def _labels_filter(titles: list[str], *, negated: bool) -> list[ColumnElement[bool]]:
    """GitLab's label filter: every title named (`None`: no label, `Any`: some label);
    negated, none of them."""
    out: list[ColumnElement[bool]] = []
    for title in titles:
        special = title.lower()
        if special in ("none", "no label", "no+label"):
            out.append(_any_label() if negated else not_(_any_label()))
        elif special == "any":
            out.append(not_(_any_label()) if negated else _any_label())
        else:
            out.append(not_(_has_label(title)) if negated else _has_label(title))
    return out


def _author_named(username: str) -> Any:
    return select(User.id).where(func.lower(User.username) == username.lower()).scalar_subquery()


def _reaction(name: str) -> ColumnElement[bool]:
    awarded = select(AwardEmoji.id).where(
        AwardEmoji.awardable_type == EPIC,
        AwardEmoji.awardable_id == _EPICS.c.id,
        AwardEmoji.user_id == bindparam("viewer_id"),
    )
    lowered = name.lower()
    if lowered == "none":
        return not_(exists(awarded))
    if lowered == "any":
        return exists(awarded)
    return exists(awarded.where(AwardEmoji.name == name))


_LISTINGS: Shapes[Select[Any]] = Shapes()


def listing(q: EpicList, *, restricted: bool, signed_in: bool) -> Select[Any]:
    """The rows of an epic list, filtered and ordered; built once per shape (the parameters,
    whether confidential epics are limited, whether the caller is signed in). The groups the
    list reads and the caller's are bind parameters (listing_params)."""
    key = (parameters_key(q), restricted, signed_in)
    return _LISTINGS.get(key, lambda: _listing(q, restricted, signed_in))


def listing_params(
    group_ids: list[int], confidential_group_ids: list[int], viewer_id: int | None
) -> dict[str, Any]:
    return {
        "group_ids": group_ids,
        "confidential_group_ids": confidential_group_ids,
        "viewer_id": viewer_id or 0,
    }


def _listing(q: EpicList, restricted: bool, signed_in: bool) -> Select[Any]:
    e = _EPICS.c
    stmt = (
        select(*_selection())
        .select_from(_from())
        .where(e.group_id.in_(bindparam("group_ids", expanding=True)))
    )
    if restricted:
        stmt = stmt.where(
            or_(
                e.confidential == false(),
                e.group_id.in_(bindparam("confidential_group_ids", expanding=True)),
                e.author_id == bindparam("viewer_id"),
            )
        )
    if q.state != "all":
        stmt = stmt.where(e.state == q.state)
    if q.iids:
        stmt = stmt.where(e.iid.in_(q.iids))
    if q.author_id is not None:
        stmt = stmt.where(e.author_id == q.author_id)
    if q.author_username:
        stmt = stmt.where(e.author_id == _author_named(q.author_username))
    if q.labels:
        stmt = stmt.where(*_labels_filter(q.labels, negated=False))
    if q.confidential is not None:
        stmt = stmt.where(e.confidential == q.confidential)
    if q.search:
        term = contains(q.search)
        stmt = stmt.where(
            or_(
                func.lower(e.title).like(term, escape=ESCAPE),
                func.lower(func.coalesce(e.description, "")).like(term, escape=ESCAPE),
            )
        )
    for column, bound, after in (
        (e.created_at, q.created_after, True),
        (e.created_at, q.created_before, False),
        (e.updated_at, q.updated_after, True),
        (e.updated_at, q.updated_before, False),
    ):
        if bound is not None:
            stmt = stmt.where(column >= bound if after else column <= bound)
    if q.my_reaction_emoji:
        stmt = stmt.where(_reaction(q.my_reaction_emoji) if signed_in else false())
    negated = q.negated
    if negated is not None:
        if negated.labels:
            stmt = stmt.where(*_labels_filter(negated.labels, negated=True))
        if negated.author_id is not None:
            stmt = stmt.where(or_(e.author_id.is_(None), e.author_id != negated.author_id))
        if negated.author_username:
            author = _author_named(negated.author_username)
            stmt = stmt.where(or_(e.author_id.is_(None), author.is_(None), e.author_id != author))
    column = {"created_at": e.created_at, "updated_at": e.updated_at, "title": e.title}[q.order_by]
    primary = column.asc() if q.sort == "asc" else column.desc()
    tie = e.id.asc() if q.sort == "asc" else e.id.desc()
    return stmt.order_by(primary, tie)


# ---------------------------------------------------------------------------- related rows


@cache
def _labels_statement() -> Select[Any]:
    return (
        select(LabelLink.target_id, Label.id, Label.title, Label.color, Label.description)
        .join(Label, Label.id == LabelLink.label_id)
        .where(LabelLink.target_type == EPIC, LabelLink.target_id.in_(bindparam("ids", expanding=True)))
        .order_by(Label.title, Label.id)
    )


def labels_of(db: Session, epic_ids: list[int]) -> dict[int, list[LabelRow]]:
    """Each epic's labels, by title, in one statement."""
    out: dict[int, list[LabelRow]] = {i: [] for i in epic_ids}
    if not epic_ids:
        return out
    for row in run(db, _labels_statement(), {"ids": list(epic_ids)}):
        out.setdefault(row[0], []).append(LabelRow._make(row))
    return out


@cache
def _participated_statement() -> Select[Any]:
    return select(
        exists(
            select(Note.id).where(
                Note.noteable_type == EPIC,
                Note.noteable_id == bindparam("epic_id"),
                Note.author_id == bindparam("user_id"),
                Note.system == false(),
            )
        )
    )


def commented(db: Session, epic_id: int, user_id: int) -> bool:
    """Whether the user wrote a note on the epic (a participant, subscribed unless they opted out)."""
    return bool(run(db, _participated_statement(), {"epic_id": epic_id, "user_id": user_id}).scalar_one())
