"""Board reads: a project's or group's boards, one board, a board's lists, and what their
views name by id (labels, users, milestones), each in one statement whatever the number of
rows. The ORM `Board` and `BoardList` are for writes."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, bindparam, func, select
from sqlalchemy.orm import Session

from kiln.models import Board, BoardLabel, BoardList, Label, Milestone, Namespace, Project, User
from kiln.models.boards import ASSIGNEE, ITERATION, LABEL, MILESTONE
from kiln.pagination import Page, PageResult
from kiln.queries import access
from kiln.queries import users as user_finder
from kiln.queries.milestones import MilestoneRow
from kiln.queries.paging import offset_page
from kiln.queries.reads import run
from kiln.queries.users import UserRow

_BOARDS = Board.__table__
_LISTS = BoardList.__table__
_BOARD_LABELS = BoardLabel.__table__
_LABELS = Label.__table__
_MILESTONES = Milestone.__table__
_PROJECTS = Project.__table__
_NAMESPACES = Namespace.__table__

# Lists a board shows, moves and deletes (GitLab's destroyable and movable lists): the
# backlog ("Open") and closed lists are the board's own and never listed.
MOVABLE = (LABEL, ASSIGNEE, MILESTONE, ITERATION)

_BOARD_COLUMNS = (
    "id",
    "project_id",
    "group_id",
    "name",
    "milestone_id",
    "assignee_id",
    "weight",
    "hide_backlog_list",
    "hide_closed_list",
)
_LIST_COLUMNS = ("id", "board_id", "list_type", "label_id", "user_id", "milestone_id", "position")
_LABEL_COLUMNS = ("id", "title", "color", "description")

BoardRow = namedtuple("BoardRow", _BOARD_COLUMNS)  # type: ignore[misc]
LabelRow = namedtuple("LabelRow", _LABEL_COLUMNS)  # type: ignore[misc]
# A list with its label (None unless a label list).
ListRow = namedtuple("ListRow", [*_LIST_COLUMNS, "label"])  # type: ignore[misc]


@dataclass(slots=True)
class Named:
    """What board and list views name by id, loaded once for a page of them."""

    users: Mapping[int, UserRow] = field(default_factory=dict)
    milestones: Mapping[int, MilestoneRow] = field(default_factory=dict)
    labels: Mapping[int, Sequence[LabelRow]] = field(default_factory=dict)  # by board id


def _owner_where(scope: str) -> ColumnElement[bool]:
    owner = _BOARDS.c.group_id if scope == "group" else _BOARDS.c.project_id
    return owner == bindparam("owner_id")


# ----------------------------------------------------------------------------- boards


@cache
def _boards_statement(scope: str) -> Select[Any]:
    """A project's or group's boards by name, case aside (GitLab's Board.order_by_name_asc),
    then oldest first."""
    columns = [_BOARDS.c[name] for name in _BOARD_COLUMNS]
    return select(*columns).where(_owner_where(scope)).order_by(func.lower(_BOARDS.c.name), _BOARDS.c.id)


def page_of(db: Session, scope: str, owner_id: int, page: Page) -> PageResult:
    """`scope` "project" or "group"."""
    result = offset_page(db, _boards_statement(scope), page, core=True, params={"owner_id": owner_id})
    result.items = [BoardRow._make(row) for row in result.items]
    return result


@cache
def _board_statement(scope: str) -> Select[Any]:
    columns = [_BOARDS.c[name] for name in _BOARD_COLUMNS]
    return select(*columns).where(_BOARDS.c.id == bindparam("board_id"), _owner_where(scope))


def board_of(db: Session, scope: str, owner_id: int, board_id: int) -> BoardRow | None:
    """A board by id, only if it is the given project's or group's."""
    row = run(db, _board_statement(scope), {"board_id": board_id, "owner_id": owner_id}).first()
    return None if row is None else BoardRow._make(row)


# ----------------------------------------------------------------------------- lists


def _list_columns() -> list[Any]:
    label_columns = [_LABELS.c[name].label(f"list_label_{name}") for name in _LABEL_COLUMNS]
    return [*(_LISTS.c[name] for name in _LIST_COLUMNS), *label_columns]


def _list_order() -> list[Any]:
    # GitLab orders a board's lists by kind, then position.
    return [_LISTS.c.board_id, _LISTS.c.list_type, _LISTS.c.position, _LISTS.c.id]


def _list_row(row: Any) -> ListRow:
    n = len(_LIST_COLUMNS)
    label = None if row[n] is None else LabelRow._make(row[n:])
    return ListRow(*row[:n], label)


@cache
def _lists_statement(one_list: bool) -> Select[Any]:
    """The shown lists of boards `board_ids` (or of one board, `one_list`: one of them), with
    their labels."""
    stmt = (
        select(*_list_columns())
        .select_from(_LISTS.outerjoin(_LABELS, _LABELS.c.id == _LISTS.c.label_id))
        .where(_LISTS.c.list_type.in_(MOVABLE))
    )
    if one_list:
        stmt = stmt.where(_LISTS.c.board_id == bindparam("board_id"), _LISTS.c.id == bindparam("list_id"))
    else:
        stmt = stmt.where(_LISTS.c.board_id.in_(bindparam("board_ids", expanding=True)))
    return stmt.order_by(*_list_order())


def lists_of(db: Session, board_ids: list[int]) -> list[ListRow]:
    """The shown lists of every board in `board_ids`, board by board."""
    if not board_ids:
        return []
    return [_list_row(row) for row in run(db, _lists_statement(False), {"board_ids": board_ids})]


@cache
def _board_lists_statement() -> Select[Any]:
    return (
        select(*_list_columns())
        .select_from(_LISTS.outerjoin(_LABELS, _LABELS.c.id == _LISTS.c.label_id))
        .where(_LISTS.c.board_id == bindparam("board_id"), _LISTS.c.list_type.in_(MOVABLE))
        .order_by(*_list_order())
    )


def page_of_lists(db: Session, board_id: int, page: Page) -> PageResult:
    result = offset_page(db, _board_lists_statement(), page, core=True, params={"board_id": board_id})
    result.items = [_list_row(row) for row in result.items]
    return result


def list_of(db: Session, board_id: int, list_id: int) -> ListRow | None:
    """One shown list of the board."""
    row = run(db, _lists_statement(True), {"board_id": board_id, "list_id": list_id}).first()
    return None if row is None else _list_row(row)


# ----------------------------------------------------------------------------- what views name


@cache
def _board_labels_statement() -> Select[Any]:
    return (
        select(_BOARD_LABELS.c.board_id, *(_LABELS.c[name] for name in _LABEL_COLUMNS))
        .select_from(_BOARD_LABELS.join(_LABELS, _LABELS.c.id == _BOARD_LABELS.c.label_id))
        .where(_BOARD_LABELS.c.board_id.in_(bindparam("board_ids", expanding=True)))
        .order_by(_BOARD_LABELS.c.board_id, _LABELS.c.title, _LABELS.c.id)
    )


def labels_of_boards(db: Session, board_ids: list[int]) -> dict[int, list[LabelRow]]:
    """The labels each board is scoped to, by title."""
    out: dict[int, list[LabelRow]] = {}
    if not board_ids:
        return out
    for row in run(db, _board_labels_statement(), {"board_ids": board_ids}):
        out.setdefault(row[0], []).append(LabelRow._make(row[1:]))
    return out


def users_by_id(db: Session, user_ids: Iterable[int]) -> dict[int, UserRow]:
    ids = sorted(set(user_ids))
    return {user.id: user for user in user_finder.rows_by_ids(db, ids)}


# ----------------------------------------------------------------------------- for writes


@cache
def _visible_label_statement() -> Select[Any]:
    return select(_LABELS.c.id).where(
        _LABELS.c.id == bindparam("label_id"),
        (_LABELS.c.project_id == bindparam("project_id"))
        | _LABELS.c.group_id.in_(bindparam("group_ids", expanding=True)),
    )


def label_visible(db: Session, label_id: int, project_id: int | None, group_ids: list[int]) -> bool:
    """Whether the label is the project's own or one of `group_ids`' (the groups above)."""
    params = {"label_id": label_id, "project_id": project_id, "group_ids": group_ids}
    return run(db, _visible_label_statement(), params).first() is not None


@cache
def _visible_milestone_statement() -> Select[Any]:
    return select(_MILESTONES.c.id).where(
        _MILESTONES.c.id == bindparam("milestone_id"),
        (_MILESTONES.c.project_id == bindparam("project_id"))
        | _MILESTONES.c.group_id.in_(bindparam("group_ids", expanding=True)),
    )


def milestone_visible(db: Session, milestone_id: int, project_id: int | None, group_ids: list[int]) -> bool:
    """Whether the milestone is the project's own or one of `group_ids`'."""
    params = {"milestone_id": milestone_id, "project_id": project_id, "group_ids": group_ids}
    return run(db, _visible_milestone_statement(), params).first() is not None


@cache
def _project_member_statement() -> Select[Any]:
    level = access.project_level_of(bindparam("user_id"), bindparam("project_id"), bindparam("today"))
    return select(level)


def is_member(
    db: Session, user_id: int, *, project_id: int | None = None, group_id: int | None = None
) -> bool:
    """Whether the user is a member of the project or group, directly or through a group
    above it (GitLab offers those as a board's assignee lists)."""
    if group_id is not None:
        level, _related = access.group_standing(db, user_id, group_id)
        return level is not None
    params = {"user_id": user_id, "project_id": project_id, "today": date.today()}
    return bool(run(db, _project_member_statement(), params).scalar_one())


@cache
def _user_exists_statement() -> Select[Any]:
    users = User.__table__
    return select(users.c.id).where(users.c.id == bindparam("user_id"))


def user_exists(db: Session, user_id: int) -> bool:
    return run(db, _user_exists_statement(), {"user_id": user_id}).first() is not None


@cache
def _taken_statement(column: str) -> Select[Any]:
    return select(_LISTS.c.id).where(
        and_(_LISTS.c.board_id == bindparam("board_id"), _LISTS.c[column] == bindparam("target_id"))
    )


def list_taken(db: Session, board_id: int, column: str, target_id: int) -> bool:
    """Whether the board has a list of that label, user or milestone already."""
    return (
        run(db, _taken_statement(column), {"board_id": board_id, "target_id": target_id}).first() is not None
    )
