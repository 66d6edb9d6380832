"""Issue boards of a project or a group (GitLab's Boards and Group Boards APIs): boards with
an optional scope (milestone, assignee, labels, weight), and their lists of a label, an
assignee or a milestone, kept in positions 0, 1, 2, … in the order the board shows them.

Reading a project's boards takes sight of its issues, a group's sight of the group; changing
them takes ADMIN_BOARDS (Reporter and up). A new board gets its backlog ("Open") and closed
lists as GitLab's do; those two are the board's own and never listed, moved or deleted."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, NotFound, ParamError, ValidationFailed
from kiln.models import Board, BoardLabel, BoardList
from kiln.models.boards import ASSIGNEE, BACKLOG, CLOSED, LABEL, MILESTONE
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import boards as finder
from kiln.queries import milestones as milestone_finder
from kiln.queries.boards import MOVABLE, BoardRow, ListRow, Named
from kiln.schemas.boards import BoardCreate, BoardUpdate, ListCreate, ListMove
from kiln.services import label_links, subjects

Kind = Literal["groups", "projects"]
Subject = GroupSubject | ProjectSubject

NAME_LIMIT = 255
LABEL_TITLE_LIMIT = 255
CANT_BE_BLANK = "can't be blank"


@dataclass(slots=True)
class Boards:
    subject: Subject
    page: PageResult  # items: BoardRow
    lists: dict[int, list[ListRow]]  # by board id
    named: Named


@dataclass(slots=True)
class OneBoard:
    subject: Subject
    row: BoardRow
    lists: list[ListRow]
    named: Named


@dataclass(slots=True)
class Lists:
    page: PageResult  # items: ListRow
    named: Named


@dataclass(slots=True)
class OneList:
    row: ListRow
    named: Named


# ----------------------------------------------------------------------------- subjects


def _subject(db: Session, actor: Actor | None, kind: Kind, ident: str, *, admin: bool = False) -> Subject:
    """The project (its issues open to the actor) or group, read or to change its boards."""
    if kind == "groups":
        return subjects.group(
            db, actor, ident, Action.ADMIN_BOARDS if admin else Action.READ_GROUP, rows=True
        )
    return subjects.project(db, actor, ident, Action.ADMIN_BOARDS if admin else Action.READ_ISSUE, rows=True)


def _scope(s: Subject) -> tuple[str, int]:
    if isinstance(s, GroupSubject):
        return "group", s.group.id
    return "project", s.project.id


def _owner(s: Subject) -> dict[str, int]:
    scope, owner_id = _scope(s)
    return {f"{scope}_id": owner_id}


def _label_scope(s: Subject) -> label_links.LabelScope:
    """Where the board's labels, milestones and members come from: the project and the groups
    above it, or the group and the groups above it."""
    if isinstance(s, GroupSubject):
        return label_links.LabelScope(None, s.group.ancestor_ids)
    ns = s.namespace
    return label_links.LabelScope(s.project.id, ns.ancestor_ids if ns.is_group else [])


def _board_row(db: Session, s: Subject, board_id: int) -> BoardRow:
    row = finder.board_of(db, *_scope(s), board_id)
    if row is None:
        raise NotFound("Board")
    return row


def _named(db: Session, boards: Iterable[BoardRow], lists: Iterable[ListRow]) -> Named:
    """Users, milestones and board labels the views name: one statement each."""
    boards, lists = list(boards), list(lists)
    user_ids = [b.assignee_id for b in boards if b.assignee_id is not None]
    user_ids += [item.user_id for item in lists if item.user_id is not None]
    milestone_ids = [b.milestone_id for b in boards if b.milestone_id is not None]
    milestone_ids += [item.milestone_id for item in lists if item.milestone_id is not None]
    return Named(
        users=finder.users_by_id(db, user_ids) if user_ids else {},
        milestones=milestone_finder.rows_by_ids(db, milestone_ids),
        labels=finder.labels_of_boards(db, [b.id for b in boards]),
    )


def _one(db: Session, s: Subject, board_id: int) -> OneBoard:
    row = _board_row(db, s, board_id)
    lists = finder.lists_of(db, [row.id])
    return OneBoard(s, row, lists, _named(db, [row], lists))


# ----------------------------------------------------------------------------- boards


def list_boards(db: Session, actor: Actor | None, kind: Kind, ident: str, page: Page) -> Boards:
    """The boards, oldest first, each with its lists."""
    s = _subject(db, actor, kind, ident)
    result = finder.page_of(db, *_scope(s), page)
    rows: list[BoardRow] = result.items
    lists = finder.lists_of(db, [b.id for b in rows])
    by_board: dict[int, list[ListRow]] = {}
    for item in lists:
        by_board.setdefault(item.board_id, []).append(item)
    return Boards(s, result, by_board, _named(db, rows, lists))


def get_board(db: Session, actor: Actor | None, kind: Kind, ident: str, board_id: int) -> OneBoard:
    s = _subject(db, actor, kind, ident)
    return _one(db, s, board_id)


def _name_problem(name: str) -> str | None:
    if not name.strip():
        return CANT_BE_BLANK
    if len(name) > NAME_LIMIT:
        return f"is too long (maximum is {NAME_LIMIT} characters)"
    return None


def create_board(db: Session, actor: Actor, kind: Kind, p: BoardCreate) -> OneBoard:
    """A board named so, with its backlog and closed lists."""
    s = _subject(db, actor, kind, p.id, admin=True)
    if (problem := _name_problem(p.name)) is not None:
        raise ValidationFailed({"name": [problem]})
    with transaction(db):
        board = Board(name=p.name, **_owner(s))
        db.add(board)
        db.flush()
        db.add_all(
            [
                BoardList(board_id=board.id, list_type=BACKLOG, position=None),
                BoardList(board_id=board.id, list_type=CLOSED, position=None),
            ]
        )
        db.flush()
        board_id = board.id
    return _one(db, s, board_id)


def _locked_board(db: Session, s: Subject, board_id: int) -> Board:
    """The subject's board for a write, held against concurrent list moves."""
    stmt = select(Board).where(Board.id == board_id)
    scope, owner_id = _scope(s)
    stmt = stmt.where(Board.group_id == owner_id if scope == "group" else Board.project_id == owner_id)
    board = db.scalars(stmt.with_for_update()).first()
    if board is None:
        raise NotFound("Board")
    return board


def _label_ids(db: Session, s: Subject, named: list[str]) -> list[int]:
    """The labels named, created where missing, as GitLab's find-or-create does; a title no
    label could carry is left out."""
    titles = [t.strip() for t in named]
    titles = [t for t in titles if t and len(t) <= LABEL_TITLE_LIMIT]
    return [label.id for label in label_links.resolve(db, _label_scope(s), titles, create=True)]


def update_board(db: Session, actor: Actor, kind: Kind, p: BoardUpdate) -> OneBoard:
    """Name, hidden lists and scope; an assignee or milestone nothing matches clears it."""
    s = _subject(db, actor, kind, p.id, admin=True)
    given = p.given()
    if p.name is not None and (problem := _name_problem(p.name)) is not None:
        raise BadRequest(f'Failed to save board {{:name=>["{problem}"]}}')
    scope = _label_scope(s)
    with transaction(db):
        board = _locked_board(db, s, p.board_id)
        if p.name is not None:
            board.name = p.name
        if p.hide_backlog_list is not None:
            board.hide_backlog_list = p.hide_backlog_list
        if p.hide_closed_list is not None:
            board.hide_closed_list = p.hide_closed_list
        if "assignee_id" in given:
            wanted = p.assignee_id
            board.assignee_id = wanted if wanted is not None and finder.user_exists(db, wanted) else None
        if "milestone_id" in given:
            wanted = p.milestone_id
            found = wanted is not None and finder.milestone_visible(
                db, wanted, scope.project_id, list(scope.group_ids)
            )
            board.milestone_id = wanted if found else None
        if "weight" in given:
            board.weight = p.weight
        if p.labels is not None:
            label_ids = _label_ids(db, s, p.labels)
            db.execute(delete(BoardLabel).where(BoardLabel.board_id == board.id))
            db.add_all(
                [BoardLabel(board_id=board.id, label_id=label_id) for label_id in dict.fromkeys(label_ids)]
            )
        db.flush()
    return _one(db, s, p.board_id)


def delete_board(db: Session, actor: Actor, kind: Kind, ident: str, board_id: int) -> None:
    """The board, its lists and its scope labels (the database cascades)."""
    s = _subject(db, actor, kind, ident, admin=True)
    with transaction(db):
        db.delete(_locked_board(db, s, board_id))


# ----------------------------------------------------------------------------- lists


def list_lists(db: Session, actor: Actor | None, kind: Kind, ident: str, board_id: int, page: Page) -> Lists:
    """The board's label, assignee and milestone lists, as the board shows them."""
    s = _subject(db, actor, kind, ident)
    board = _board_row(db, s, board_id)
    result = finder.page_of_lists(db, board.id, page)
    return Lists(result, _named(db, [], result.items))


def _list_row(db: Session, board_id: int, list_id: int) -> ListRow:
    row = finder.list_of(db, board_id, list_id)
    if row is None:
        raise NotFound("List")
    return row


def _one_list(db: Session, board_id: int, list_id: int) -> OneList:
    row = _list_row(db, board_id, list_id)
    return OneList(row, _named(db, [], [row]))


def get_list(
    db: Session, actor: Actor | None, kind: Kind, ident: str, board_id: int, list_id: int
) -> OneList:
    s = _subject(db, actor, kind, ident)
    return _one_list(db, _board_row(db, s, board_id).id, list_id)


def _target(db: Session, s: Subject, p: ListCreate) -> tuple[int, str, int, str]:
    """(list type, column, id, name in a "has already been taken" message) of the list to
    add; 400 for a label or milestone the board cannot see, or a user who is no member."""
    scope = _label_scope(s)
    groups = list(scope.group_ids)
    if p.label_id is not None:
        if not finder.label_visible(db, p.label_id, scope.project_id, groups):
            raise ParamError("Label not found!")
        return LABEL, "label_id", p.label_id, "Label"
    if p.milestone_id is not None:
        if not finder.milestone_visible(db, p.milestone_id, scope.project_id, groups):
            raise ParamError("Milestone not found!")
        return MILESTONE, "milestone_id", p.milestone_id, "Milestone"
    if p.assignee_id is not None:
        scope_name, owner_id = _scope(s)
        if not finder.is_member(db, p.assignee_id, **{f"{scope_name}_id": owner_id}):
            raise ParamError("User not found!")
        return ASSIGNEE, "user_id", p.assignee_id, "User"
    # kiln has no iterations (a paid-edition feature): none can be found.
    raise ParamError("Iteration not found!")


def create_list(db: Session, actor: Actor, kind: Kind, p: ListCreate) -> OneList:
    """A list after the board's last one; one per label, user or milestone on a board."""
    s = _subject(db, actor, kind, p.id, admin=True)
    list_type, column, target_id, taken = _target(db, s, p)
    with transaction(db):
        board = _locked_board(db, s, p.board_id)
        if finder.list_taken(db, board.id, column, target_id):
            raise ParamError(f"{taken} has already been taken")
        last = db.scalar(
            select(func.max(BoardList.position)).where(
                BoardList.board_id == board.id, BoardList.list_type.in_(MOVABLE)
            )
        )
        item = BoardList(
            board_id=board.id,
            list_type=list_type,
            position=0 if last is None else last + 1,
            **{column: target_id},
        )
        db.add(item)
        db.flush()
        list_id = item.id
    return _one_list(db, p.board_id, list_id)


def _movable(board_id: int) -> list[object]:
    return [BoardList.board_id == board_id, BoardList.list_type.in_(MOVABLE)]


def move_list(db: Session, actor: Actor, kind: Kind, p: ListMove) -> OneList:
    """The list to `position` (0 first), the lists between shifted by one; a position
    outside the board, or the list's own, is refused as GitLab refuses it."""
    s = _subject(db, actor, kind, p.id, admin=True)
    with transaction(db):
        board = _locked_board(db, s, p.board_id)
        item = db.scalars(select(BoardList).where(BoardList.id == p.list_id, *_movable(board.id))).first()
        if item is None:
            raise NotFound("List")
        size = db.scalar(select(func.count()).select_from(BoardList).where(*_movable(board.id))) or 0
        old, new = item.position, p.position
        if old is None or new == old or not 0 <= new < size:
            raise ParamError("List could not be moved!")
        if old < new:
            shift = BoardList.position - 1
            between = [BoardList.position > old, BoardList.position <= new]
        else:
            shift = BoardList.position + 1
            between = [BoardList.position >= new, BoardList.position < old]
        db.execute(
            update(BoardList)
            .where(*_movable(board.id), BoardList.id != item.id, *between)
            .values(position=shift),
            execution_options={"synchronize_session": False},
        )
        item.position = new
        db.flush()
    return _one_list(db, p.board_id, p.list_id)


def delete_list(db: Session, actor: Actor, kind: Kind, ident: str, board_id: int, list_id: int) -> None:
    """The list, the lists after it moved up by one."""
    s = _subject(db, actor, kind, ident, admin=True)
    with transaction(db):
        board = _locked_board(db, s, board_id)
        item = db.scalars(select(BoardList).where(BoardList.id == list_id, *_movable(board.id))).first()
        if item is None:
            raise NotFound("List")
        if item.position is not None:
            db.execute(
                update(BoardList)
                .where(*_movable(board.id), BoardList.position > item.position)
                .values(position=BoardList.position - 1),
                execution_options={"synchronize_session": False},
            )
        db.delete(item)
