"""Label reads: the labels a project or group sees (its own, its groups', below it), one
label by id or title among them, and for a page of labels the caller's subscriptions and the
issues carrying each, counted as the caller may see them. The ORM `Label` is for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    true,
    union_all,
)
from sqlalchemy.orm import Session, aliased

from kiln import policy
from kiln.auth.actor import Actor
from kiln.models import (
    Issue,
    Label,
    LabelLink,
    LabelPriority,
    MergeRequest,
    Namespace,
    Project,
    Subscription,
)
from kiln.models.issues import CLOSED, OPENED
from kiln.models.namespaces import KIND_GROUP
from kiln.models.notes import ISSUE, MERGE_REQUEST
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries import issues as issue_finder
from kiln.queries import merge_requests as merge_request_finder
from kiln.queries import projects as project_finder
from kiln.queries.paging import offset_page
from kiln.queries.reads import run
from kiln.queries.shapes import Shapes
from kiln.queries.text import ESCAPE, contains

_LABELS = Label.__table__
_PRIORITIES = LabelPriority.__table__
_COLUMNS = ("id", "title", "color", "description", "project_id", "group_id", "lock_on_merge")

# `priority`: the rank the project the label is shown for gives it (None: unranked, or a group view).
LabelRow = namedtuple("LabelRow", [*_COLUMNS, "priority"])  # type: ignore[misc]
# What a label counts: issues carrying it, open and closed, and open merge requests carrying
# it, that the caller may see.
Counts = namedtuple("Counts", ["open_issues", "closed_issues", "open_merge_requests"])  # type: ignore[misc]
NO_COUNTS = Counts(0, 0, 0)

SUBSCRIBABLE = "Label"


# ----------------------------------------------------------------------------- which labels


@cache
def _selected() -> Select[Any]:
    """Labels with the rank the project `priority_project` gives them (none for a group)."""
    ranked = and_(
        _PRIORITIES.c.label_id == _LABELS.c.id, _PRIORITIES.c.project_id == bindparam("priority_project")
    )
    return select(*[_LABELS.c[name] for name in _COLUMNS], _PRIORITIES.c.priority).select_from(
        _LABELS.outerjoin(_PRIORITIES, ranked)
    )


def _owned(with_projects: bool, actor: Actor | None) -> ColumnElement[bool]:
    """Labels of the projects `project_ids` and the groups `group_ids`; `with_projects` also
    those of the projects the caller sees in the groups `project_group_ids`."""
    owners = [
        _LABELS.c.project_id.in_(bindparam("project_ids", expanding=True)),
        _LABELS.c.group_id.in_(bindparam("group_ids", expanding=True)),
    ]
    if with_projects:
        inside = select(Project.id).where(
            Project.namespace_id.in_(bindparam("project_group_ids", expanding=True)),
            project_finder.visible_to(actor),
        )
        owners.append(_LABELS.c.project_id.in_(inside))
    return or_(*owners)


_LISTS: Shapes[Select[Any]] = Shapes()


def _list_statement(actor: Actor | None, with_projects: bool, searched: bool) -> Select[Any]:
    """The labels in title order (GitLab's), built once per shape; `searched` keeps those
    whose title or description holds `search`, ignoring case."""

    def build() -> Select[Any]:
        stmt = _selected().where(_owned(with_projects, actor))
        if searched:
            term = bindparam("search")
            stmt = stmt.where(
                or_(
                    func.lower(_LABELS.c.title).like(term, escape=ESCAPE),
                    func.lower(func.coalesce(_LABELS.c.description, "")).like(term, escape=ESCAPE),
                )
            )
        return stmt.order_by(_LABELS.c.title, _LABELS.c.id)

    key = (project_finder.viewer_of(actor) if with_projects else None, with_projects, searched)
    return _LISTS.get(key, build)


def _values(
    actor: Actor | None,
    project_ids: Sequence[int],
    group_ids: Sequence[int],
    project_group_ids: Sequence[int] | None,
    priority_project: int | None,
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "project_ids": list(project_ids),
        "group_ids": list(group_ids),
        "priority_project": priority_project,
    }
    if project_group_ids is not None:
        values["project_group_ids"] = list(project_group_ids)
        values.update(project_finder.viewer_params(actor))
    return values


def page_of_labels(
    db: Session,
    actor: Actor | None,
    page: Page,
    *,
    project_ids: Sequence[int],
    group_ids: Sequence[int],
    project_group_ids: Sequence[int] | None = None,
    priority_project: int | None = None,
    search: str | None = None,
) -> PageResult:
    """One page of the labels of `project_ids` and `group_ids` (and, with `project_group_ids`,
    of the projects the caller sees in those groups)."""
    stmt = _list_statement(actor, project_group_ids is not None, bool(search))
    values = _values(actor, project_ids, group_ids, project_group_ids, priority_project)
    if search:
        values["search"] = contains(search)
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [LabelRow._make(row) for row in result.items]
    return result


_ONE: Shapes[Select[Any]] = Shapes()


def find_label(
    db: Session,
    actor: Actor | None,
    ident: str,
    *,
    project_ids: Sequence[int],
    group_ids: Sequence[int],
    project_group_ids: Sequence[int] | None = None,
    priority_project: int | None = None,
) -> LabelRow | None:
    """The label `ident` names among those of the owners given: by id when it is one (GitLab's
    find_by_id first), else by title, a project's own before its groups'."""
    with_projects = project_group_ids is not None
    values = _values(actor, project_ids, group_ids, project_group_ids, priority_project)
    if ident.isascii() and ident.isdigit() and len(ident) < 19:
        by_id = _ONE.get(
            ("id", project_finder.viewer_of(actor) if with_projects else None, with_projects),
            lambda: _selected().where(_owned(with_projects, actor), _LABELS.c.id == bindparam("label_id")),
        )
        row = run(db, by_id, {**values, "label_id": int(ident)}).first()
        if row is not None:
            return LabelRow._make(row)
    by_title = _ONE.get(
        ("title", project_finder.viewer_of(actor) if with_projects else None, with_projects),
        lambda: (
            _selected()
            .where(_owned(with_projects, actor), _LABELS.c.title == bindparam("title"))
            .order_by(_LABELS.c.project_id.is_(None), _LABELS.c.id)
            .limit(1)
        ),
    )
    row = run(db, by_title, {**values, "title": ident}).first()
    return None if row is None else LabelRow._make(row)


@cache
def _titled_statement() -> Select[Any]:
    return (
        select(*[_LABELS.c[name] for name in ("id", "project_id", "group_id")])
        .where(
            or_(
                _LABELS.c.project_id.in_(bindparam("project_ids", expanding=True)),
                _LABELS.c.group_id.in_(bindparam("group_ids", expanding=True)),
            ),
            _LABELS.c.title == bindparam("title"),
        )
        .order_by(_LABELS.c.id)
    )


def titled(db: Session, title: str, *, project_ids: Sequence[int], group_ids: Sequence[int]) -> list[Any]:
    """(id, project_id, group_id) of the labels of those owners titled exactly `title`."""
    return run(
        db,
        _titled_statement(),
        {"project_ids": list(project_ids), "group_ids": list(group_ids), "title": title},
    ).all()


# ----------------------------------------------------------------------------- groups


_GROUPS_BELOW: Shapes[Select[Any]] = Shapes()


def _visible_group(actor: Actor | None) -> ColumnElement[bool]:
    """Groups the caller sees: open ones, those a membership reaches, and those holding
    something the caller belongs to."""
    if actor is None:
        return access.opened_by(Namespace.visibility, policy.open_visibilities(None))
    if actor.is_admin:
        return true()
    viewer, today = bindparam("viewer_id"), bindparam("viewer_today")
    levels = access.group_levels(viewer, today=today)
    related = access.related_group_ids(viewer, today).subquery()
    return or_(
        Namespace.visibility.in_(policy.open_visibilities(actor)),
        Namespace.id.in_(select(levels.c.namespace_id)),
        Namespace.id.in_(select(related.c.id)),
    )


def groups_below(db: Session, actor: Actor | None, traversal: str, group_id: int) -> list[int]:
    """Ids of the groups below a group that the caller sees."""
    stmt = _GROUPS_BELOW.get(
        project_finder.viewer_of(actor),
        lambda: (
            select(Namespace.id)
            .where(
                Namespace.kind == KIND_GROUP,
                access.within_range(Namespace, bindparam("lo"), bindparam("hi")),
                Namespace.id != bindparam("group_id"),
                _visible_group(actor),
            )
            .order_by(Namespace.id)
        ),
    )
    lo, hi = access.within_bounds(traversal)
    values = {"lo": lo, "hi": hi, "group_id": group_id, **project_finder.viewer_params(actor)}
    return [row[0] for row in run(db, stmt, values)]


# ----------------------------------------------------------------------------- per page


@cache
def _subscribed_statement() -> Select[Any]:
    return select(Subscription.subscribable_id).where(
        Subscription.user_id == bindparam("user_id"),
        Subscription.subscribable_type == SUBSCRIBABLE,
        Subscription.subscribable_id.in_(bindparam("label_ids", expanding=True)),
        Subscription.subscribed == true(),
    )


def subscribed_ids(db: Session, user_id: int | None, label_ids: Sequence[int]) -> set[int]:
    """Which of the labels the user subscribed to."""
    if user_id is None or not label_ids:
        return set()
    return {
        row[0] for row in run(db, _subscribed_statement(), {"user_id": user_id, "label_ids": list(label_ids)})
    }


_COUNTS: Shapes[Select[Any]] = Shapes()


def _counted_items(viewer: project_finder.Viewer) -> Any:
    """What a label's counts add up, one row per label link: the issues the viewer may read
    (open or closed) and the open merge requests of projects whose merge requests the viewer
    may read, each with its project and which count it adds to."""
    issue_open = case((Issue.state == OPENED, 1), else_=0)
    issue_closed = case((Issue.state == CLOSED, 1), else_=0)
    issues = (
        select(
            LabelLink.label_id.label("label_id"),
            Issue.project_id.label("project_id"),
            issue_open.label("open_issues"),
            issue_closed.label("closed_issues"),
            literal(0).label("open_merge_requests"),
        )
        .join(Issue, and_(LabelLink.target_type == ISSUE, Issue.id == LabelLink.target_id))
        .where(
            LabelLink.label_id.in_(bindparam("label_ids", expanding=True)),
            issue_finder.readable(viewer),
        )
    )
    merge_requests = (
        select(
            LabelLink.label_id,
            MergeRequest.project_id,
            literal(0),
            literal(0),
            literal(1),
        )
        .join(
            MergeRequest,
            and_(LabelLink.target_type == MERGE_REQUEST, MergeRequest.id == LabelLink.target_id),
        )
        .where(
            LabelLink.label_id.in_(bindparam("label_ids", expanding=True)),
            MergeRequest.state == OPENED,
            MergeRequest.project_id.in_(merge_request_finder.readable_projects(viewer)),
        )
    )
    return union_all(issues, merge_requests).subquery("counted")


def _counts_statement(actor: Actor | None) -> Select[Any]:
    """Per label, its open and closed issues and its open merge requests in its owner (a
    project label: its project; a group label: the projects in the group and below), as the
    caller may see them: one statement for the page."""

    def build() -> Select[Any]:
        items = _counted_items(project_finder.viewer_of(actor))
        project_ns = aliased(Namespace, name="project_ns")
        group_ns = aliased(Namespace, name="label_group")
        in_owner = or_(
            _LABELS.c.project_id == items.c.project_id,
            and_(_LABELS.c.group_id.is_not(None), access.within(project_ns, group_ns)),
        )
        return (
            select(
                items.c.label_id,
                func.sum(items.c.open_issues),
                func.sum(items.c.closed_issues),
                func.sum(items.c.open_merge_requests),
            )
            .join(_LABELS, _LABELS.c.id == items.c.label_id)
            .join(Project, Project.id == items.c.project_id)
            .join(project_ns, project_ns.id == Project.namespace_id)
            .outerjoin(group_ns, group_ns.id == _LABELS.c.group_id)
            .where(in_owner)
            .group_by(items.c.label_id)
        )

    return _COUNTS.get(project_finder.viewer_of(actor), build)


def issue_counts(db: Session, actor: Actor | None, label_ids: Sequence[int]) -> dict[int, Counts]:
    """Open and closed issues and open merge requests carrying each label, in one statement
    for the page."""
    if not label_ids:
        return {}
    values = {"label_ids": list(label_ids), **project_finder.viewer_params(actor)}
    rows = run(db, _counts_statement(actor), values)
    return {row[0]: Counts(int(row[1] or 0), int(row[2] or 0), int(row[3] or 0)) for row in rows}


@cache
def _titled_within_statement() -> Select[Any]:
    return (
        select(_LABELS.c.id)
        .join(Project, Project.id == _LABELS.c.project_id)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(
            access.within_range(Namespace, bindparam("lo"), bindparam("hi")),
            _LABELS.c.title == bindparam("title"),
        )
        .order_by(_LABELS.c.id)
    )


def project_labels_titled_within(db: Session, traversal: str, title: str) -> list[int]:
    """Ids of the project labels titled `title` in the projects of a group and below it."""
    lo, hi = access.within_bounds(traversal)
    return [row[0] for row in run(db, _titled_within_statement(), {"lo": lo, "hi": hi, "title": title})]
