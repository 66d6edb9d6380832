"""To-dos: each user's own list of what they are asked to look at (pending by default,
newest first, filtered as GitLab filters it), marked done one by one or all at once, and
the to-do a user sets themselves on an issue."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.db import transaction
from kiln.models import Todo
from kiln.models.namespaces import GUEST, REPORTER
from kiln.models.todos import ASSIGNED, DONE, MARKED, MENTIONED, PENDING
from kiln.services import todos as todo_writes
from tests.statements import statements


def add_todo(db, user, target, *, author, action=MENTIONED, body=None, state=PENDING, kind="Issue"):
    with transaction(db):
        todo = todo_writes.add(
            db,
            user_id=user.id,
            author_id=author.id,
            action=action,
            target_type=kind,
            target_id=target.id,
            project_id=target.project_id if kind == "Issue" else None,
            group_id=target.group_id if kind == "Epic" else None,
            body=body,
        )
        todo.state = state
    return todo


@pytest.fixture
def setup(make):
    me, other = make.user(), make.user()
    project = make.project(members={me: REPORTER, other: REPORTER}, path="app")
    issue = make.issue(project, other, title="Fix it")
    return me, other, project, issue


def test_the_list_holds_the_callers_pending_todos_newest_first(api, db, setup):
    me, other, project, issue = setup
    first = add_todo(db, me, issue, author=other, body="@me look")
    second = add_todo(db, me, issue, author=other, action=ASSIGNED)
    add_todo(db, other, issue, author=me)
    add_todo(db, me, issue, author=other, state=DONE)
    r = api(me).get("/todos")
    assert r.status_code == 200, r.text
    assert [t["id"] for t in r.json()] == [second.id, first.id]
    assert r.headers["X-Total"] == "2"
    view = r.json()[1]
    assert view["action_name"] == "mentioned"
    assert view["body"] == "@me look"
    assert view["state"] == "pending"
    assert view["target_type"] == "Issue"
    assert view["target"]["id"] == issue.id
    assert view["target"]["title"] == "Fix it"
    assert view["target_url"].endswith(f"/-/issues/{issue.iid}")
    assert view["author"]["username"] == other.username
    assert view["project"]["id"] == project.id
    assert view["project"]["path_with_namespace"].endswith("/app")
    assert view["project"]["name_with_namespace"].endswith(" / app")
    assert "group" not in view
    assert view["created_at"].endswith("Z")
    assert view["updated_at"].endswith("Z")
    assert r.json()[0]["body"] == "Fix it"  # no body of its own: the target's title


def test_filters(api, db, make, setup):
    me, other, _project, issue = setup
    third = make.user()
    elsewhere = make.project(members={me: REPORTER})
    other_issue = make.issue(elsewhere, me)
    mentioned = add_todo(db, me, issue, author=other)
    assigned = add_todo(db, me, issue, author=third, action=ASSIGNED)
    away = add_todo(db, me, other_issue, author=other)
    done = add_todo(db, me, issue, author=other, state=DONE)
    group = make.group(members={me: REPORTER})
    planned = add_todo(db, me, make.epic(group, other), author=other, kind="Epic")

    def ids(**query) -> list[int]:
        r = api(me).get("/todos", params=query)
        assert r.status_code == 200, r.text
        return [t["id"] for t in r.json()]

    assert ids(action="assigned") == [assigned.id]
    assert ids(author_id=third.id) == [assigned.id]
    assert ids(project_id=elsewhere.id) == [away.id]
    assert ids(state="done") == [done.id]
    assert ids() == [planned.id, away.id, assigned.id, mentioned.id]
    assert ids(type="Issue") == [away.id, assigned.id, mentioned.id]
    assert ids(type="Epic") == [planned.id]
    assert ids(type="MergeRequest") == []
    assert ids(group_id=group.id) == [planned.id]
    assert ids(group_id=12345) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"action": "liked"}, "action does not have a valid value"),
        ({"state": "all"}, "state does not have a valid value"),
        ({"type": "Snippet"}, "type does not have a valid value"),
        ({"author_id": "x"}, "author_id is invalid"),
    ],
)
def test_bad_filters_are_refused(api, setup, query, message):
    me = setup[0]
    r = api(me).get("/todos", params=query)
    assert (r.status_code, r.json()) == (400, {"error": message})


def test_todos_need_a_caller(api):
    assert api().get("/todos").status_code == 401
    assert api().post("/todos/mark_as_done").status_code == 401


def test_a_todo_whose_issue_the_user_may_no_longer_read_is_left_out(api, db, make):
    me, author = make.user(), make.user()
    project = make.project(members={me: GUEST, author: REPORTER})
    secret = make.issue(project, author, confidential=True)
    hidden = make.project(members={author: REPORTER})
    gone = make.issue(hidden, author)
    add_todo(db, me, secret, author=author)
    add_todo(db, me, gone, author=author)
    seen = add_todo(db, me, make.issue(project, author), author=author)
    assert [t["id"] for t in api(me).get("/todos").json()] == [seen.id]


def test_marking_one_done(api, db, setup):
    me, other, _project, issue = setup
    todo = add_todo(db, me, issue, author=other)
    r = api(me).post(f"/todos/{todo.id}/mark_as_done")
    assert r.status_code == 201, r.text
    assert (r.json()["id"], r.json()["state"]) == (todo.id, "done")
    assert api(me).get("/todos").json() == []
    assert [t["id"] for t in api(me).get("/todos", params={"state": "done"}).json()] == [todo.id]


def test_someone_elses_todo_is_not_found(api, db, setup):
    me, other, _project, issue = setup
    theirs = add_todo(db, other, issue, author=me)
    r = api(me).post(f"/todos/{theirs.id}/mark_as_done")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    db.expire_all()
    assert db.get(Todo, theirs.id).state == PENDING
    r = api(me).post("/todos/99999/mark_as_done")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_marking_all_done_touches_only_the_callers(api, db, setup):
    me, other, _project, issue = setup
    mine = [add_todo(db, me, issue, author=other) for _ in range(2)]
    theirs = add_todo(db, other, issue, author=me)
    assert api(me).get("/todos").headers["X-Total"] == "2"
    r = api(me).post("/todos/mark_as_done")
    assert r.status_code == 204
    assert api(me).get("/todos").json() == []
    db.expire_all()
    assert [db.get(Todo, t.id).state for t in mine] == [DONE, DONE]
    assert db.get(Todo, theirs.id).state == PENDING


def test_a_user_marks_an_issue_as_a_todo_once(api, db, setup):
    me, _other, project, issue = setup
    url = f"/projects/{project.id}/issues/{issue.iid}/todo"
    r = api(me).post(url)
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["action_name"], body["state"], body["target"]["iid"]) == ("marked", "pending", issue.iid)
    assert body["author"]["id"] == me.id
    assert body["body"] == "Fix it"
    again = api(me).post(url)
    assert again.status_code == 304
    rows = db.scalars(select(Todo).where(Todo.user_id == me.id)).all()
    assert [(t.action, t.target_id) for t in rows] == [(MARKED, issue.id)]
    api(me).post(f"/todos/{body['id']}/mark_as_done")
    assert api(me).post(url).status_code == 201
    rows = db.scalars(select(Todo.state).where(Todo.user_id == me.id).order_by(Todo.id)).all()
    assert rows == [DONE, PENDING]


def test_an_issue_todo_needs_sight_of_the_issue(api, db, make, setup):
    me, _other, project, issue = setup
    stranger = make.user()
    r = api(stranger).post(f"/projects/{project.id}/issues/{issue.iid}/todo")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    r = api(me).post(f"/projects/{project.id}/issues/999/todo")
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert db.scalars(select(Todo)).all() == []


def test_epic_todos_show_the_epic_and_its_group(api, db, make):
    me, author = make.user(), make.user()
    group = make.group(owners=[author], members={me: REPORTER}, path="grp")
    epic = make.epic(group, author, title="Big plan")
    add_todo(db, me, epic, author=author, kind="Epic")
    [view] = api(me).get("/todos").json()
    assert view["target_type"] == "Epic"
    assert (view["target"]["id"], view["target"]["title"]) == (epic.id, "Big plan")
    assert view["target_url"].endswith(f"/groups/grp/-/epics/{epic.iid}")
    assert (view["group"]["id"], view["group"]["full_path"]) == (group.id, "grp")
    assert "project" not in view


def test_the_list_costs_the_same_for_one_todo_and_for_many(api, db, make, runtime):
    me = make.user()
    group = make.group(owners=[me])
    projects = [make.project(namespace=group) for _ in range(3)]
    label = make.label(group=group)

    def add(i: int) -> None:
        author = make.user()
        issue = make.issue(projects[i % 3], author, labels=[label], assignees=[me])
        add_todo(db, me, issue, author=author)
        epic = make.epic(group, author, labels=[label])
        add_todo(db, me, epic, author=author, kind="Epic")

    def call():
        return api(me).get("/todos")

    add(0)
    one = statements(runtime, call)
    for i in range(1, 6):
        add(i)
    assert len(call().json()) == 12
    many = statements(runtime, call)
    assert len(one) == len(many)


def test_a_todo_id_past_any_row_is_not_found(api, setup):
    me = setup[0]
    assert api(me).post(f"/todos/{2**63 - 1}/mark_as_done").status_code == 404
