"""Merge request reads: the row a merge request view renders (its assignees' and reviewers'
ids, its project's path, its unresolved threads and its latest version's size in the same
statement), what the views of a page need besides (labels, users, milestones: one statement
each, whatever the page's size), the head pipeline, the three lists' statements, and the
subject lookup every merge request route starts from. The ORM `MergeRequest` is for writes."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    and_,
    bindparam,
    cast,
    exists,
    false,
    func,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session

from kiln import policy
from kiln.models import (
    Approval,
    ApprovalRule,
    ApprovalRuleUser,
    AwardEmoji,
    Label,
    LabelLink,
    MergeRequest,
    MergeRequestAssignee,
    MergeRequestDiff,
    MergeRequestDiffCommit,
    MergeRequestReviewer,
    Milestone,
    Namespace,
    Note,
    Pipeline,
    Project,
    User,
)
from kiln.models.namespaces import PRIVATE, PUBLIC
from kiln.models.notes import MERGE_REQUEST
from kiln.models.projects import DISABLED, ENABLED
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries import milestones as milestone_finder
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.milestones import MilestoneRow
from kiln.queries.paging import capped_count, offset_page
from kiln.queries.reads import reusable, row_columns, run
from kiln.queries.text import ESCAPE, contains, escape_like
from kiln.queries.users import UserRow

_MRS = MergeRequest.__table__
_MR_FIELDS = [c.key for c in _MRS.c]
# After the merge request's own columns: its assignees' and reviewers' ids ("3,5", NULL for
# none, in the order they were added), its (target) project's full path and namespace, the
# source project's full path, how many resolvable threads' notes are unresolved, and the
# latest version's file count.
_EXTRA_FIELDS = [
    "assignee_list",
    "reviewer_list",
    "project_path",
    "namespace_id",
    "source_project_path",
    "unresolved_count",
    "changes_count",
]


class MergeRequestRow(namedtuple("MergeRequestRow", [*_MR_FIELDS, *_EXTRA_FIELDS])):  # type: ignore[misc]
    """A merge request as its views read it; times are the API's strings already."""

    __slots__ = ()

    @property
    def assignee_ids(self) -> list[int]:
        return [int(part) for part in self.assignee_list.split(",")] if self.assignee_list else []

    @property
    def reviewer_ids(self) -> list[int]:
        return [int(part) for part in self.reviewer_list.split(",")] if self.reviewer_list else []


def _people(table: Any) -> Any:
    ordered = (
        select(cast(table.user_id, String).label("user_id"))
        .where(table.merge_request_id == _MRS.c.id)
        .order_by(table.created_at, table.user_id)
        .correlate(_MRS)
        .subquery()
    )
    return select(func.aggregate_strings(ordered.c.user_id, ",")).scalar_subquery()


def _path_of(project_id: Any) -> Any:
    return (
        select(Namespace.full_path + "/" + Project.path)
        .select_from(Project)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(Project.id == project_id)
        .correlate(_MRS)
        .scalar_subquery()
    )


def _namespace_id() -> Any:
    return (
        select(Project.namespace_id).where(Project.id == _MRS.c.project_id).correlate(_MRS).scalar_subquery()
    )


def _unresolved() -> Any:
    return (
        select(func.count())
        .select_from(Note)
        .where(
            Note.noteable_type == MERGE_REQUEST,
            Note.noteable_id == _MRS.c.id,
            Note.resolvable.is_(True),
            Note.resolved_at.is_(None),
        )
        .correlate(_MRS)
        .scalar_subquery()
    )


def _changes_count() -> Any:
    return (
        select(MergeRequestDiff.files_count)
        .where(MergeRequestDiff.id == _MRS.c.latest_diff_id)
        .correlate(_MRS)
        .scalar_subquery()
    )


def row_selection() -> list[ColumnElement[Any]]:
    """The columns of a MergeRequestRow, selected from the merge_requests table."""
    return [
        *row_columns(_MRS),
        _people(MergeRequestAssignee).label("assignee_list"),
        _people(MergeRequestReviewer).label("reviewer_list"),
        _path_of(_MRS.c.project_id).label("project_path"),
        _namespace_id().label("namespace_id"),
        _path_of(_MRS.c.source_project_id).label("source_project_path"),
        _unresolved().label("unresolved_count"),
        _changes_count().label("changes_count"),
    ]


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*row_selection()).where(_MRS.c.id.in_(bindparam("ids", expanding=True)))


def rows_by_ids(db: Session, ids: list[int]) -> list[MergeRequestRow]:
    """The merge requests `ids` as their views read them, in that order (absent ones left
    out); one statement whatever their number. Callers decide who may see them."""
    if not ids:
        return []
    found = {row[0]: MergeRequestRow._make(row) for row in run(db, _by_ids_statement(), {"ids": list(ids)})}
    return [found[i] for i in ids if i in found]


def row_by_id(db: Session, merge_request_id: int) -> MergeRequestRow | None:
    rows = rows_by_ids(db, [merge_request_id])
    return rows[0] if rows else None


def subject_row(db: Session, project_id: int, iid: int) -> tuple[MergeRequest, list[int], list[int]] | None:
    """Merge request `iid` of the (target) project (the model), its assignees' and its
    reviewers' ids, or None."""
    found = db.scalars(
        select(MergeRequest).where(MergeRequest.project_id == project_id, MergeRequest.iid == iid)
    ).first()
    if found is None:
        return None
    people = db.execute(
        select(MergeRequestAssignee.user_id, MergeRequestAssignee.created_at, literal(1))
        .where(MergeRequestAssignee.merge_request_id == found.id)
        .union_all(
            select(MergeRequestReviewer.user_id, MergeRequestReviewer.created_at, literal(0)).where(
                MergeRequestReviewer.merge_request_id == found.id
            )
        )
    ).all()
    ordered = sorted(people, key=lambda r: (r[1], r[0]))
    return found, [r[0] for r in ordered if r[2]], [r[0] for r in ordered if not r[2]]


# ----------------------------------------------------------------------------- related rows

LabelRow = namedtuple(  # type: ignore[misc]
    "LabelRow", ["target_id", "id", "title", "color", "description", "project_id", "group_id"]
)


@dataclass(slots=True)
class Related:
    """What the views of some merge requests show besides their rows, keyed for the entity."""

    labels: dict[int, list[LabelRow]] = field(default_factory=dict)  # by merge request id
    users: dict[int, UserRow] = field(default_factory=dict)  # by user id
    milestones: dict[int, MilestoneRow] = field(default_factory=dict)  # by milestone id


@cache
def _labels_statement() -> Select[Any]:
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
        .where(
            LabelLink.target_type == MERGE_REQUEST,
            LabelLink.target_id.in_(bindparam("ids", expanding=True)),
        )
    )


def related_of(db: Session, rows: list[MergeRequestRow]) -> Related:
    """Labels, people (authors, assignees, reviewers, closers, mergers) and milestones of
    `rows`: at most three statements, whatever their number."""
    out = Related()
    if not rows:
        return out
    for label in run(db, _labels_statement(), {"ids": [row.id for row in rows]}):
        out.labels.setdefault(label[0], []).append(LabelRow._make(label))
    user_ids: dict[int, None] = {}
    for row in rows:
        people = (
            row.author_id,
            *row.assignee_ids,
            *row.reviewer_ids,
            row.closed_by_id,
            row.merged_by_id,
            row.merge_user_id,
        )
        for uid in people:
            if uid is not None:
                user_ids[uid] = None
    out.users = {u.id: u for u in user_finder.rows_by_ids(db, list(user_ids))}
    milestone_ids = list(dict.fromkeys(row.milestone_id for row in rows if row.milestone_id is not None))
    if milestone_ids:
        out.milestones = dict(milestone_finder.rows_by_ids(db, milestone_ids))
    return out


# ----------------------------------------------------------------------------- one merge request


def head_pipeline_id(db: Session, row: Any) -> int | None:
    """GitLab's head pipeline: the newest pipeline for the head commit, on the source branch
    of the source project or a merge request pipeline of this merge request."""
    if row.head_sha is None:
        return None
    ways = [Pipeline.merge_request_id == row.id]
    if row.source_project_id is not None:
        ways.append(
            and_(
                Pipeline.project_id == row.source_project_id,
                Pipeline.ref == row.source_branch,
                Pipeline.merge_request_id.is_(None),
            )
        )
    return db.scalar(
        select(Pipeline.id)
        .where(Pipeline.sha == row.head_sha, or_(*ways))
        .order_by(Pipeline.id.desc())
        .limit(1)
    )


def latest_diff(db: Session, diff_id: int | None) -> MergeRequestDiff | None:
    return db.get(MergeRequestDiff, diff_id) if diff_id is not None else None


def diff_commits(db: Session, diff_id: int) -> list[MergeRequestDiffCommit]:
    """A version's commits, newest first."""
    return list(
        db.scalars(
            select(MergeRequestDiffCommit)
            .where(MergeRequestDiffCommit.merge_request_diff_id == diff_id)
            .order_by(MergeRequestDiffCommit.relative_order)
        )
    )


def commented_by(db: Session, merge_request_id: int, user_id: int) -> bool:
    found = db.scalar(
        select(Note.id)
        .where(
            Note.noteable_type == MERGE_REQUEST,
            Note.noteable_id == merge_request_id,
            Note.author_id == user_id,
            Note.system.is_(False),
        )
        .limit(1)
    )
    return found is not None


def commenters(db: Session, merge_request_id: int) -> list[int]:
    return list(
        db.scalars(
            select(Note.author_id)
            .where(
                Note.noteable_type == MERGE_REQUEST,
                Note.noteable_id == merge_request_id,
                Note.system.is_(False),
                Note.author_id.is_not(None),
            )
            .order_by(Note.created_at, Note.id)
        )
    )


def reviewer_rows(db: Session, merge_request_id: int) -> list[Any]:
    return list(
        db.execute(
            select(MergeRequestReviewer.user_id, MergeRequestReviewer.state, MergeRequestReviewer.created_at)
            .where(MergeRequestReviewer.merge_request_id == merge_request_id)
            .order_by(MergeRequestReviewer.created_at, MergeRequestReviewer.user_id)
        )
    )


def open_duplicate(
    db: Session,
    project_id: int,
    source_project_id: int,
    source_branch: str,
    target_branch: str,
    but: int | None,
) -> int | None:
    """The iid of an open merge request with the same branches and projects."""
    stmt = select(MergeRequest.iid).where(
        MergeRequest.project_id == project_id,
        MergeRequest.source_project_id == source_project_id,
        MergeRequest.source_branch == source_branch,
        MergeRequest.target_branch == target_branch,
        MergeRequest.state.in_(("opened", "locked")),
    )
    if but is not None:
        stmt = stmt.where(MergeRequest.id != but)
    return db.scalar(stmt.limit(1))


def ids_with_commit(db: Session, project_id: int, sha: str) -> list[int]:
    """Merge requests of the project whose versions hold the commit, or whose merge or
    squash commit it is, newest first."""
    in_versions = (
        select(MergeRequestDiff.merge_request_id)
        .join(MergeRequestDiffCommit, MergeRequestDiffCommit.merge_request_diff_id == MergeRequestDiff.id)
        .where(MergeRequestDiffCommit.sha == sha)
    )
    return list(
        db.scalars(
            select(MergeRequest.id)
            .where(
                MergeRequest.project_id == project_id,
                or_(
                    MergeRequest.id.in_(in_versions),
                    MergeRequest.merge_commit_sha == sha,
                    MergeRequest.squash_commit_sha == sha,
                ),
            )
            .order_by(MergeRequest.id.desc())
        )
    )


# ----------------------------------------------------------------------------- lists


@dataclass(frozen=True, slots=True)
class ListScope:
    """Where a list reads: one project, a group and its subgroups (`traversal`), or
    everywhere the viewer sees (neither)."""

    project_id: int | None = None
    traversal: str | None = None
    non_archived: bool = True


def readable_projects(viewer: Any, *, traversal: bool = False, non_archived: bool = False) -> Select[Any]:
    """Ids of projects whose merge requests the viewer (project_finder.viewer_of) may read:
    policy's READ_MERGE_REQUEST in SQL (the feature open to them; private projects' to
    Reporters and up). Values: project_finder.viewer_params (+ scope_traversal bounds)."""
    conditions: list[ColumnElement[bool]] = [Project.merge_requests_access_level != DISABLED]
    if traversal:
        conditions.append(
            Project.namespace_id.in_(
                select(Namespace.id).where(
                    access.within_range(
                        Namespace, bindparam("scope_traversal"), bindparam("scope_traversal_end")
                    )
                )
            )
        )
    if non_archived:
        conditions.append(Project.archived.is_(False))
    if viewer is None:
        conditions.append(and_(Project.visibility == PUBLIC, Project.merge_requests_access_level == ENABLED))
    elif viewer != "admin":
        opened = and_(
            Project.visibility.in_([v for v in viewer if v != PRIVATE]),
            Project.merge_requests_access_level == ENABLED,
        )
        member = and_(Project.visibility != PRIVATE, Project.id.in_(project_finder.reachable(None)))
        conditions.append(
            or_(opened, member, Project.id.in_(project_finder.reachable(policy.CONFIDENTIAL_LEVEL)))
        )
    return select(Project.id).where(*conditions)


def _assigned(user: Any) -> ColumnElement[bool]:
    return _MRS.c.id.in_(
        select(MergeRequestAssignee.merge_request_id).where(MergeRequestAssignee.user_id == user)
    )


def _reviewing(user: Any) -> ColumnElement[bool]:
    return _MRS.c.id.in_(
        select(MergeRequestReviewer.merge_request_id).where(MergeRequestReviewer.user_id == user)
    )


def _labelled(name: Any) -> ColumnElement[bool]:
    titled = select(Label.id).where(func.lower(Label.title) == func.lower(name))
    return exists(
        select(LabelLink.id).where(
            LabelLink.target_type == MERGE_REQUEST,
            LabelLink.target_id == _MRS.c.id,
            LabelLink.label_id.in_(titled),
        )
    )


def _any_label() -> ColumnElement[bool]:
    return exists(
        select(LabelLink.id).where(LabelLink.target_type == MERGE_REQUEST, LabelLink.target_id == _MRS.c.id)
    )


def _user_named(name: str) -> Any:
    return select(User.id).where(func.lower(User.username) == name.lower()).scalar_subquery()


def _people_filter(
    value: str | None, username: str | None, by: Any, table: Any
) -> ColumnElement[bool] | None:
    if value is not None:
        keyword = value.lower()
        anyone = select(table.merge_request_id)
        if keyword in ("none", "0"):
            return _MRS.c.id.not_in(anyone)
        if keyword == "any":
            return _MRS.c.id.in_(anyone)
        number = int(value)
        return by(number) if -(2**63) <= number < 2**63 else false()
    if username:
        return by(_user_named(username))
    return None


def _approved_by(ids: list[int] | str) -> ColumnElement[bool]:
    anyone = select(Approval.merge_request_id)
    if ids == "none":
        return _MRS.c.id.not_in(anyone)
    if ids == "any":
        return _MRS.c.id.in_(anyone)
    assert isinstance(ids, list)
    return and_(
        *(_MRS.c.id.in_(select(Approval.merge_request_id).where(Approval.user_id == uid)) for uid in ids)
    )


def _approvers(ids: list[int] | str) -> ColumnElement[bool]:
    """Merge requests whose approval rules (their own, else their project's) name the users."""
    own = (
        select(ApprovalRule.merge_request_id)
        .join(ApprovalRuleUser, ApprovalRuleUser.rule_id == ApprovalRule.id)
        .where(ApprovalRule.merge_request_id.is_not(None))
    )
    project = (
        select(ApprovalRule.project_id)
        .join(ApprovalRuleUser, ApprovalRuleUser.rule_id == ApprovalRule.id)
        .where(ApprovalRule.merge_request_id.is_(None))
    )

    def named(stmt: Any, extra: Any = None) -> Any:
        return stmt if extra is None else stmt.where(extra)

    if ids in ("none", "any"):
        has = or_(_MRS.c.id.in_(own), _MRS.c.project_id.in_(project))
        return ~has if ids == "none" else has
    assert isinstance(ids, list)
    return and_(
        *(
            or_(
                _MRS.c.id.in_(named(own, ApprovalRuleUser.user_id == uid)),
                _MRS.c.project_id.in_(named(project, ApprovalRuleUser.user_id == uid)),
            )
            for uid in ids
        )
    )


def _reaction(name: str, viewer_id: int) -> ColumnElement[bool]:
    mine = select(AwardEmoji.id).where(
        AwardEmoji.awardable_type == MERGE_REQUEST,
        AwardEmoji.awardable_id == _MRS.c.id,
        AwardEmoji.user_id == viewer_id,
    )
    keyword = name.lower()
    if keyword == "none":
        return ~exists(mine)
    if keyword == "any":
        return exists(mine)
    return exists(mine.where(AwardEmoji.name == name))


def _conditions(q: Any, viewer_id: int | None, negated: bool = False) -> list[ColumnElement[bool]]:
    """The filters of `q` (a list's parameters or its `not[...]`), each a condition."""
    c = _MRS.c
    out: list[ColumnElement[bool]] = []
    labels = [name for name in (getattr(q, "labels", None) or []) if name]
    if labels:
        keywords = {name.lower() for name in labels}
        if keywords & {"none", "no label", "no+label"}:
            out.append(~_any_label())
        elif "any" in keywords:
            out.append(_any_label())
        elif negated:
            out.append(or_(*(_labelled(literal(n)) for n in labels)))
        else:
            out.extend(_labelled(literal(n)) for n in labels)
    milestone = getattr(q, "milestone", None)
    if milestone:
        keyword = milestone.lower()
        if keyword == "none":
            out.append(c.milestone_id.is_(None))
        elif keyword == "any":
            out.append(c.milestone_id.is_not(None))
        else:
            column = func.coalesce(c.milestone_id, 0) if negated else c.milestone_id
            out.append(column.in_(select(Milestone.id).where(Milestone.title == milestone)))
    author = func.coalesce(c.author_id, 0) if negated else c.author_id
    if getattr(q, "author_id", None) is not None:
        out.append(author == q.author_id)
    elif getattr(q, "author_username", None):
        out.append(author == _user_named(q.author_username))
    assignee = _people_filter(
        getattr(q, "assignee_id", None),
        _first(getattr(q, "assignee_username", None)),
        _assigned,
        MergeRequestAssignee,
    )
    if assignee is not None:
        out.append(assignee)
    reviewer = _people_filter(
        getattr(q, "reviewer_id", None),
        getattr(q, "reviewer_username", None),
        _reviewing,
        MergeRequestReviewer,
    )
    if reviewer is not None:
        out.append(reviewer)
    emoji = getattr(q, "my_reaction_emoji", None)
    if emoji and viewer_id is not None:
        out.append(_reaction(emoji, viewer_id))
    approved = getattr(q, "approved_by_ids", None)
    if approved is not None:
        out.append(_approved_by(approved))
    approvers_named = [n for n in (getattr(q, "approved_by_usernames", None) or []) if n]
    if approvers_named:
        keyword = approvers_named[0].lower()
        if len(approvers_named) == 1 and keyword in ("none", "any"):
            out.append(_approved_by(keyword))
        else:
            out.extend(
                c.id.in_(select(Approval.merge_request_id).where(Approval.user_id == _user_named(name)))
                for name in approvers_named
            )
    approvers = getattr(q, "approver_ids", None)
    if approvers is not None:
        out.append(_approvers(approvers))
    for name in ("source_branch", "target_branch"):
        value = getattr(q, name, None)
        if value:
            out.append(c[name] == value)
    iids = getattr(q, "iids", None)
    if iids:
        out.append(c.iid.in_(list(iids)))
    search = getattr(q, "search", None)
    if search:
        fields = sorted(set(getattr(q, "in_", None) or ["title", "description"]))
        pattern = contains(search)
        texts = [c.title if f == "title" else func.coalesce(c.description, "") for f in fields]
        out.append(or_(*(func.lower(t).like(pattern, escape="\\") for t in texts)))
    wip = getattr(q, "wip", None)
    if wip is not None:
        out.append(c.draft.is_(wip == "yes"))
    return out


def _first(names: Any) -> str | None:
    if not names:
        return None
    return names[0] if isinstance(names, list) else str(names)


def _order(order_by: str, sort: str) -> list[Any]:
    c = _MRS.c
    asc = sort == "asc"
    column = {
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "title": c.title,
        "merged_at": c.merged_at,
    }.get(order_by, c.created_at)
    ordered = column.asc() if asc else column.desc()
    if order_by == "merged_at":
        ordered = ordered.nulls_last()
    return [ordered, c.id.asc() if asc else c.id.desc()]


def list_statement(
    q: Any, viewer: Any, viewer_id: int | None, scope: ListScope
) -> tuple[Select[Any], dict[str, Any]]:
    """The ids of a list's merge requests in order, and its bind values."""
    c = _MRS.c
    values: dict[str, Any] = {}
    stmt = select(c.id)
    if scope.project_id is not None:
        stmt = stmt.where(c.project_id == scope.project_id)
    else:
        stmt = stmt.where(
            c.project_id.in_(
                readable_projects(
                    viewer, traversal=scope.traversal is not None, non_archived=scope.non_archived
                )
            )
        )
        if scope.traversal is not None:
            values["scope_traversal"], values["scope_traversal_end"] = access.within_bounds(scope.traversal)
    if viewer_id is not None:
        values["viewer_id"], values["viewer_today"] = viewer_id, date.today()
    if q.state in ("opened", "closed", "locked", "merged"):
        stmt = stmt.where(c.state == q.state)
    scope_name = (q.scope or "").replace("-", "_")
    if scope_name == "created_by_me":
        stmt = stmt.where(c.author_id == viewer_id if viewer_id is not None else false())
    elif scope_name == "assigned_to_me":
        stmt = stmt.where(_assigned(viewer_id) if viewer_id is not None else false())
    for name, column, after in (
        ("created_after", c.created_at, True),
        ("created_before", c.created_at, False),
        ("updated_after", c.updated_at, True),
        ("updated_before", c.updated_at, False),
    ):
        when = getattr(q, name)
        if when is not None:
            stmt = stmt.where(column >= when if after else column <= when)
    for cond in _conditions(q, viewer_id):
        stmt = stmt.where(cond)
    negated = q.not_
    if negated is not None:
        for cond in _conditions(negated, viewer_id, negated=True):
            stmt = stmt.where(~cond)
    return stmt.order_by(*_order(q.order_by, q.sort or "desc")), values


def page(db: Session, stmt: Select[Any], values: dict[str, Any], page: Page) -> PageResult:
    """One page of a list: the page's ids (and a capped count), then their rows."""
    count = select(
        capped_count(stmt.with_only_columns(literal(1), maintain_column_froms=True).order_by(None))
    )
    result = offset_page(db, stmt, page, core=True, params=values, count=count)
    result.items = rows_by_ids(db, [row[0] for row in result.items])
    return result


# ----------------------------------------------------------------------------- what merge requests say of issues

# How many merge requests an issue's read looks at, at most: those whose text may name it.
MENTIONS_LIMIT = 500

MentionRow = namedtuple(  # type: ignore[misc]
    "MentionRow",
    ["id", "iid", "project_id", "title", "description", "state", "target_branch", "default_branch", "path"],
)


def mentioning(
    db: Session,
    viewer: Any,
    viewer_id: int | None,
    issues: list[tuple[int, str, int]],
    states: tuple[str, ...],
) -> list[MentionRow]:
    """Merge requests in `states`, of projects whose merge requests the viewer
    (project_finder.viewer_of) reads, whose title or description may name one of `issues`
    ((project id, project full path, iid)): `#iid` or `…/issues/iid` in the issue's own
    project, `path#iid` or `path/-/issues/iid` in any. A prefilter with LIKE, one statement for
    however many issues, at most MENTIONS_LIMIT rows (the newest); the exact reading of the
    texts is the caller's."""
    if not issues:
        return []
    c = _MRS.c
    text = func.lower(func.coalesce(c.title, "") + " " + func.coalesce(c.description, ""))
    values: dict[str, Any] = {}
    if viewer_id is not None:
        values["viewer_id"], values["viewer_today"] = viewer_id, date.today()
    anywhere: list[ColumnElement[bool]] = []
    for n, (project_id, path, iid) in enumerate(issues):
        local = or_(
            text.like(bindparam(f"short_{n}"), escape=ESCAPE),
            text.like(bindparam(f"url_{n}"), escape=ESCAPE),
        )
        values[f"short_{n}"] = contains(f"#{iid}")
        values[f"url_{n}"] = contains(f"/issues/{iid}")
        values[f"full_{n}"] = contains(f"{path}#{iid}")
        values[f"link_{n}"] = f"%{escape_like(path.lower())}/%issues/{iid}%"
        anywhere.append(and_(c.project_id == project_id, local))
        anywhere.append(text.like(bindparam(f"full_{n}"), escape=ESCAPE))
        anywhere.append(text.like(bindparam(f"link_{n}"), escape=ESCAPE))
    stmt = (
        select(
            c.id,
            c.iid,
            c.project_id,
            c.title,
            c.description,
            c.state,
            c.target_branch,
            Project.default_branch,
            Namespace.full_path + "/" + Project.path,
        )
        .join(Project, Project.id == c.project_id)
        .join(Namespace, Namespace.id == Project.namespace_id)
        .where(
            c.state.in_(states),
            c.project_id.in_(readable_projects(viewer)),
            or_(*anywhere),
        )
        .order_by(c.id.desc())
        .limit(MENTIONS_LIMIT)
    )
    return [MentionRow._make(row) for row in db.execute(stmt, values)]


def commit_messages(db: Session, diff_id: int | None) -> list[str]:
    """The messages of a version's commits (what a merge's closing pattern reads too)."""
    if diff_id is None:
        return []
    return list(
        db.scalars(
            select(MergeRequestDiffCommit.message).where(
                MergeRequestDiffCommit.merge_request_diff_id == diff_id
            )
        )
    )
