"""To-do items: what a user is asked to look at (assigned, mentioned, marked by themselves).
Others' writes call `add` and `done_for_target` in their own transaction. Each user reads and
marks done only their own to-dos (another's is not found); a to-do whose issue, epic or merge
request they may no longer read is left out of their list, and shows no target elsewhere."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import NotFound
from kiln.models import Todo
from kiln.models.base import utcnow
from kiln.models.notes import EPIC, ISSUE, MERGE_REQUEST
from kiln.models.todos import ACTION_NAMES, DONE, MARKED, PENDING
from kiln.pagination import Page
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import epics as epic_finder
from kiln.queries import issues as issue_finder
from kiln.queries import merge_requests as merge_request_finder
from kiln.queries import projects as project_finder
from kiln.queries import todos as finder
from kiln.queries import users as user_finder
from kiln.queries.todos import TodoRow, TodoSet
from kiln.schemas.todos import TodoList
from kiln.services import subjects

ACTIONS = {name: number for number, name in ACTION_NAMES.items()}
TODO_NOT_FOUND = "404 Not found"


def pending_of(db: Session, user_id: int, target_type: str, target_id: int, action: int) -> Todo | None:
    return db.scalars(
        select(Todo).where(
            Todo.user_id == user_id,
            Todo.target_type == target_type,
            Todo.target_id == target_id,
            Todo.action == action,
            Todo.state == PENDING,
        )
    ).first()


def add(
    db: Session,
    *,
    user_id: int,
    author_id: int | None,
    action: int,
    target_type: str,
    target_id: int,
    project_id: int | None = None,
    group_id: int | None = None,
    body: str | None = None,
    note_id: int | None = None,
) -> Todo:
    """A pending to-do for `user_id`, in the caller's transaction (flushed, so it has its id)."""
    todo = Todo(
        user_id=user_id,
        author_id=author_id,
        action=action,
        target_type=target_type,
        target_id=target_id,
        project_id=project_id,
        group_id=group_id,
        body=body,
        note_id=note_id,
        state=PENDING,
    )
    db.add(todo)
    db.flush()
    return todo


def done_for_target(db: Session, target_type: str, target_id: int, *, user_id: int | None = None) -> None:
    """Mark the target's pending to-dos done (all users', or one user's): it was closed,
    deleted, or the user acted on it."""
    stmt = update(Todo).where(
        Todo.target_type == target_type, Todo.target_id == target_id, Todo.state == PENDING
    )
    if user_id is not None:
        stmt = stmt.where(Todo.user_id == user_id)
    db.execute(stmt.values(state=DONE, updated_at=utcnow()), execution_options={"synchronize_session": False})


# ----------------------------------------------------------------------------- reading


def _gather(db: Session, actor: Actor, rows: list[TodoRow]) -> TodoSet:
    """What the views of `rows` show, in a fixed number of statements whatever their number:
    the projects and groups (with the actor's standing), the issues and epics the actor may
    still read, their labels, milestones and people."""
    out = TodoSet(rows)
    issue_rows = issue_finder.rows_by_ids(db, [r.target_id for r in rows if r.target_type == ISSUE])
    project_ids = {r.project_id for r in rows if r.project_id is not None} | {
        i.project_id for i in issue_rows
    }
    out.projects = project_finder.access_of(db, actor.id, project_ids)
    out.issues = subjects.readable_issues(db, actor, issue_rows, out.projects)
    out.issue_related = issue_finder.related_of(db, list(out.issues.values()))
    epic_rows = epic_finder.rows_by_ids(db, [r.target_id for r in rows if r.target_type == EPIC])
    group_ids = {r.group_id for r in rows if r.group_id is not None} | {e.group_id for e in epic_rows}
    out.groups = finder.groups_of(db, actor.id, sorted(group_ids))
    for epic in epic_rows:
        g = out.groups.get(epic.group_id)
        if g is None:
            continue
        s = GroupSubject(group=g.group, level=g.level, related=g.related)
        if policy.may_read_epic(actor, s, epic.confidential, epic.author_id):
            out.epics[epic.id] = epic
    out.epic_labels = epic_finder.labels_of(db, list(out.epics))
    _gather_merge_requests(db, actor, rows, out)
    user_ids = {r.author_id for r in rows} | {e.author_id for e in out.epics.values()}
    out.users = {u.id: u for u in user_finder.rows_by_ids(db, sorted(u for u in user_ids if u is not None))}
    return out


def _gather_merge_requests(db: Session, actor: Actor, rows: list[TodoRow], out: TodoSet) -> None:
    """The merge requests of `rows` the actor may still read, with what their views show (no
    statement when there are none); their projects are among out.projects."""
    ids = [r.target_id for r in rows if r.target_type == MERGE_REQUEST]
    if not ids:
        return
    for mr in merge_request_finder.rows_by_ids(db, ids):
        p = out.projects.get(mr.project_id)
        if p is None:
            continue
        s = ProjectSubject(project=p.project, namespace=p.namespace, level=p.level)
        if policy.may(actor, Action.READ_MERGE_REQUEST, s):
            out.merge_requests[mr.id] = mr
    out.merge_request_related = merge_request_finder.related_of(db, list(out.merge_requests.values()))


def _target_lost(found: TodoSet, row: TodoRow) -> bool:
    """An issue, epic or merge request to-do whose target the user may no longer read (or is
    gone)."""
    if row.target_type == ISSUE:
        return row.target_id not in found.issues
    if row.target_type == EPIC:
        return row.target_id not in found.epics
    if row.target_type == MERGE_REQUEST:
        return row.target_id not in found.merge_requests
    return False


def list_todos(db: Session, actor: Actor, q: TodoList, page: Page) -> TodoSet:
    """The actor's to-dos (pending unless `state` says done), newest first, with GitLab's
    filters: action, author, project, group and target type."""
    filters: dict[str, object] = {}
    if q.action is not None:
        filters["action"] = ACTIONS[q.action]
    for name in ("author_id", "project_id", "group_id"):
        if getattr(q, name) is not None:
            filters[name] = getattr(q, name)
    if q.type is not None:
        filters["target_type"] = q.type
    result = finder.page_of(db, actor.id, q.state or PENDING, filters, page)
    found = _gather(db, actor, result.items)
    found.todos = [row for row in result.items if not _target_lost(found, row)]
    found.page = result
    return found


def _shown(db: Session, actor: Actor, todo_id: int) -> TodoSet:
    row = finder.one_of(db, actor.id, todo_id)
    if row is None:
        raise NotFound(message=TODO_NOT_FOUND)
    return _gather(db, actor, [row])


# ----------------------------------------------------------------------------- changing


def mark_done(db: Session, actor: Actor, todo_id: int) -> TodoSet:
    """One of the actor's to-dos done (already done stays so)."""
    with transaction(db):
        todo = db.scalars(select(Todo).where(Todo.id == todo_id, Todo.user_id == actor.id)).first()
        if todo is None:
            raise NotFound(message=TODO_NOT_FOUND)
        if todo.state != DONE:
            todo.state = DONE
    return _shown(db, actor, todo_id)


def mark_all_done(db: Session, actor: Actor) -> None:
    """Every pending to-do of the actor's done."""
    with transaction(db):
        db.execute(
            update(Todo)
            .where(Todo.user_id == actor.id, Todo.state == PENDING)
            .values(state=DONE, updated_at=utcnow()),
            execution_options={"synchronize_session": False},
        )


def _mark(db: Session, actor: Actor, target_type: str, target_id: int, project_id: int) -> TodoSet | None:
    """A to-do the actor sets themselves on something they may read; None (GitLab's 304) when
    they have a pending one on it already."""
    with transaction(db):
        pending = db.scalars(
            select(Todo.id).where(
                Todo.user_id == actor.id,
                Todo.target_type == target_type,
                Todo.target_id == target_id,
                Todo.state == PENDING,
            )
        ).first()
        if pending is not None:
            return None
        todo = add(
            db,
            user_id=actor.id,
            author_id=actor.id,
            action=MARKED,
            target_type=target_type,
            target_id=target_id,
            project_id=project_id,
        )
        todo_id = todo.id
    return _shown(db, actor, todo_id)


def mark_issue(db: Session, actor: Actor, ident: str, iid: int) -> TodoSet | None:
    """A to-do the actor sets themselves on an issue they may read; None (GitLab's 304) when
    they have a pending one on it already."""
    s = subjects.issue(db, actor, ident, iid)
    return _mark(db, actor, ISSUE, s.issue.id, s.project.project.id)


def mark_merge_request(db: Session, actor: Actor, ident: str, iid: int) -> TodoSet | None:
    """The same on a merge request."""
    s = subjects.merge_request(db, actor, ident, iid)
    return _mark(db, actor, MERGE_REQUEST, s.merge_request.id, s.project.project.id)
