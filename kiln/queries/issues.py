"""Issue reads: the row an issue view renders (with its assignees' ids, how many open issues
it blocks and its project's path in the same statement), what the views of a page of issues
need besides (labels, users, milestones, epics: one statement each, whatever the page's size),
and the subject lookup every issue route starts from. The ORM `Issue` is for writes."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Date,
    Select,
    String,
    and_,
    bindparam,
    cast,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Boolean

from kiln import policy
from kiln.models import (
    Epic,
    EpicIssue,
    Issue,
    IssueAssignee,
    IssueLink,
    Label,
    LabelLink,
    LabelPriority,
    Milestone,
    Namespace,
    Project,
    User,
)
from kiln.models.base import numeric_id
from kiln.models.issues import BLOCKS, OPENED
from kiln.models.namespaces import PUBLIC
from kiln.models.notes import ISSUE
from kiln.models.projects import DISABLED, ENABLED
from kiln.pagination import TOTAL_LIMIT, Page, PageResult
from kiln.queries import issuables as shared
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.paging import capped_count, offset_page
from kiln.queries.reads import reusable, row_columns, run, unindexed
from kiln.queries.shapes import Shapes
from kiln.queries.text import contains
from kiln.queries.users import UserRow
from kiln.schemas.issues import IssueFilters

if TYPE_CHECKING:
    # Only named in annotations: queries.milestones imports this module.
    from kiln.queries.milestones import MilestoneRow

_ISSUES = Issue.__table__
_ISSUE_FIELDS = [c.key for c in _ISSUES.c]
# After the issue's own columns: its assignees' ids ("3,5", NULL for none, in the order they
# were assigned), how many open issues it blocks, its project's full path and namespace.
# "project_id/iid" of the issue it was closed as a duplicate of.
_EXTRA_FIELDS = ["assignee_list", "blocking_issues_count", "project_path", "namespace_id", "duplicate_ref"]


class IssueRow(namedtuple("IssueRow", [*_ISSUE_FIELDS, *_EXTRA_FIELDS])):  # type: ignore[misc]
    """An issue as its views read it; times are the API's strings already."""

    __slots__ = ()

    @property
    def assignee_ids(self) -> list[int]:
        return [int(part) for part in self.assignee_list.split(",")] if self.assignee_list else []


def _blocking_count() -> Any:
    target = Issue.__table__.alias("blocked")
    return (
        select(func.count())
        .select_from(IssueLink)
        .join(target, target.c.id == IssueLink.target_id)
        .where(
            IssueLink.source_id == _ISSUES.c.id,
            IssueLink.link_type == BLOCKS,
            target.c.state == OPENED,
        )
        .correlate(_ISSUES)
        .scalar_subquery()
    )


def _duplicate_ref() -> Any:
    duplicate = Issue.__table__.alias("duplicate")
    return (
        select(cast(duplicate.c.project_id, String) + "/" + cast(duplicate.c.iid, String))
        .where(duplicate.c.id == _ISSUES.c.duplicated_to_id)
        .correlate(_ISSUES)
        .scalar_subquery()
    )


def row_selection() -> list[ColumnElement[Any]]:
    """The columns of an IssueRow, selected from the issues table (lists add their filters)."""
    return [
        *row_columns(_ISSUES),
        shared.people_list(IssueAssignee, IssueAssignee.issue_id, _ISSUES).label("assignee_list"),
        _blocking_count().label("blocking_issues_count"),
        shared.project_path(_ISSUES).label("project_path"),
        shared.namespace_id(_ISSUES).label("namespace_id"),
        _duplicate_ref().label("duplicate_ref"),
    ]


def issue_row(values: Any) -> IssueRow:
    return IssueRow._make(values)


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*row_selection()).where(_ISSUES.c.id.in_(bindparam("ids", expanding=True)))


def rows_by_ids(db: Session, ids: list[int]) -> list[IssueRow]:
    """The issues `ids` as their views read them, in that order (absent ones left out); one
    statement whatever their number. Callers decide who may see them."""
    return shared.rows_by_ids(db, _by_ids_statement(), IssueRow._make, ids)


def row_by_id(db: Session, issue_id: int) -> IssueRow | None:
    rows = rows_by_ids(db, [issue_id])
    return rows[0] if rows else None


def subject_row(db: Session, project_id: int, iid: int) -> tuple[Issue, list[int]] | None:
    """Issue `iid` of the project (the model) and its assignees' ids, or None."""
    found = db.scalars(select(Issue).where(Issue.project_id == project_id, Issue.iid == iid)).first()
    if found is None:
        return None
    assignees = db.scalars(
        select(IssueAssignee.user_id)
        .where(IssueAssignee.issue_id == found.id)
        .order_by(IssueAssignee.created_at, IssueAssignee.user_id)
    ).all()
    return found, list(assignees)


def locked(db: Session, issue_id: int) -> Issue:
    """The issue (the model) as the caller's transaction sees it now, its row locked against
    concurrent writers until that transaction ends (PostgreSQL; SQLite has one writer)."""
    stmt = select(Issue).where(Issue.id == issue_id).with_for_update()
    return db.scalars(stmt.execution_options(populate_existing=True)).one()


@cache
def _by_global_id_statement() -> Select[Any]:
    return select(Issue.project_id, Issue.iid).where(Issue.id == bindparam("id"))


def project_and_iid(db: Session, issue_id: int) -> tuple[int, int] | None:
    """Where issue `issue_id` is: its project's id and its iid."""
    row = run(db, _by_global_id_statement(), {"id": issue_id}).first()
    return None if row is None else (row[0], row[1])


# ----------------------------------------------------------------------------- related rows

LabelRow = shared.LabelRow
# An issue's epic as the issue view shows it (`group_path`: the epic's group's full path).
EpicRef = namedtuple(  # type: ignore[misc]
    "EpicRef", ["issue_id", "id", "iid", "title", "group_id", "group_path", "due_date"]
)


@dataclass(slots=True)
class Related:
    """What the views of some issues show besides their rows, keyed for the entity."""

    labels: dict[int, list[LabelRow]] = field(default_factory=dict)  # by issue id
    users: dict[int, UserRow] = field(default_factory=dict)  # by user id
    milestones: dict[int, MilestoneRow] = field(default_factory=dict)  # by milestone id
    epics: dict[int, EpicRef] = field(default_factory=dict)  # by issue id
    # How many merge requests close each issue (by issue id), where the reader counted them.
    merge_requests_count: dict[int, int] = field(default_factory=dict)


@cache
def _epics_statement() -> Select[Any]:
    return reusable(
        select(
            EpicIssue.issue_id,
            Epic.id,
            Epic.iid,
            Epic.title,
            Epic.group_id,
            Namespace.full_path,
            Epic.due_date,
        )
        .join(Epic, Epic.id == EpicIssue.epic_id)
        .join(Namespace, Namespace.id == Epic.group_id)
        .where(EpicIssue.issue_id.in_(bindparam("ids", expanding=True)))
    )


def related_of(db: Session, rows: list[IssueRow], *, epics: bool = True) -> Related:
    """Labels, authors, assignees, closers, milestones and epics of `rows`: at most four
    statements, whatever their number."""
    out = Related()
    if not rows:
        return out
    ids = [row.id for row in rows]
    out.labels = shared.labels_of(db, ISSUE, ids)
    user_ids = shared.user_ids(rows, lambda row: (row.author_id, *row.assignee_ids, row.closed_by_id))
    out.users = {u.id: u for u in user_finder.rows_by_ids(db, user_ids)}
    out.milestones = shared.milestones_of(db, rows)
    if epics:
        for e in run(db, _epics_statement(), {"ids": ids}):
            out.epics[e[0]] = EpicRef._make(e)
    return out


# ----------------------------------------------------------------------------- lists


class holds(FunctionElement[bool]):  # noqa: N801 - named as the SQL it stands for
    """`text` holds the (lower-cased, escaped: queries.text.contains) pattern, ignoring case:
    SQLite's LIKE already ignores ASCII case, and lower() on every row of a search cost it
    half the scan (100,000 issues); on PostgreSQL lower() and LIKE cost less than ILIKE."""

    type = Boolean()
    inherit_cache = True
    name = "holds"


@compiles(holds)
def _holds(element: holds, compiler: Any, **kw: Any) -> str:
    text, pattern = (compiler.process(c, **kw) for c in element.clauses.clauses)
    return f"({text} LIKE {pattern} ESCAPE '\\')"


@compiles(holds, "postgresql")
def _holds_postgresql(element: holds, compiler: Any, **kw: Any) -> str:
    text, pattern = (compiler.process(c, **kw) for c in element.clauses.clauses)
    return f"(lower({text}) LIKE {pattern} ESCAPE '\\')"


#
# A list's statement is built once per shape (queries.shapes): where it lists (a project, a
# group's projects, every project), who looks (anonymous, administrator, or a signed-in user
# and the visibilities open to them), whether they see the project's confidential issues,
# and the filters given, each reduced to what shapes the SQL. Values (ids, titles, search
# terms, dates) are bind parameters, so every search and every user runs the one statement.


@dataclass(frozen=True, slots=True)
class ListScope:
    """Where a list reads: one project (`project_id`), a group and its subgroups (`traversal`),
    or everywhere the viewer sees (neither). `sees_confidential`: the viewer sees every
    confidential issue of the project (a project list decides it from the subject)."""

    project_id: int | None = None
    traversal: str | None = None
    non_archived: bool = True
    sees_confidential: bool = False


class Listing(NamedTuple):
    """A list's statements: the ids of its issues in order, and their count (capped)."""

    ids: Select[Any]
    count: Select[Any]
    # A page of `ids` with every match counted alongside (`total`), for lists that read every
    # issue anyway (a search): one scan instead of two. None for the others, whose count
    # stops at TOTAL_LIMIT + 1 while their page stops at its end.
    counted_page: Select[Any] | None = None


_LISTS: Shapes[Listing] = Shapes()
_WEEK_STARTS_MONDAY = 0


def _shape_and_values(
    q: IssueFilters, viewer_id: int | None, scope: ListScope, today: date
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The filters of `q` as the statement's shape (hashable) and its bind values."""
    values: dict[str, Any] = {}
    filters: list[tuple[Any, ...]] = []
    if q.state in ("opened", "closed"):
        filters.append(("state", q.state))
    _add(filters, values, q, "", viewer_id, today)
    if q.not_ is not None:
        _add(filters, values, q.not_, "not_", viewer_id, today)
    shared.scope_shape(filters, q.scope, viewer_id)
    shared.dated_shape(filters, values, q)
    if q.due_date is not None:
        filters.append(("due", q.due_date))
        values.update(_due_bounds(q.due_date, today))
    if q.confidential is not None:
        filters.append(("confidential", q.confidential))
    if q.issue_type is not None:
        filters.append(("issue_type", q.issue_type))
    shared.scope_values(values, scope.project_id, scope.traversal, viewer_id, today)
    values["today"] = today
    return tuple(filters), values


def _due_bounds(keyword: str, today: date) -> dict[str, Any]:
    if keyword == "today":
        return {"due_from": today, "due_to": today}
    if keyword == "tomorrow":
        return {"due_from": today + timedelta(days=1), "due_to": today + timedelta(days=1)}
    if keyword == "week":
        start = today - timedelta(days=today.weekday())
        return {"due_from": start, "due_to": start + timedelta(days=6)}
    if keyword == "month":
        start = today.replace(day=1)
        return {"due_from": start, "due_to": _month_end(start)}
    if keyword == "next_month_and_previous_two_weeks":
        next_month = _month_end(today.replace(day=1)) + timedelta(days=1)
        return {"due_from": today - timedelta(weeks=2), "due_to": _month_end(next_month)}
    return {}


def _month_end(first: date) -> date:
    following = (first.replace(day=28) + timedelta(days=4)).replace(day=1)
    return following - timedelta(days=1)


def _add(
    filters: list[tuple[Any, ...]],
    values: dict[str, Any],
    q: Any,
    p: str,
    viewer_id: int | None,
    today: date,
) -> None:
    """The filters of `q` (the list's parameters, or its `not[...]` with `p` = "not_")."""
    negated = bool(p)
    labels = [name for name in (q.labels or []) if name]
    if labels:
        keywords = {name.lower() for name in labels}
        if keywords & {"none", "no label", "no+label"}:
            filters.append((p + "labels", "none"))
        elif keywords & {"any"}:
            filters.append((p + "labels", "any"))
        elif negated:
            filters.append((p + "labels", "in"))
            values[p + "labels"] = labels
        else:
            for i, name in enumerate(labels):
                filters.append((p + "label", i))
                values[f"{p}label_{i}"] = name
    milestone = q.milestone
    if not negated and milestone is None and getattr(q, "milestone_id", None):
        milestone = q.milestone_id
    if milestone:
        keyword = milestone.lower()
        if keyword in ("none", "any", "upcoming", "started", "#upcoming", "#started"):
            filters.append((p + "milestone", keyword.lstrip("#")))
        else:
            filters.append((p + "milestone", "title"))
            values[p + "milestone"] = milestone
    if q.author_id is not None:
        filters.append((p + "author_id",))
        values[p + "author_id"] = q.author_id
    elif q.author_username:
        filters.append((p + "author_username",))
        values[p + "author_username"] = q.author_username.lower()
    if q.assignee_id is not None:
        keyword = q.assignee_id.lower()
        keyword = "none" if keyword == "0" else keyword  # GitLab's older spelling of None
        if keyword in ("none", "any"):
            filters.append((p + "assignee", keyword))
        else:
            filters.append((p + "assignee", "id"))
            # An id past the largest names no one (-1 matches no row; it would overflow BIGINT).
            values[p + "assignee_id"] = numeric_id(q.assignee_id) or -1
    elif q.assignee_username:
        names = [n.lower() for n in q.assignee_username if n]
        if negated:
            filters.append((p + "assignee_usernames", "in"))
            values[p + "assignee_usernames"] = names
        else:
            for i, name in enumerate(names):
                filters.append((p + "assignee_username", i))
                values[f"{p}assignee_username_{i}"] = name
    if viewer_id is not None:
        shared.reaction_shape(filters, values, p + "reaction", q.my_reaction_emoji)
    if q.weight is not None:
        keyword = q.weight.lower()
        if keyword in ("none", "any"):
            filters.append((p + "weight", keyword))
        else:
            filters.append((p + "weight", "value"))
            values[p + "weight"] = numeric_id(q.weight) if numeric_id(q.weight) is not None else -1
    if q.iids:
        filters.append((p + "iids",))
        values[p + "iids"] = list(q.iids)
    if q.search:
        fields = tuple(sorted(set(q.in_ or ["title", "description"])))
        filters.append((p + "search", fields))
        values[p + "search"] = contains(q.search)


def list_statement(
    q: IssueFilters, viewer: Any, viewer_id: int | None, scope: ListScope, today: date
) -> tuple[Listing, dict[str, Any]]:
    """The list's statement (kept per shape) and the values of its bind parameters.
    `viewer`: None (anonymous), "admin", or the visibilities open to a signed-in user."""
    filters, values = _shape_and_values(q, viewer_id, scope, today)
    where = shared.where_of(scope.project_id, scope.traversal)
    key = (
        viewer,
        where,
        scope.sees_confidential,
        scope.non_archived if where != "project" else None,
        filters,
        q.order_by,
        q.sort,
    )

    def build() -> Listing:
        return _build(viewer, where, scope.sees_confidential, scope.non_archived, filters, q.order_by, q.sort)

    return _LISTS.get(key, build), values


def _projects_with_issues(viewer: Any, where: str, non_archived: bool, *, scan: bool) -> ColumnElement[bool]:
    """Issues of projects in the list's scope whose issues the viewer may read. `scan`: the
    list reads every issue's text anyway (a search): SQLite reads the table in order rather
    than each visible project's issues through the project index, one row at a time
    (100,000 issues: 150 -> 40 ms)."""
    conditions: list[ColumnElement[bool]] = [Project.issues_access_level != DISABLED]
    if where == "group":
        conditions.append(shared.in_traversal())
    if non_archived:
        conditions.append(Project.archived.is_(False))
    if viewer is None:
        conditions.append(and_(Project.visibility == PUBLIC, Project.issues_access_level == ENABLED))
    elif viewer != "admin":
        opened = and_(unindexed(Project.visibility).in_(viewer), Project.issues_access_level == ENABLED)
        conditions.append(or_(opened, Project.id.in_(project_finder.reachable(None))))
    column = unindexed(_ISSUES.c.project_id) if scan else _ISSUES.c.project_id
    return column.in_(select(Project.id).where(*conditions))


def readable(viewer: Any) -> ColumnElement[bool]:
    """Issues the viewer (project_finder.viewer_of) may read, in any project:
    policy.may_read_issue said in SQL, for statements over issues that other resources keep
    (label counts, a milestone's issues). Values: project_finder.viewer_params."""
    confidential = _confidential(viewer, "all", False)
    projects = _projects_with_issues(viewer, "all", False, scan=False)
    return projects if confidential is None else and_(projects, confidential)


def _assigned(user: Any) -> ColumnElement[bool]:
    return _ISSUES.c.id.in_(select(IssueAssignee.issue_id).where(IssueAssignee.user_id == user))


def _confidential(viewer: Any, where: str, sees_all: bool) -> ColumnElement[bool] | None:
    """Confidential issues only for those who see them: Reporters and up of their project,
    their author, their assignees (administrators see all)."""
    if viewer == "admin" or (where == "project" and sees_all):
        return None
    public = _ISSUES.c.confidential.is_(False)
    if viewer is None:
        return public
    me = bindparam("viewer_id")
    ways = [public, _ISSUES.c.author_id == me, _assigned(me)]
    if where != "project":
        ways.append(_ISSUES.c.project_id.in_(project_finder.reachable(policy.CONFIDENTIAL_LEVEL)))
    return or_(*ways)


def _labelled(name: Any) -> ColumnElement[bool]:
    """The issue carries a label titled `name` (a bind parameter, or an expanding one)."""
    titled = select(Label.id).where(
        Label.title.in_(name) if getattr(name, "expanding", False) else Label.title == name
    )
    return shared.labelled(_ISSUES, ISSUE, titled)


def _any_label() -> ColumnElement[bool]:
    return shared.any_label(_ISSUES, ISSUE)


def _milestone(kind: str, p: str) -> ColumnElement[bool]:
    column = _ISSUES.c.milestone_id
    if kind == "none":
        return column.is_(None)
    if kind == "any":
        return column.is_not(None)
    today = bindparam("today", type_=Date())
    if kind == "title":
        return column.in_(select(Milestone.id).where(Milestone.title == bindparam(p + "milestone")))
    if kind == "started":
        started = select(Milestone.id).where(
            Milestone.state == "active",
            Milestone.start_date <= today,
            or_(Milestone.due_date.is_(None), Milestone.due_date >= today),
        )
        return column.in_(started)
    # upcoming: the milestone due soonest after today among its project's (group's) active ones
    other = Milestone.__table__.alias("sooner")
    soonest = (
        select(func.min(other.c.due_date))
        .where(
            other.c.state == "active",
            other.c.due_date > today,
            or_(
                and_(other.c.project_id.is_not(None), other.c.project_id == Milestone.project_id),
                and_(other.c.group_id.is_not(None), other.c.group_id == Milestone.group_id),
            ),
        )
        .scalar_subquery()
    )
    upcoming = select(Milestone.id).where(
        Milestone.state == "active", Milestone.due_date > today, Milestone.due_date == soonest
    )
    return column.in_(upcoming)


def _user_named(name: Any) -> Any:
    if getattr(name, "expanding", False):
        return select(User.id).where(func.lower(User.username).in_(name))
    return select(User.id).where(func.lower(User.username) == name)


def _condition(f: tuple[Any, ...]) -> ColumnElement[bool]:
    """One filter's condition; a `not_` filter is the negation of its positive form."""
    name = f[0]
    negated = name.startswith("not_")
    p = "not_" if negated else ""
    base = name[4:] if negated else name
    c = _ISSUES.c
    cond: ColumnElement[bool]
    if base == "state":
        cond = c.state == f[1]
    elif base == "labels":
        if f[1] == "none":
            cond = ~_any_label()
        elif f[1] == "any":
            cond = _any_label()
        else:
            cond = _labelled(bindparam(p + "labels", expanding=True))
    elif base == "label":
        cond = _labelled(bindparam(f"{p}label_{f[1]}"))
    elif base == "milestone":
        cond = _milestone(f[1], p)
    elif base == "author_id":
        cond = c.author_id == bindparam(p + "author_id")
    elif base == "author_username":
        cond = c.author_id.in_(_user_named(bindparam(p + "author_username")))
    elif base == "assignee":
        anyone = select(IssueAssignee.issue_id)
        if f[1] == "none":
            cond = c.id.not_in(anyone)
        elif f[1] == "any":
            cond = c.id.in_(anyone)
        else:
            cond = _assigned(bindparam(p + "assignee_id"))
    elif base == "assignee_username":
        cond = _assigned(_user_named(bindparam(f"{p}assignee_username_{f[1]}")).scalar_subquery())
    elif base == "assignee_usernames":
        assigned = select(IssueAssignee.issue_id).where(
            IssueAssignee.user_id.in_(_user_named(bindparam(p + "assignee_usernames", expanding=True)))
        )
        cond = c.id.in_(assigned)
    elif base == "reaction":
        cond = shared.reaction(_ISSUES, ISSUE, f[1], p + "reaction")
    elif base == "weight":
        if f[1] == "none":
            cond = c.weight.is_(None)
        elif f[1] == "any":
            cond = c.weight.is_not(None)
        else:
            cond = c.weight == bindparam(p + "weight")
    elif base == "iids":
        cond = c.iid.in_(bindparam(p + "iids", expanding=True))
    elif base == "search":
        term = bindparam(p + "search")
        texts = [c.title if field == "title" else c.description for field in f[1]]
        if negated:  # NOT (NULL LIKE …) is not true: an issue without a description matches
            texts = [func.coalesce(text, "") for text in texts]
        cond = or_(*(holds(text, term) for text in texts))
    elif base == "scope":
        cond = shared.scoped(_ISSUES, f[1], _assigned)
    elif base in shared.DATED:
        cond = shared.dated(_ISSUES, base)
    elif base == "due":
        cond = _due(f[1])
    elif base == "confidential":
        cond = c.confidential.is_(f[1])
    elif base == "issue_type":
        cond = c.issue_type == f[1]
    else:  # pragma: no cover - every shape above is handled
        raise ValueError(name)
    if not negated:
        return cond
    nullable = {
        "author_id": c.author_id,
        "author_username": c.author_id,
        "weight": c.weight,
        "milestone": c.milestone_id,
    }
    if base in nullable and f[-1] not in ("none", "any"):
        # `not[milestone]=v1` keeps issues without a milestone: NOT (NULL IN …) is not true in SQL.
        return or_(~cond, nullable[base].is_(None))
    return ~cond


def _due(keyword: str) -> ColumnElement[bool]:
    column = _ISSUES.c.due_date
    today = bindparam("today", type_=Date())
    if keyword == "0":
        return column.is_(None)
    if keyword == "any":
        return column.is_not(None)
    if keyword == "overdue":
        return column < today
    return and_(column >= bindparam("due_from", type_=Date()), column <= bindparam("due_to", type_=Date()))


def _label_priority() -> Any:
    return (
        select(func.min(LabelPriority.priority))
        .select_from(LabelLink)
        .join(
            LabelPriority,
            and_(
                LabelPriority.label_id == LabelLink.label_id, LabelPriority.project_id == _ISSUES.c.project_id
            ),
        )
        .where(LabelLink.target_type == ISSUE, LabelLink.target_id == _ISSUES.c.id)
        .correlate(_ISSUES)
        .scalar_subquery()
    )


def _milestone_due() -> Any:
    return (
        select(Milestone.due_date)
        .where(Milestone.id == _ISSUES.c.milestone_id)
        .correlate(_ISSUES)
        .scalar_subquery()
    )


def _order(order_by: str, sort: str) -> list[Any]:
    c = _ISSUES.c
    asc = sort == "asc"

    def directed(column: Any, nulls_last: bool = False) -> Any:
        ordered = column.asc() if asc else column.desc()
        return ordered.nulls_last() if nulls_last else ordered

    tie = c.id.asc() if asc else c.id.desc()
    if order_by == "priority":
        return [directed(_milestone_due(), True), directed(_label_priority(), True), tie]
    keys: dict[str, tuple[Any, bool]] = {
        "created_at": (c.created_at, False),
        "updated_at": (c.updated_at, False),
        "due_date": (c.due_date, True),
        "relative_position": (c.relative_position, True),
        "label_priority": (_label_priority(), True),
        "milestone_due": (_milestone_due(), True),
        "popularity": (c.upvotes, False),
        "weight": (c.weight, True),
        "title": (c.title, False),
    }
    column, nulls = keys[order_by]
    return [directed(column, nulls), tie]


def _build(
    viewer: Any,
    where: str,
    sees_all: bool,
    non_archived: bool,
    filters: tuple[Any, ...],
    order_by: str,
    sort: str,
) -> Listing:
    stmt = select(_ISSUES.c.id)
    if where == "project":
        stmt = stmt.where(_ISSUES.c.project_id == bindparam("scope_project_id"))
    else:
        searched = any(f[0] in ("search", "not_search") for f in filters)
        stmt = stmt.where(_projects_with_issues(viewer, where, non_archived, scan=searched))
    confidential = _confidential(viewer, where, sees_all)
    if confidential is not None:
        stmt = stmt.where(confidential)
    for f in filters:
        stmt = stmt.where(_condition(f))
    # Counted at most TOTAL_LIMIT + 1 (queries.paging), from a statement kept with the list's.
    rows = stmt.with_only_columns(literal(1), maintain_column_froms=True)
    count = reusable(select(capped_count(rows)))
    ordered = stmt.order_by(*_order(order_by, sort))
    counted_page = None
    if where != "project" and any(f[0] in ("search", "not_search") for f in filters):
        windowed = ordered.add_columns(func.count().over().label("total"))
        counted_page = reusable(windowed.limit(bindparam("page_limit")).offset(bindparam("page_offset")))
    return Listing(reusable(ordered), count, counted_page)


def page(db: Session, listing: Listing, values: dict[str, Any], page: Page) -> PageResult:
    """One page of a list (list_statement), as IssueRows: the page's ids, then their rows
    (the rows' subqueries run for the page alone, not for every issue the list sorts)."""
    if listing.counted_page is not None:
        bounds = {"page_limit": page.per_page + 1, "page_offset": page.offset}
        found = run(db, listing.counted_page, {**values, **bounds}).all()
        if found or page.page == 1:
            total = found[0][1] if found else 0
            ids = [row[0] for row in found[: page.per_page]]
            return PageResult(
                items=rows_by_ids(db, ids),
                total=None if total > TOTAL_LIMIT else total,
                has_next=len(found) > page.per_page,
            )
    result = offset_page(db, listing.ids, page, core=True, params=values, count=listing.count)
    result.items = rows_by_ids(db, [row[0] for row in result.items])
    return result
