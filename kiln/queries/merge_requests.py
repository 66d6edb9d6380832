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
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
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
    Label,
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
    Subscription,
    User,
)
from kiln.models.namespaces import PRIVATE, PUBLIC
from kiln.models.notes import MERGE_REQUEST
from kiln.models.projects import DISABLED, ENABLED
from kiln.pagination import Page, PageResult
from kiln.queries import issuables as shared
from kiln.queries import projects as project_finder
from kiln.queries import users as user_finder
from kiln.queries.paging import capped_count, offset_page
from kiln.queries.reads import reusable, row_columns, run
from kiln.queries.shapes import Shapes
from kiln.queries.text import ESCAPE, contains, escape_like
from kiln.queries.users import UserRow

if TYPE_CHECKING:
    # Only named in annotations: queries.milestones imports this module.
    from kiln.queries.milestones import MilestoneRow

_MRS = MergeRequest.__table__
_MR_FIELDS = [c.key for c in _MRS.c]
# After the merge request's own columns: its assignees' and reviewers' ids ("3,5", NULL for
# none, in the order they were added), its (target) project's full path and namespace, how
# many resolvable threads' notes are unresolved, and the latest version's file count.
_EXTRA_FIELDS = [
    "assignee_list",
    "reviewer_list",
    "project_path",
    "namespace_id",
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
        shared.people_list(MergeRequestAssignee, MergeRequestAssignee.merge_request_id, _MRS).label(
            "assignee_list"
        ),
        shared.people_list(MergeRequestReviewer, MergeRequestReviewer.merge_request_id, _MRS).label(
            "reviewer_list"
        ),
        shared.project_path(_MRS).label("project_path"),
        shared.namespace_id(_MRS).label("namespace_id"),
        _unresolved().label("unresolved_count"),
        _changes_count().label("changes_count"),
    ]


@cache
def _by_ids_statement() -> Select[Any]:
    return select(*row_selection()).where(_MRS.c.id.in_(bindparam("ids", expanding=True)))


def rows_by_ids(db: Session, ids: list[int]) -> list[MergeRequestRow]:
    """The merge requests `ids` as their views read them, in that order (absent ones left
    out); one statement whatever their number. Callers decide who may see them."""
    return shared.rows_by_ids(db, _by_ids_statement(), MergeRequestRow._make, ids)


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

LabelRow = shared.LabelRow


@dataclass(slots=True)
class Related:
    """What the views of some merge requests show besides their rows, keyed for the entity."""

    labels: dict[int, list[LabelRow]] = field(default_factory=dict)  # by merge request id
    users: dict[int, UserRow] = field(default_factory=dict)  # by user id
    milestones: dict[int, MilestoneRow] = field(default_factory=dict)  # by milestone id


def related_of(db: Session, rows: list[MergeRequestRow]) -> Related:
    """Labels, people (authors, assignees, reviewers, closers, mergers) and milestones of
    `rows`: at most three statements, whatever their number."""
    out = Related()
    if not rows:
        return out
    out.labels = shared.labels_of(db, MERGE_REQUEST, [row.id for row in rows])
    user_ids = shared.user_ids(
        rows,
        lambda row: (
            row.author_id,
            *row.assignee_ids,
            *row.reviewer_ids,
            row.closed_by_id,
            row.merged_by_id,
            row.merge_user_id,
        ),
    )
    out.users = {u.id: u for u in user_finder.rows_by_ids(db, user_ids)}
    out.milestones = shared.milestones_of(db, rows)
    return out


# ----------------------------------------------------------------------------- one merge request


def _head_pipeline() -> Any:
    """GitLab's head pipeline: the newest pipeline for the head commit (`head_sha`), on the
    source branch of the source project or a merge request pipeline of this merge request."""
    return (
        select(Pipeline.id)
        .where(
            Pipeline.sha == bindparam("head_sha"),
            or_(
                Pipeline.merge_request_id == bindparam("merge_request_id"),
                and_(
                    Pipeline.project_id == bindparam("source_project_id"),
                    Pipeline.ref == bindparam("source_branch"),
                    Pipeline.merge_request_id.is_(None),
                ),
            ),
        )
        .order_by(Pipeline.id.desc())
        .limit(1)
        .scalar_subquery()
    )


def _head_values(row: Any) -> dict[str, Any]:
    return {
        "head_sha": row.head_sha,
        "merge_request_id": row.id,
        "source_project_id": row.source_project_id,
        "source_branch": row.source_branch,
    }


@cache
def _head_pipeline_statement() -> Select[Any]:
    return select(_head_pipeline())


def head_pipeline_id(db: Session, row: Any) -> int | None:
    """The head pipeline's id of `row` (a merge request's row or model), None without one."""
    if row.head_sha is None:
        return None
    found = run(db, _head_pipeline_statement(), _head_values(row)).first()
    return None if found is None else found[0]


class SingleParts(NamedTuple):
    """What the single view reads besides the row: the head pipeline's id and the latest
    version's commits (None without a version)."""

    pipeline_id: int | None
    base_sha: str | None
    head_sha: str | None
    start_sha: str | None


@cache
def _single_parts_statement() -> Select[Any]:
    pipeline = _head_pipeline()

    def version(column: Any) -> Any:
        return select(column).where(MergeRequestDiff.id == bindparam("diff_id")).scalar_subquery()

    return select(
        pipeline.label("pipeline_id"),
        version(MergeRequestDiff.base_commit_sha).label("base_sha"),
        version(MergeRequestDiff.head_commit_sha).label("head_sha"),
        version(MergeRequestDiff.start_commit_sha).label("start_sha"),
    )


def single_parts(db: Session, row: Any) -> SingleParts:
    """head_pipeline_id and the latest version's commits of `row`, in one statement."""
    values = {**_head_values(row), "diff_id": row.latest_diff_id}
    found = run(db, _single_parts_statement(), values).first()
    return SingleParts(*found) if found is not None else SingleParts(None, None, None, None)


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


@cache
def _subscription_statement() -> Select[Any]:
    chosen = (
        select(Subscription.subscribed)
        .where(
            Subscription.user_id == bindparam("user_id"),
            Subscription.subscribable_type == MERGE_REQUEST,
            Subscription.subscribable_id == bindparam("merge_request_id"),
        )
        .limit(1)
        .scalar_subquery()
    )
    commented = exists(
        select(Note.id).where(
            Note.noteable_type == MERGE_REQUEST,
            Note.noteable_id == bindparam("merge_request_id"),
            Note.author_id == bindparam("user_id"),
            Note.system.is_(False),
        )
    )
    return select(chosen.label("subscribed"), commented.label("commented"))


def subscription_of(db: Session, merge_request_id: int, user_id: int) -> tuple[bool | None, bool]:
    """The user's explicit subscription choice (None: never made) and whether they commented
    (a participant's default), in one statement."""
    found = run(db, _subscription_statement(), {"user_id": user_id, "merge_request_id": merge_request_id})
    row = found.first()
    if row is None:
        return None, False
    return (None if row[0] is None else bool(row[0])), bool(row[1])


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


def locked(db: Session, merge_request_id: int) -> MergeRequest | None:
    """The merge request as the caller's transaction sees it now (read afresh), its row locked
    against concurrent writers until that transaction ends (SQLite's one writer needs no
    lock); None when it is gone."""
    stmt = select(MergeRequest).where(MergeRequest.id == merge_request_id).with_for_update()
    return db.scalars(stmt.execution_options(populate_existing=True)).one_or_none()


def is_fork_of(db: Session, forked_from_id: int | None, upstream_id: int) -> bool:
    """`upstream_id` is an ancestor, in its fork network, of the project forked from
    `forked_from_id` (the walk up stops at the first match, a missing parent or a loop)."""
    seen: set[int] = set()
    parent = forked_from_id
    while parent is not None and parent not in seen:
        if parent == upstream_id:
            return True
        seen.add(parent)
        parent = db.scalar(select(Project.forked_from_id).where(Project.id == parent))
    return False


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
        conditions.append(shared.in_traversal())
    if non_archived:
        conditions.append(Project.archived.is_(False))
    if viewer is None:
        conditions.append(and_(Project.visibility == PUBLIC, Project.merge_requests_access_level == ENABLED))
    elif viewer != "admin":
        # The feature open to all who see the project; else (members only, or a private
        # project) Reporters and up: GitLab's PRIVATE_FEATURES_MIN_ACCESS_LEVEL, never Guests.
        opened = and_(
            Project.visibility.in_([v for v in viewer if v != PRIVATE]),
            Project.merge_requests_access_level == ENABLED,
        )
        conditions.append(or_(opened, Project.id.in_(project_finder.reachable(policy.REPORTER))))
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
    return shared.labelled(_MRS, MERGE_REQUEST, titled)


def _any_label() -> ColumnElement[bool]:
    return shared.any_label(_MRS, MERGE_REQUEST)


#
# A list's statement is built once per shape (queries.shapes), as the issue lists' are: where
# it lists (a project, a group's projects, every project), who looks (anonymous,
# administrator, or a signed-in user and the visibilities open to them), and the filters
# given, each reduced to what shapes the SQL. Values (ids, names, branches, search terms,
# dates) are bind parameters, so every caller and every search runs the one statement.


class Listing(NamedTuple):
    """A list's statements: the ids of its merge requests in order, and their count (capped)."""

    ids: Select[Any]
    count: Select[Any]


_LISTS: Shapes[Listing] = Shapes()
_BIGINT = 2**63


def _people_shape(
    filters: list[tuple[Any, ...]], values: dict[str, Any], name: str, value: str | None, username: str | None
) -> None:
    """assignee_id / reviewer_id (a keyword or an id) or their username, as a shape."""
    if value is not None:
        keyword = value.lower()
        if keyword in ("none", "0"):
            filters.append((name, "none"))
        elif keyword == "any":
            filters.append((name, "any"))
        else:
            number = int(value)
            if -_BIGINT <= number < _BIGINT:
                filters.append((name, "id"))
                values[name] = number
            else:
                filters.append((name, "nothing"))
    elif username:
        filters.append((name, "username"))
        values[name] = username.lower()


def _add(
    filters: list[tuple[Any, ...]], values: dict[str, Any], q: Any, p: str, viewer_id: int | None
) -> None:
    """The filters of `q` (the list's parameters, or its `not[...]` with `p` = "not_")."""
    labels = [name for name in (getattr(q, "labels", None) or []) if name]
    if labels:
        keywords = {name.lower() for name in labels}
        if keywords & {"none", "no label", "no+label"}:
            filters.append((p + "labels", "none"))
        elif "any" in keywords:
            filters.append((p + "labels", "any"))
        else:
            filters.append((p + "labels", len(labels)))
            values.update({f"{p}label_{n}": name for n, name in enumerate(labels)})
    milestone = getattr(q, "milestone", None)
    if milestone:
        keyword = milestone.lower()
        if keyword in ("none", "any"):
            filters.append((p + "milestone", keyword))
        else:
            filters.append((p + "milestone", "title"))
            values[p + "milestone"] = milestone
    if getattr(q, "author_id", None) is not None:
        filters.append((p + "author", "id"))
        values[p + "author"] = q.author_id
    elif getattr(q, "author_username", None):
        filters.append((p + "author", "username"))
        values[p + "author"] = q.author_username.lower()
    _people_shape(
        filters,
        values,
        p + "assignee",
        getattr(q, "assignee_id", None),
        _first(getattr(q, "assignee_username", None)),
    )
    _people_shape(
        filters,
        values,
        p + "reviewer",
        getattr(q, "reviewer_id", None),
        getattr(q, "reviewer_username", None),
    )
    if viewer_id is not None:
        shared.reaction_shape(filters, values, p + "reaction", getattr(q, "my_reaction_emoji", None))
    approved = getattr(q, "approved_by_ids", None)
    if approved is not None:
        _ids_shape(filters, values, p + "approved_by", approved)
    approvers_named = [n for n in (getattr(q, "approved_by_usernames", None) or []) if n]
    if approvers_named:
        keyword = approvers_named[0].lower()
        if len(approvers_named) == 1 and keyword in ("none", "any"):
            filters.append((p + "approved_by", keyword))
        else:
            filters.append((p + "approved_by_username", len(approvers_named)))
            values.update({f"{p}approved_by_username_{n}": v.lower() for n, v in enumerate(approvers_named)})
    approvers = getattr(q, "approver_ids", None)
    if approvers is not None:
        _ids_shape(filters, values, p + "approvers", approvers)
    for name in ("source_branch", "target_branch"):
        value = getattr(q, name, None)
        if value:
            filters.append((p + name,))
            values[p + name] = value
    iids = getattr(q, "iids", None)
    if iids:
        filters.append((p + "iids",))
        values[p + "iids"] = list(iids)
    search = getattr(q, "search", None)
    if search:
        fields = tuple(sorted(set(getattr(q, "in_", None) or ["title", "description"])))
        filters.append((p + "search", fields))
        values[p + "search"] = contains(search)
    wip = getattr(q, "wip", None)
    if wip is not None:
        filters.append((p + "wip", wip == "yes"))


def _ids_shape(
    filters: list[tuple[Any, ...]], values: dict[str, Any], name: str, ids: list[int] | str
) -> None:
    if isinstance(ids, str):
        filters.append((name, ids))
        return
    filters.append((name, len(ids)))
    values.update({f"{name}_{n}": uid for n, uid in enumerate(ids)})


def _shape_and_values(
    q: Any, viewer_id: int | None, scope: ListScope
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The filters of `q` as the statement's shape (hashable) and its bind values."""
    values: dict[str, Any] = {}
    filters: list[tuple[Any, ...]] = []
    if q.state in ("opened", "closed", "locked", "merged"):
        filters.append(("state", q.state))
    shared.scope_shape(filters, q.scope, viewer_id)
    shared.dated_shape(filters, values, q)
    _add(filters, values, q, "", viewer_id)
    if q.not_ is not None:
        _add(filters, values, q.not_, "not_", viewer_id)
    shared.scope_values(values, scope.project_id, scope.traversal, viewer_id, date.today())
    return tuple(filters), values


def _user_named(name: Any) -> Any:
    """The id of the user `name` (a bind parameter holding a lower-cased username)."""
    return select(User.id).where(func.lower(User.username) == name).scalar_subquery()


def _people_condition(kind: str, name: str, by: Any, table: Any) -> ColumnElement[bool]:
    if kind == "none":
        return _MRS.c.id.not_in(select(table.merge_request_id))
    if kind == "any":
        return _MRS.c.id.in_(select(table.merge_request_id))
    if kind == "id":
        return by(bindparam(name))  # type: ignore[no-any-return]
    if kind == "username":
        return by(_user_named(bindparam(name)))  # type: ignore[no-any-return]
    return false()


def _approved_by(shape: int | str, name: str) -> ColumnElement[bool]:
    anyone = select(Approval.merge_request_id)
    if shape == "none":
        return _MRS.c.id.not_in(anyone)
    if shape == "any":
        return _MRS.c.id.in_(anyone)
    assert isinstance(shape, int)
    return and_(
        *(
            _MRS.c.id.in_(
                select(Approval.merge_request_id).where(Approval.user_id == bindparam(f"{name}_{n}"))
            )
            for n in range(shape)
        )
    )


def _approvers(shape: int | str, name: str) -> ColumnElement[bool]:
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
    if shape in ("none", "any"):
        has = or_(_MRS.c.id.in_(own), _MRS.c.project_id.in_(project))
        return ~has if shape == "none" else has
    assert isinstance(shape, int)
    return and_(
        *(
            or_(
                _MRS.c.id.in_(own.where(ApprovalRuleUser.user_id == bindparam(f"{name}_{n}"))),
                _MRS.c.project_id.in_(project.where(ApprovalRuleUser.user_id == bindparam(f"{name}_{n}"))),
            )
            for n in range(shape)
        )
    )


def _condition(f: tuple[Any, ...]) -> ColumnElement[bool]:
    """One filter's condition; a `not_` filter is the negation of its positive form."""
    name = f[0]
    negated = name.startswith("not_")
    base = name[4:] if negated else name
    c = _MRS.c
    cond: ColumnElement[bool]
    if base == "state":
        cond = c.state == f[1]
    elif base == "scope":
        cond = shared.scoped(_MRS, f[1], _assigned)
    elif base in shared.DATED:
        cond = shared.dated(_MRS, base)
    elif base == "labels":
        if f[1] == "none":
            cond = ~_any_label()
        elif f[1] == "any":
            cond = _any_label()
        else:
            each = [_labelled(bindparam(f"{name[: -len('labels')]}label_{n}")) for n in range(f[1])]
            cond = or_(*each) if negated else and_(*each)
    elif base == "milestone":
        if f[1] == "none":
            cond = c.milestone_id.is_(None)
        elif f[1] == "any":
            cond = c.milestone_id.is_not(None)
        else:
            column = func.coalesce(c.milestone_id, 0) if negated else c.milestone_id
            cond = column.in_(select(Milestone.id).where(Milestone.title == bindparam(name)))
    elif base == "author":
        column = func.coalesce(c.author_id, 0) if negated else c.author_id
        cond = column == (bindparam(name) if f[1] == "id" else _user_named(bindparam(name)))
    elif base == "assignee":
        cond = _people_condition(f[1], name, _assigned, MergeRequestAssignee)
    elif base == "reviewer":
        cond = _people_condition(f[1], name, _reviewing, MergeRequestReviewer)
    elif base == "reaction":
        cond = shared.reaction(_MRS, MERGE_REQUEST, f[1], name)
    elif base == "approved_by":
        cond = _approved_by(f[1], name)
    elif base == "approved_by_username":
        cond = and_(
            *(
                c.id.in_(
                    select(Approval.merge_request_id).where(
                        Approval.user_id == _user_named(bindparam(f"{name}_{n}"))
                    )
                )
                for n in range(f[1])
            )
        )
    elif base == "approvers":
        cond = _approvers(f[1], name)
    elif base in ("source_branch", "target_branch"):
        cond = c[base] == bindparam(name)
    elif base == "iids":
        cond = c.iid.in_(bindparam(name, expanding=True))
    elif base == "search":
        term = bindparam(name)
        texts = [c.title if field == "title" else func.coalesce(c.description, "") for field in f[1]]
        cond = or_(*(func.lower(text).like(term, escape="\\") for text in texts))
    elif base == "wip":
        cond = c.draft.is_(f[1])
    else:  # pragma: no cover - every shape above is handled
        raise ValueError(name)
    return ~cond if negated else cond


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
) -> tuple[Listing, dict[str, Any]]:
    """The list's statements (kept per shape) and the values of their bind parameters.
    `viewer`: None (anonymous), "admin", or the visibilities open to a signed-in user."""
    filters, values = _shape_and_values(q, viewer_id, scope)
    where = shared.where_of(scope.project_id, scope.traversal)
    sort = q.sort or "desc"
    key = (viewer, where, scope.non_archived if where != "project" else None, filters, q.order_by, sort)

    def build() -> Listing:
        return _build(viewer, where, scope.non_archived, filters, q.order_by, sort)

    return _LISTS.get(key, build), values


def _build(
    viewer: Any, where: str, non_archived: bool, filters: tuple[Any, ...], order_by: str, sort: str
) -> Listing:
    c = _MRS.c
    stmt = select(c.id)
    if where == "project":
        stmt = stmt.where(c.project_id == bindparam("scope_project_id"))
    else:
        readable = readable_projects(viewer, traversal=where == "group", non_archived=non_archived)
        stmt = stmt.where(c.project_id.in_(readable))
    for f in filters:
        stmt = stmt.where(_condition(f))
    # Counted at most TOTAL_LIMIT + 1 (queries.paging), from a statement kept with the list's.
    rows = stmt.with_only_columns(literal(1), maintain_column_froms=True)
    return Listing(reusable(stmt.order_by(*_order(order_by, sort))), reusable(select(capped_count(rows))))


def page(db: Session, listing: Listing, values: dict[str, Any], page: Page) -> PageResult:
    """One page of a list (list_statement): the page's ids (and a capped count), then their
    rows (the rows' subqueries run for the page alone)."""
    result = offset_page(db, listing.ids, page, core=True, params=values, count=listing.count)
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
