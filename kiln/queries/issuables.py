"""What the reads of issues and merge requests share, told apart by their table and their kind
of target (kiln.models.notes: ISSUE, MERGE_REQUEST): the people and project columns of their
rows, their labels and milestones for a page of views, who commented, the label, reaction and
date filters of their lists, and the rows that hang off one by (type, id), deleted with it.
Their own modules (queries.issues, queries.merge_requests) build on these; services.issuables
is their service."""

from __future__ import annotations

from collections import namedtuple
from datetime import date
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, String, bindparam, cast, delete, exists, false, func, select
from sqlalchemy.orm import Session

from kiln.models import (
    AwardEmoji,
    Label,
    LabelLink,
    Namespace,
    Note,
    Project,
    ResourceLabelEvent,
    ResourceMilestoneEvent,
    ResourceStateEvent,
    ResourceWeightEvent,
    Subscription,
    Todo,
    User,
)
from kiln.queries import access
from kiln.queries.reads import reusable, run

if TYPE_CHECKING:
    from kiln.queries.milestones import MilestoneRow

# ----------------------------------------------------------------------------- row columns


def people_list(table: Any, owner: Any, outer: Any) -> Any:
    """The ids of the people in `table` (assignees, reviewers) on the `outer` row ("3,5", NULL
    for none), in the order they were added; `owner`: `table`'s column naming the row."""
    ordered = (
        select(cast(table.user_id, String).label("user_id"))
        .where(owner == outer.c.id)
        .order_by(table.created_at, table.user_id)
        .correlate(outer)
        .subquery()
    )
    return select(func.aggregate_strings(ordered.c.user_id, ",")).scalar_subquery()


def project_path(outer: Any) -> Any:
    """The full path of the `outer` row's project."""
    return (
        select(Namespace.full_path + "/" + Project.path)
        .select_from(Project)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(Project.id == outer.c.project_id)
        .correlate(outer)
        .scalar_subquery()
    )


def namespace_id(outer: Any) -> Any:
    """The namespace of the `outer` row's project."""
    return (
        select(Project.namespace_id)
        .where(Project.id == outer.c.project_id)
        .correlate(outer)
        .scalar_subquery()
    )


def rows_by_ids(db: Session, statement: Select[Any], make: Any, ids: list[int]) -> list[Any]:
    """The rows `ids` that `statement` (over bind parameter `ids`, the id first) reads, made
    by `make`, in the order of `ids` (absent ones left out); one statement whatever their
    number, none for no ids."""
    if not ids:
        return []
    found = {row[0]: make(row) for row in run(db, statement, {"ids": list(ids)})}
    return [found[i] for i in ids if i in found]


# ----------------------------------------------------------------------------- related rows

LabelRow = namedtuple(  # type: ignore[misc]
    "LabelRow", ["target_id", "id", "title", "color", "description", "project_id", "group_id"]
)


@cache
def _labels_statement(kind: str) -> Select[Any]:
    return reusable(
        select(
            LabelLink.target_id,
            Label.id,
            Label.title,
            Label.color,
            Label.description,
            Label.project_id,
            Label.group_id,
        )
        .join(Label, Label.id == LabelLink.label_id)
        .where(LabelLink.target_type == kind, LabelLink.target_id.in_(bindparam("ids", expanding=True)))
    )


def labels_of(db: Session, kind: str, ids: list[int]) -> dict[int, list[LabelRow]]:
    """The labels of the `kind` targets `ids`, by target id (those without left out), in one
    statement."""
    out: dict[int, list[LabelRow]] = {}
    for label in run(db, _labels_statement(kind), {"ids": ids}):
        out.setdefault(label[0], []).append(LabelRow._make(label))
    return out


def milestones_of(db: Session, rows: list[Any]) -> dict[int, MilestoneRow]:
    """The milestones of `rows`, by id: one statement, none when no row has one."""
    # Imported when first used: queries.milestones imports queries.issues, which imports this.
    from kiln.queries import milestones as milestone_finder

    milestone_ids = list(dict.fromkeys(row.milestone_id for row in rows if row.milestone_id is not None))
    return dict(milestone_finder.rows_by_ids(db, milestone_ids)) if milestone_ids else {}


def user_ids(rows: list[Any], people: Any) -> list[int]:
    """The ids `people(row)` names across `rows`, each once, in the order first named."""
    found: dict[int, None] = {}
    for row in rows:
        for uid in people(row):
            if uid is not None:
                found[uid] = None
    return list(found)


def commented_by(db: Session, kind: str, target_id: int, user_id: int) -> bool:
    """The user wrote a (non-system) note on the `kind` target."""
    found = db.scalar(
        select(Note.id)
        .where(
            Note.noteable_type == kind,
            Note.noteable_id == target_id,
            Note.author_id == user_id,
            Note.system.is_(False),
        )
        .limit(1)
    )
    return found is not None


def commenters(db: Session, kind: str, target_id: int, *, internal: bool = True) -> list[int]:
    """Who wrote the (non-system) notes on the `kind` target, oldest first (with repeats);
    without `internal`, those of internal notes left out."""
    stmt = select(Note.author_id).where(
        Note.noteable_type == kind,
        Note.noteable_id == target_id,
        Note.system.is_(False),
        Note.author_id.is_not(None),
    )
    if not internal:
        stmt = stmt.where(Note.internal.is_(False))
    return list(db.scalars(stmt.order_by(Note.created_at, Note.id)))


# ----------------------------------------------------------------------------- list filters


def where_of(project_id: int | None, traversal: str | None) -> str:
    """Where a list reads: one "project", a "group" and its subgroups, or "all" projects."""
    return "project" if project_id is not None else "group" if traversal is not None else "all"


def scope_values(
    values: dict[str, Any], project_id: int | None, traversal: str | None, viewer_id: int | None, today: date
) -> None:
    """The bind values of where a list reads (in_traversal's bounds) and of who looks."""
    if project_id is not None:
        values["scope_project_id"] = project_id
    if traversal is not None:
        values["scope_traversal"], values["scope_traversal_end"] = access.within_bounds(traversal)
    if viewer_id is not None:
        values["viewer_id"], values["viewer_today"] = viewer_id, today


def in_traversal() -> ColumnElement[bool]:
    """Projects of the list's group and its subgroups (scope_values' bounds)."""
    return Project.namespace_id.in_(
        select(Namespace.id).where(
            access.within_range(Namespace, bindparam("scope_traversal"), bindparam("scope_traversal_end"))
        )
    )


def scope_shape(filters: list[tuple[Any, ...]], scope: str | None, viewer_id: int | None) -> None:
    """`scope=created_by_me` (`assigned_to_me`; GitLab spells them with dashes too) as a
    shape: nobody's for an anonymous caller."""
    name = (scope or "").replace("-", "_")
    if name == "created_by_me":
        filters.append(("scope", "created" if viewer_id is not None else "nobody"))
    elif name == "assigned_to_me":
        filters.append(("scope", "assigned" if viewer_id is not None else "nobody"))


def scoped(outer: Any, how: str, assigned: Any) -> ColumnElement[bool]:
    """The condition of scope_shape's shape: authored by, or (`assigned`) assigned to, the viewer."""
    me = bindparam("viewer_id")
    if how == "created":
        return outer.c.author_id == me  # type: ignore[no-any-return]
    return assigned(me) if how == "assigned" else false()  # type: ignore[no-any-return]


def labelled(outer: Any, kind: str, titled: Select[Any]) -> ColumnElement[bool]:
    """The `outer` row carries one of the labels `titled` selects."""
    # Correlated: SQLite checks each candidate row's links instead of first listing every
    # link of the label (12,500 of 100,000 issues: 0.08 ms against 1.6 ms).
    return exists(
        select(LabelLink.id).where(
            LabelLink.target_type == kind,
            LabelLink.target_id == outer.c.id,
            LabelLink.label_id.in_(titled),
        )
    )


def any_label(outer: Any, kind: str) -> ColumnElement[bool]:
    return exists(
        select(LabelLink.id).where(LabelLink.target_type == kind, LabelLink.target_id == outer.c.id)
    )


def reaction_shape(
    filters: list[tuple[Any, ...]], values: dict[str, Any], name: str, emoji: str | None
) -> None:
    """`my_reaction_emoji` (none, any, or an emoji's name) as the shape `name` (reaction's)."""
    if not emoji:
        return
    keyword = emoji.lower()
    if keyword in ("none", "any"):
        filters.append((name, keyword))
    else:
        filters.append((name, "name"))
        values[name] = emoji


def reaction(outer: Any, kind: str, how: str, name: str) -> ColumnElement[bool]:
    """The viewer's award emoji on the `outer` row: none, any, or the one named by the bind
    parameter `name`."""
    mine = select(AwardEmoji.id).where(
        AwardEmoji.awardable_type == kind,
        AwardEmoji.awardable_id == outer.c.id,
        AwardEmoji.user_id == bindparam("viewer_id"),
    )
    if how == "none":
        return ~exists(mine)
    if how == "any":
        return exists(mine)
    return exists(mine.where(AwardEmoji.name == bindparam(name)))


DATED = ("created_after", "created_before", "updated_after", "updated_before")


def dated_shape(filters: list[tuple[Any, ...]], values: dict[str, Any], q: Any) -> None:
    """The created/updated after/before parameters of `q` as shapes and values."""
    for name in DATED:
        when = getattr(q, name)
        if when is not None:
            filters.append((name,))
            values[name] = when


def dated(outer: Any, name: str) -> ColumnElement[bool]:
    """The condition of one of DATED on the `outer` row."""
    column = outer.c.created_at if name.startswith("created") else outer.c.updated_at
    if name.endswith("_after"):
        return column >= bindparam(name, type_=column.type)  # type: ignore[no-any-return]
    return column <= bindparam(name, type_=column.type)  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- writes


def usernames(db: Session, ids: list[int]) -> dict[int, str]:
    """The usernames of the users `ids`, by id (none asked, no statement)."""
    if not ids:
        return {}
    return dict(db.execute(select(User.id, User.username).where(User.id.in_(ids))).all())


def label_titles(db: Session, ids: list[int]) -> dict[int, str]:
    """The titles of the labels `ids`, by id (none asked, no statement)."""
    if not ids:
        return {}
    return dict(db.execute(select(Label.id, Label.title).where(Label.id.in_(ids))).all())


def remove_people(db: Session, table: Any, owner: str, target_id: int, user_ids: list[int]) -> None:
    """The rows of people table `table` (assignees, reviewers; `owner`: its column naming the
    target) for the users `user_ids` on the target go."""
    db.execute(
        delete(table).where(getattr(table, owner) == target_id, table.user_id.in_(user_ids)),
        execution_options={"synchronize_session": False},
    )


def project_level(db: Session, user_id: int, project_id: int, today: date) -> int | None:
    """The user's effective level on the project (None: none)."""
    return db.scalar(select(access.project_level_of(user_id, project_id, today)))


def delete_dependents(db: Session, kind: str, target_id: int) -> None:
    """What hangs off a `kind` target by (type, id): award emoji on it and on its notes, its
    notes, label links, to-dos, subscriptions and resource events."""
    note_ids = select(Note.id).where(Note.noteable_type == kind, Note.noteable_id == target_id)
    events = (ResourceLabelEvent, ResourceMilestoneEvent, ResourceStateEvent, ResourceWeightEvent)
    for stmt in (
        delete(AwardEmoji).where(AwardEmoji.awardable_type == "Note", AwardEmoji.awardable_id.in_(note_ids)),
        delete(AwardEmoji).where(AwardEmoji.awardable_type == kind, AwardEmoji.awardable_id == target_id),
        delete(Note).where(Note.noteable_type == kind, Note.noteable_id == target_id),
        delete(LabelLink).where(LabelLink.target_type == kind, LabelLink.target_id == target_id),
        delete(Todo).where(Todo.target_type == kind, Todo.target_id == target_id),
        delete(Subscription).where(
            Subscription.subscribable_type == kind, Subscription.subscribable_id == target_id
        ),
        *(delete(event).where(event.target_type == kind, event.target_id == target_id) for event in events),
    ):
        db.execute(stmt, execution_options={"synchronize_session": False})
