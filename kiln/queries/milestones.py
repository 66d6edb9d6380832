"""Milestone reads: a project's or group's milestones (with those of the groups above it, or
the subgroups and projects below a group), one milestone of its owner, the issues planned
against a milestone that the caller may see, and what a burndown chart is drawn from. The
ORM `Milestone` is for writes. Statements are built once per shape; values are parameters."""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Iterable
from datetime import date, datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Date,
    Select,
    and_,
    bindparam,
    delete,
    false,
    func,
    literal,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import (
    EpicIssue,
    Issue,
    IssueAssignee,
    LabelLink,
    LabelPriority,
    MergeRequest,
    Milestone,
    Namespace,
    Project,
    ResourceStateEvent,
)
from kiln.models.namespaces import GUEST, KIND_GROUP, PUBLIC
from kiln.models.notes import ISSUE, MERGE_REQUEST
from kiln.models.projects import DISABLED, ENABLED, FEATURE_PRIVATE
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries import issues as issue_finder
from kiln.queries import projects as project_finder
from kiln.queries.paging import capped_count, offset_page
from kiln.queries.reads import reusable, row_column, run
from kiln.queries.shapes import Shapes
from kiln.queries.text import ESCAPE, escape_like

_M = Milestone.__table__
_P = Project.__table__.alias("milestone_project")
_PN = Namespace.__table__.alias("milestone_project_ns")
_G = Namespace.__table__.alias("milestone_group")

_COLUMNS = (
    "id",
    "iid",
    "project_id",
    "group_id",
    "title",
    "description",
    "state",
    "created_at",
    "updated_at",
    "due_date",
    "start_date",
)
# `project_path`: the full path of a project milestone's project; `group_path`: a group
# milestone's group's full path (what web_url is built from).
MilestoneRow = namedtuple("MilestoneRow", (*_COLUMNS, "project_path", "group_path"))  # type: ignore[misc]
# What a burndown is drawn from: an issue's creation, weight and state, and its closes and
# reopenings (`action` closed or reopened) in order.
BurndownIssue = namedtuple("BurndownIssue", ["id", "created_at", "weight", "state"])  # type: ignore[misc]
StateChange = namedtuple("StateChange", ["issue_id", "action", "created_at"])  # type: ignore[misc]

# GitLab's fuzzy search: words of at least this many characters match anywhere in a column
# (all of them); a query with none matches the whole column, ignoring case.
MIN_WORD = 2
_QUOTED_OR_WORD = re.compile(r'"([^"]+)"|(\S+)')


def _selected() -> list[Any]:
    path = _PN.c.full_path + "/" + _P.c.path
    return [*(row_column(_M.c[name]) for name in _COLUMNS), path.label("project_path"), _G.c.full_path]


def _joined(stmt: Select[Any]) -> Select[Any]:
    return stmt.select_from(
        _M.outerjoin(_P, _P.c.id == _M.c.project_id)
        .outerjoin(_PN, _PN.c.id == _P.c.namespace_id)
        .outerjoin(_G, _G.c.id == _M.c.group_id)
    )


def _row(row: Any) -> MilestoneRow:
    return MilestoneRow._make(row)


@cache
def _by_ids_statement() -> Select[Any]:
    return reusable(_joined(select(*_selected())).where(_M.c.id.in_(bindparam("ids", expanding=True))))


def rows_by_ids(db: Session, ids: Iterable[int]) -> dict[int, MilestoneRow]:
    """Milestones by id, as the views of what is planned for them show them (issues, boards,
    resource events), in one statement."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {row[0]: _row(row) for row in run(db, _by_ids_statement(), {"ids": wanted})}


# ----------------------------------------------------------------------------- visibility

_VIEWER = bindparam("viewer_id")
_TODAY = bindparam("viewer_today", type_=Date())


# Statements are kept per kind of viewer (project_finder.viewer_of); their ids are values.
Viewer = project_finder.Viewer
viewer_of = project_finder.viewer_of


def _feature_open(viewer: Viewer, column: Any, project_id: Any) -> ColumnElement[bool]:
    """A project feature open to the viewer (the project itself already visible): enabled,
    or private and the viewer a member; administrators see any feature not disabled."""
    if viewer == "admin":
        return column != DISABLED
    if viewer is None:
        return column == ENABLED
    return or_(
        column == ENABLED, and_(column == FEATURE_PRIVATE, project_id.in_(project_finder.reachable(GUEST)))
    )


def _group_visible(viewer: Viewer, ns: Any) -> ColumnElement[bool]:
    """Groups the viewer may read: open ones, and those a membership reaches or relates them to."""
    if viewer == "admin":
        return true()
    if viewer is None:
        return ns.c.visibility == PUBLIC
    levels = access.group_levels(_VIEWER, today=_TODAY)
    related = access.related_group_ids(_VIEWER, _TODAY).subquery("milestone_related")
    return or_(
        ns.c.visibility.in_(viewer),
        ns.c.id.in_(select(levels.c.namespace_id)),
        ns.c.id.in_(select(related.c.id)),
    )


def _viewer_values(actor: Actor | None) -> dict[str, Any]:
    return project_finder.viewer_params(actor)


# ----------------------------------------------------------------------------- lists


def _words(query: str) -> list[str]:
    """The terms of a fuzzy search: quoted phrases and words, those long enough to match
    anywhere; none when every term is shorter (the query then matches a whole column)."""
    terms = [m.group(1) or m.group(2) for m in _QUOTED_OR_WORD.finditer(query.strip())]
    return [t for t in terms if len(t) >= MIN_WORD]


def _fuzzy(column: Any, prefix: str, count: int) -> ColumnElement[bool]:
    lowered = func.lower(column)
    if count == 0:
        return lowered == bindparam(f"{prefix}_exact")
    return and_(*(lowered.like(bindparam(f"{prefix}_{i}"), escape=ESCAPE) for i in range(count)))


def _fuzzy_values(prefix: str, query: str) -> dict[str, Any]:
    words = _words(query)
    if not words:
        return {f"{prefix}_exact": " ".join(query.split()).lower()}
    return {f"{prefix}_{i}": f"%{escape_like(w.lower())}%" for i, w in enumerate(words)}


# scope: "project" (one project's), "project_tree" (with its groups'), "group" (one group's),
# "group_tree" (with ancestors and/or descendants, and the descendants' projects).
_LISTS: Shapes[Select[Any]] = Shapes()


def _scope(shape: tuple[Any, ...]) -> ColumnElement[bool]:
    scope, viewer, descendants = shape
    if scope == "project":
        return _M.c.project_id == bindparam("project_id")
    if scope == "project_tree":
        return or_(
            _M.c.project_id == bindparam("project_id"),
            _M.c.group_id.in_(bindparam("group_ids", expanding=True)),
        )
    if scope == "group":
        return _M.c.group_id == bindparam("group_id")
    ns = Namespace.__table__.alias("milestone_scope_ns")
    tree = [ns.c.id.in_(bindparam("ancestor_ids", expanding=True))]
    if descendants:
        tree.append(access.within_range(ns.c, bindparam("tree_start"), bindparam("tree_end")))
    groups = select(ns.c.id).where(ns.c.kind == KIND_GROUP, or_(*tree), _group_visible(viewer, ns))
    owners = [_M.c.group_id.in_(groups)]
    if descendants:
        owners.append(_M.c.project_id.in_(_projects_below(viewer)))
    return or_(*owners)


def _projects_below(viewer: Viewer) -> Select[Any]:
    """Projects under the group the viewer sees, with issues or merge requests open to them."""
    pn = Namespace.__table__.alias("milestone_below_ns")
    return (
        select(Project.id)
        .join(pn, pn.c.id == Project.namespace_id)
        .where(
            access.within_range(pn.c, bindparam("tree_start"), bindparam("tree_end")),
            project_finder.visible_for(viewer),
            or_(
                _feature_open(viewer, Project.issues_access_level, Project.id),
                _feature_open(viewer, Project.merge_requests_access_level, Project.id),
            ),
        )
    )


def _list_statement(shape: tuple[Any, ...], filters: tuple[Any, ...]) -> Select[Any]:
    state, iids, title, search, search_title, before, after, timeframe = filters
    stmt = _joined(select(*_selected())).where(_scope(shape))
    if state != "all":
        stmt = stmt.where(_M.c.state == bindparam("state"))
    if iids:
        stmt = stmt.where(_M.c.iid.in_(bindparam("iids", expanding=True)))
    if title:
        stmt = stmt.where(_M.c.title == bindparam("title"))
    if search is not None:
        stmt = stmt.where(
            or_(_fuzzy(_M.c.title, "search", search), _fuzzy(_M.c.description, "search", search))
        )
    if search_title is not None:
        stmt = stmt.where(_fuzzy(_M.c.title, "search_title", search_title))
    if before:
        stmt = stmt.where(_M.c.updated_at <= bindparam("updated_before", type_=_M.c.updated_at.type))
    if after:
        stmt = stmt.where(_M.c.updated_at >= bindparam("updated_after", type_=_M.c.updated_at.type))
    if timeframe:
        stmt = stmt.where(
            or_(_M.c.start_date.is_not(None), _M.c.due_date.is_not(None)),
            or_(_M.c.start_date.is_(None), _M.c.start_date <= bindparam("frame_end", type_=Date())),
            or_(_M.c.due_date.is_(None), _M.c.due_date >= bindparam("frame_start", type_=Date())),
        )
    # GitLab's default order: due date first (none last), newest first among equals.
    return stmt.order_by(_M.c.due_date.is_(None), _M.c.due_date, _M.c.id.desc())


class ListScope:
    """Whose milestones a list holds: a project's (with `group_ids`, its groups' too) or a
    group's (with its visible ancestors `ancestor_ids` and, `below` set to the group's
    traversal, everything under it)."""

    def __init__(
        self,
        *,
        project_id: int | None = None,
        group_ids: list[int] | None = None,
        group_id: int | None = None,
        ancestor_ids: list[int] | None = None,
        below: str | None = None,
    ) -> None:
        self.project_id = project_id
        self.group_ids = group_ids
        self.group_id = group_id
        self.ancestor_ids = ancestor_ids
        self.below = below

    def shape(self, viewer: Viewer) -> tuple[Any, ...]:
        if self.project_id is not None:
            return ("project_tree" if self.group_ids is not None else "project", None, False)
        if self.ancestor_ids is None and self.below is None:
            return ("group", None, False)
        return ("group_tree", viewer, self.below is not None)

    def values(self) -> dict[str, Any]:
        if self.project_id is not None:
            out: dict[str, Any] = {"project_id": self.project_id}
            if self.group_ids is not None:
                out["group_ids"] = self.group_ids
            return out
        if self.ancestor_ids is None and self.below is None:
            return {"group_id": self.group_id}
        out = {"ancestor_ids": self.ancestor_ids or [self.group_id]}
        if self.below is not None:
            out["tree_start"], out["tree_end"] = access.within_bounds(self.below)
        return out


def page_of(
    db: Session,
    actor: Actor | None,
    scope: ListScope,
    *,
    state: str,
    iids: list[int] | None,
    title: str | None,
    search: str | None,
    search_title: str | None,
    updated_before: datetime | None,
    updated_after: datetime | None,
    frame: tuple[date, date] | None,
    page: Page,
) -> PageResult:
    """One page of milestones, in one statement (and a count when the page is not the last)."""
    viewer = viewer_of(actor)
    search_words = None if not search else len(_words(search))
    title_words = None if not search_title else len(_words(search_title))
    filters = (
        state,
        bool(iids),
        title is not None,
        search_words,
        title_words,
        updated_before is not None,
        updated_after is not None,
        frame is not None,
    )
    shape = scope.shape(viewer)
    stmt = _LISTS.get((shape, filters), lambda: _list_statement(shape, filters))
    values = scope.values()
    if shape[0] == "group_tree" and viewer not in (None, "admin"):
        values.update(_viewer_values(actor))
    if state != "all":
        values["state"] = state
    if iids:
        values["iids"] = iids
    if title is not None:
        values["title"] = title
    if search:
        values.update(_fuzzy_values("search", search))
    if search_title:
        values.update(_fuzzy_values("search_title", search_title))
    if updated_before is not None:
        values["updated_before"] = updated_before
    if updated_after is not None:
        values["updated_after"] = updated_after
    if frame is not None:
        values["frame_start"], values["frame_end"] = frame
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [_row(r) for r in result.items]
    return result


# ----------------------------------------------------------------------------- one


@cache
def _one_statement(owner: str) -> Select[Any]:
    column = _M.c.group_id if owner == "group" else _M.c.project_id
    return _joined(select(*_selected())).where(
        _M.c.id == bindparam("milestone_id"), column == bindparam("owner")
    )


def milestone_of(
    db: Session, milestone_id: int, *, project_id: int | None = None, group_id: int | None = None
) -> MilestoneRow | None:
    """A milestone by id, only if it is the given project's or group's own."""
    owner = "group" if group_id is not None else "project"
    value = group_id if group_id is not None else project_id
    row = run(db, _one_statement(owner), {"milestone_id": milestone_id, "owner": value}).first()
    return None if row is None else _row(row)


# ----------------------------------------------------------------------------- issues


def _issue_visible(viewer: Viewer, scoped: bool) -> list[ColumnElement[bool]]:
    """Issues of the milestone the viewer may read. `scoped`: all in one project already
    read (its issues open to the viewer), whose confidential issues the viewer sees all of
    or not (`see_all`); otherwise per project: visible, issues open, and a confidential
    issue only to the project's Reporters, its author and its assignees."""
    mine = or_(
        Issue.author_id == _VIEWER,
        Issue.id.in_(select(IssueAssignee.issue_id).where(IssueAssignee.user_id == _VIEWER)),
    )
    if scoped:
        if viewer is None:
            return [Issue.project_id == bindparam("project_id"), Issue.confidential == false()]
        confidential = or_(Issue.confidential == false(), bindparam("see_all", type_=Boolean()), mine)
        return [Issue.project_id == bindparam("project_id"), confidential]
    return [issue_finder.readable(viewer)]


def _label_priority(model: Any, kind: str) -> Any:
    """The highest priority (lowest number) among the labels of the issue (merge request:
    `model`, of target type `kind`) in its project."""
    return (
        select(func.min(LabelPriority.priority))
        .join(LabelLink, LabelLink.label_id == LabelPriority.label_id)
        .where(
            LabelLink.target_type == kind,
            LabelLink.target_id == model.id,
            LabelPriority.project_id == model.project_id,
        )
        .correlate(model)
        .scalar_subquery()
    )


@cache
def _issues_statement(viewer: Viewer, scoped: bool) -> Select[Any]:
    priority = _label_priority(Issue, ISSUE)
    return (
        select(Issue.id)
        .where(Issue.milestone_id == bindparam("milestone_id"), *_issue_visible(viewer, scoped))
        .order_by(priority.is_(None), priority, Issue.id.desc())
    )


def _issue_values(
    actor: Actor | None, milestone_id: int, project_id: int | None, see_all: bool
) -> dict[str, Any]:
    values: dict[str, Any] = {"milestone_id": milestone_id}
    if project_id is not None:
        values["project_id"] = project_id
        if actor is not None:
            values["see_all"] = see_all
            values["viewer_id"] = actor.id
        return values
    if actor is not None and not actor.is_admin:
        values.update(_viewer_values(actor))
    return values


def issue_page(
    db: Session,
    actor: Actor | None,
    milestone_id: int,
    page: Page,
    *,
    project_id: int | None = None,
    see_all: bool = False,
) -> PageResult:
    """Ids of a page of the milestone's issues the actor may read, by label priority then
    newest first: within one project (`project_id`, whose confidential issues the actor sees
    all of with `see_all`), or across every project (a group milestone's)."""
    stmt = _issues_statement(viewer_of(actor), project_id is not None)
    values = _issue_values(actor, milestone_id, project_id, see_all)
    result = offset_page(db, stmt, page, core=True, params=values)
    result.items = [r[0] for r in result.items]
    return result


# ----------------------------------------------------------------------------- merge requests


def _merge_request_finder() -> Any:
    """queries.merge_requests, imported when first used: it imports this module's MilestoneRow."""
    from kiln.queries import merge_requests

    return merge_requests


@cache
def _merge_requests_listing(viewer: Viewer, scoped: bool) -> Any:
    """A project milestone's merge requests (the project's, already readable), or a group
    milestone's in every project whose merge requests the viewer may read: the merge request
    list's Listing (ids in order, capped count)."""
    finder = _merge_request_finder()
    where = (
        MergeRequest.project_id == bindparam("project_id")
        if scoped
        else MergeRequest.project_id.in_(finder.readable_projects(viewer))
    )
    stmt = select(MergeRequest.id).where(MergeRequest.milestone_id == bindparam("milestone_id"), where)
    priority = _label_priority(MergeRequest, MERGE_REQUEST)
    rows = stmt.with_only_columns(literal(1), maintain_column_froms=True)
    return finder.Listing(
        reusable(stmt.order_by(priority.is_(None), priority, MergeRequest.id.desc())),
        reusable(select(capped_count(rows))),
    )


def merge_request_page(
    db: Session, actor: Actor | None, milestone_id: int, page: Page, *, project_id: int | None = None
) -> PageResult:
    """A page of the milestone's merge requests the actor may read (within `project_id`,
    whose merge requests the caller reads, or across every project: a group milestone's), by
    label priority then newest first, as the merge request list's rows."""
    values: dict[str, Any] = {"milestone_id": milestone_id}
    if project_id is not None:
        values["project_id"] = project_id
    else:
        values.update(_viewer_values(actor))
    listing = _merge_requests_listing(viewer_of(actor), project_id is not None)
    return _merge_request_finder().page(db, listing, values, page)


@cache
def _burndown_statement(viewer: Viewer, scoped: bool) -> Select[Any]:
    return (
        select(Issue.id, row_column(Issue.created_at), Issue.weight, Issue.state)
        .where(
            Issue.milestone_id == bindparam("milestone_id"),
            Issue.created_at < bindparam("until", type_=Issue.created_at.type),
            *_issue_visible(viewer, scoped),
        )
        .order_by(Issue.id)
    )


@cache
def _state_changes_statement() -> Select[Any]:
    return (
        select(
            ResourceStateEvent.target_id, ResourceStateEvent.state, row_column(ResourceStateEvent.created_at)
        )
        .where(
            ResourceStateEvent.target_type == ISSUE,
            ResourceStateEvent.target_id.in_(bindparam("issue_ids", expanding=True)),
            ResourceStateEvent.state.in_(("closed", "reopened")),
            ResourceStateEvent.created_at < bindparam("until", type_=ResourceStateEvent.created_at.type),
        )
        .order_by(ResourceStateEvent.created_at, ResourceStateEvent.id)
    )


def burndown_rows(
    db: Session,
    actor: Actor | None,
    milestone_id: int,
    until: datetime,
    *,
    project_id: int | None = None,
    see_all: bool = False,
) -> tuple[list[BurndownIssue], list[StateChange]]:
    """The milestone's issues the actor may read created before `until`, and their closes
    and reopenings before it, in two statements."""
    values = _issue_values(actor, milestone_id, project_id, see_all)
    values["until"] = until
    stmt = _burndown_statement(viewer_of(actor), project_id is not None)
    issues = [BurndownIssue._make(r) for r in run(db, stmt, values)]
    if not issues:
        return [], []
    found = run(db, _state_changes_statement(), {"issue_ids": [i.id for i in issues], "until": until})
    return issues, [StateChange._make(r) for r in found]


# ----------------------------------------------------------------------------- titles


def title_taken(
    db: Session,
    title: str,
    *,
    project_ids: Select[Any] | list[int],
    group_ids: list[int],
    except_id: int | None = None,
) -> bool:
    """Whether a milestone of these projects or groups has this title (GitLab's titles are
    unique across a project and its groups, and across a group's whole hierarchy)."""
    stmt = select(Milestone.id).where(
        Milestone.title == title,
        or_(Milestone.project_id.in_(project_ids), Milestone.group_id.in_(group_ids)),
    )
    if except_id is not None:
        stmt = stmt.where(Milestone.id != except_id)
    return db.execute(stmt.limit(1)).first() is not None


def projects_in_tree(traversal: str) -> Select[Any]:
    """Ids of every project in a group or below it."""
    pn = Namespace.__table__.alias("milestone_tree_ns")
    start, end = access.within_bounds(traversal)
    return (
        select(Project.id)
        .join(pn, pn.c.id == Project.namespace_id)
        .where(access.within_range(pn.c, start, end))
    )


def descendant_group_ids(db: Session, traversal: str) -> list[int]:
    """The group and every group below it."""
    start, end = access.within_bounds(traversal)
    ns = Namespace.__table__
    stmt = select(ns.c.id).where(ns.c.kind == KIND_GROUP, access.within_range(ns.c, start, end))
    return [r[0] for r in db.execute(stmt)]


def direct_project_ids(db: Session, group_id: int) -> list[int]:
    """The projects right in a group (not its subgroups'): a promoted milestone's siblings."""
    return [r[0] for r in db.execute(select(Project.id).where(Project.namespace_id == group_id))]


def same_titled(db: Session, title: str, project_ids: list[int]) -> list[int]:
    """The milestones titled `title` of the projects: those a promotion merges."""
    return list(
        db.scalars(
            select(Milestone.id).where(Milestone.title == title, Milestone.project_id.in_(project_ids))
        )
    )


def move_planned(db: Session, project_ids: list[int], from_ids: list[int], to_id: int) -> None:
    """The issues and merge requests of the projects planned for milestones `from_ids` move to
    milestone `to_id` (one statement each), then those milestones go."""
    for model in (Issue, MergeRequest):
        db.execute(
            update(model)
            .where(model.project_id.in_(project_ids), model.milestone_id.in_(from_ids))
            .values(milestone_id=to_id)
            .execution_options(synchronize_session=False)
        )
    db.execute(
        delete(Milestone).where(Milestone.id.in_(from_ids)).execution_options(synchronize_session=False)
    )


def planning_epic_ids(db: Session, milestone_id: int) -> list[int]:
    """Epics holding issues planned for the milestone: their inherited dates follow it."""
    return list(
        db.scalars(
            select(EpicIssue.epic_id)
            .join(Issue, Issue.id == EpicIssue.issue_id)
            .where(Issue.milestone_id == milestone_id)
            .distinct()
        )
    )


def release_issues(db: Session, milestone_id: int, now: datetime) -> list[Any]:
    """The milestone's issues lose it (updated `now`): their (id, iid, project_id, state,
    confidential) as they were, nothing written when it has none."""
    planned = db.execute(
        select(Issue.id, Issue.iid, Issue.project_id, Issue.state, Issue.confidential).where(
            Issue.milestone_id == milestone_id
        )
    ).all()
    if planned:
        db.execute(
            update(Issue)
            .where(Issue.milestone_id == milestone_id)
            .values(milestone_id=None, updated_at=now)
            .execution_options(synchronize_session=False)
        )
    return list(planned)


def planned_merge_requests(db: Session, milestone_id: int) -> list[MergeRequest]:
    """The merge requests planned for the milestone (the models, to change)."""
    return list(db.scalars(select(MergeRequest).where(MergeRequest.milestone_id == milestone_id)))
