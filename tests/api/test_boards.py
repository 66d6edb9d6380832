"""Project issue boards: GitLab's Boards API, one rule per test. A board has a name, an
optional scope (milestone, assignee, labels, weight) and lists of a label, an assignee or a
milestone in positions 0, 1, 2, …; its backlog and closed lists are its own and never shown."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from sqlalchemy import func, select

from kiln.models import Board, BoardLabel, BoardList, Label
from kiln.models.boards import BACKLOG, CLOSED
from kiln.models.namespaces import GUEST, REPORTER
from kiln.models.projects import DISABLED, FEATURE_PRIVATE
from tests.statements import count

BASE = "http://kiln.test"


def boards_url(project, board_id: int | str | None = None) -> str:
    base = f"/projects/{project.id}/boards"
    return base if board_id is None else f"{base}/{board_id}"


def lists_url(project, board_id: int | str, list_id: int | str | None = None) -> str:
    base = f"{boards_url(project, board_id)}/lists"
    return base if list_id is None else f"{base}/{list_id}"


def reporter_project(make, **kw):
    u = make.user()
    return u, make.project(members={u: REPORTER}, **kw)


def add_board(api, caller, project, name: str = "Development") -> dict:
    r = api(caller).post(boards_url(project), json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()


def add_list(api, caller, project, board_id: int, **target) -> dict:
    r = api(caller).post(lists_url(project, board_id), json=target)
    assert r.status_code == 201, r.text
    return r.json()


def board_count(db) -> int:
    return db.scalar(select(func.count()).select_from(Board))


def list_rows(db, board_id: int) -> list[tuple[int, int | None]]:
    db.expire_all()
    stmt = select(BoardList.list_type, BoardList.position).where(BoardList.board_id == board_id)
    return sorted(
        [tuple(r) for r in db.execute(stmt.order_by(BoardList.id))], key=lambda r: (r[0], r[1] or 0)
    )


def positions(api, caller, project, board_id: int) -> list[tuple[str, int]]:
    shown = api(caller).get(lists_url(project, board_id)).json()
    return [(item["label"]["name"], item["position"]) for item in shown]


def label_view(label: Label) -> dict:
    return {
        "id": label.id,
        "name": label.title,
        "color": label.color,
        "description": label.description,
        "description_html": "",
        "text_color": "#FFFFFF",
    }


def project_view(api, project) -> dict:
    full = api("root").get(f"/projects/{project.id}").json()
    return {
        "id": project.id,
        "name": project.name,
        "name_with_namespace": full["name_with_namespace"],
        "path": project.path,
        "path_with_namespace": full["path_with_namespace"],
        "http_url_to_repo": full["http_url_to_repo"],
        "web_url": full["web_url"],
    }


# ----------------------------------------------------------------------------- boards


def test_a_project_without_boards_lists_none(api, make):
    u, p = reporter_project(make)
    r = api(u).get(boards_url(p))
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")


def test_reporter_creates_a_board_with_every_field(api, make):
    u, p = reporter_project(make)
    r = api(u).post(boards_url(p), json={"name": "Team"})
    assert r.status_code == 201
    created = r.json()
    assert created == {
        "id": created["id"],
        "name": "Team",
        "hide_backlog_list": False,
        "hide_closed_list": False,
        "project": project_view(api, p),
        "group": None,
        "milestone": None,
        "assignee": None,
        "labels": [],
        "weight": None,
        "lists": [],
    }


def test_a_board_is_created_from_a_form_too(api, make):
    u, p = reporter_project(make)
    r = api(u).post(boards_url(p), data={"name": "Form"})
    assert (r.status_code, r.json()["name"]) == (201, "Form")


def test_a_new_board_gets_its_backlog_and_closed_lists_unshown(api, make, db):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    assert list_rows(db, created["id"]) == [(BACKLOG, None), (CLOSED, None)]
    assert api(u).get(lists_url(p, created["id"])).json() == []


def test_name_is_required(api, make, db):
    u, p = reporter_project(make)
    r = api(u).post(boards_url(p), json={})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})
    assert board_count(db) == 0


def test_a_blank_name_is_refused(api, make, db):
    u, p = reporter_project(make)
    r = api(u).post(boards_url(p), json={"name": "  "})
    assert (r.status_code, r.json()) == (400, {"message": {"name": ["can't be blank"]}})
    assert board_count(db) == 0


def test_a_name_longer_than_255_is_refused(api, make, db):
    u, p = reporter_project(make)
    r = api(u).post(boards_url(p), json={"name": "x" * 256})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"name": ["is too long (maximum is 255 characters)"]}},
    )
    assert board_count(db) == 0


def test_a_project_holds_several_boards_listed_by_name_and_paginated(api, make):
    u, p = reporter_project(make)
    # Named against their age and in mixed case: GitLab lists boards by name, case aside.
    created = {name: add_board(api, u, p, name=name)["id"] for name in ("c", "B", "a")}
    r = api(u).get(boards_url(p), params={"per_page": 2})
    assert [b["id"] for b in r.json()] == [created["a"], created["B"]]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    second = api(u).get(boards_url(p), params={"page": 2, "per_page": 2}).json()
    assert [b["id"] for b in second] == [created["c"]]


def test_a_single_board_is_shown_as_listed(api, make):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    add_list(api, u, p, created["id"], label_id=make.label(project=p).id)
    shown = api(u).get(boards_url(p, created["id"])).json()
    assert shown == api(u).get(boards_url(p)).json()[0]
    assert len(shown["lists"]) == 1


def test_a_missing_board_is_404(api, make):
    u, p = reporter_project(make)
    for r in (
        api(u).get(boards_url(p, 999999)),
        api(u).put(boards_url(p, 999999), json={"name": "x"}),
        api(u).delete(boards_url(p, 999999)),
        api(u).get(lists_url(p, 999999)),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Board Not Found"})


def test_another_projects_board_is_404_here(api, make):
    u, p = reporter_project(make)
    other = make.project(members={u: REPORTER})
    theirs = add_board(api, u, other)
    assert api(u).get(boards_url(p, theirs["id"])).json() == {"message": "404 Board Not Found"}
    assert api(u).delete(boards_url(p, theirs["id"])).json() == {"message": "404 Board Not Found"}
    assert api(u).get(boards_url(other, theirs["id"])).status_code == 200


def test_a_board_id_that_is_no_number_is_invalid(api, make):
    u, p = reporter_project(make)
    r = api(u).get(boards_url(p, "abc"))
    assert (r.status_code, r.json()) == (400, {"error": "board_id is invalid"})


# ----------------------------------------------------------------------------- updating


def test_name_and_hidden_lists_change(api, make):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    r = api(u).put(
        boards_url(p, created["id"]),
        json={"name": "Renamed", "hide_backlog_list": True, "hide_closed_list": "true"},
    )
    assert r.status_code == 200
    assert (r.json()["name"], r.json()["hide_backlog_list"], r.json()["hide_closed_list"]) == (
        "Renamed",
        True,
        True,
    )
    again = api(u).put(boards_url(p, created["id"]), data={"hide_closed_list": "false"}).json()
    assert (again["name"], again["hide_backlog_list"], again["hide_closed_list"]) == ("Renamed", True, False)


def test_the_scope_is_set_to_a_milestone_an_assignee_labels_and_a_weight(api, make):
    u, p = reporter_project(make)
    m = make.milestone(project=p, title="1.0", due_date=date.today() - timedelta(days=10))
    bug = make.label(project=p, title="bug")
    created = add_board(api, u, p)
    r = api(u).put(
        boards_url(p, created["id"]),
        json={"milestone_id": m.id, "assignee_id": u.id, "labels": "bug, new-one", "weight": 4},
    )
    assert r.status_code == 200, r.text
    board = r.json()
    milestone = board["milestone"]
    assert milestone == {
        "id": m.id,
        "iid": m.iid,
        "project_id": p.id,
        "title": "1.0",
        "description": None,
        "state": "active",
        "created_at": milestone["created_at"],
        "updated_at": milestone["updated_at"],
        "due_date": (date.today() - timedelta(days=10)).isoformat(),
        "start_date": None,
        "expired": True,
        "web_url": f"{project_view(api, p)['web_url']}/-/milestones/{m.iid}",
    }
    assert (board["assignee"]["id"], board["assignee"]["username"]) == (u.id, u.username)
    assert [label["name"] for label in board["labels"]] == ["bug", "new-one"]
    assert board["labels"][0] == label_view(bug)
    assert board["weight"] == 4


def test_scope_labels_missing_are_created_in_the_project(api, make, db):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    api(u).put(boards_url(p, created["id"]), json={"labels": "fresh"})
    made = db.scalars(select(Label).where(Label.title == "fresh")).one()
    assert (made.project_id, made.group_id) == (p.id, None)


def test_scope_labels_are_replaced_by_a_new_set_and_cleared_by_an_empty_one(api, make):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    url = boards_url(p, created["id"])
    api(u).put(url, json={"labels": "a,b"})
    assert [x["name"] for x in api(u).put(url, json={"labels": "b,c"}).json()["labels"]] == ["b", "c"]
    assert api(u).put(url, json={"labels": ""}).json()["labels"] == []


def test_scope_labels_are_taken_as_a_json_array_too(api, make):
    u, p = reporter_project(make)
    url = boards_url(p, add_board(api, u, p)["id"])
    assert [x["name"] for x in api(u).put(url, json={"labels": ["x", "y"]}).json()["labels"]] == ["x", "y"]


def test_a_group_milestone_above_the_project_scopes_its_board(api, make):
    u = make.user()
    g = make.group(members={u: REPORTER})
    p = make.project(namespace=g)
    m = make.milestone(group=g)
    created = add_board(api, u, p)
    milestone = api(u).put(boards_url(p, created["id"]), json={"milestone_id": m.id}).json()["milestone"]
    assert (milestone["id"], milestone["group_id"], "project_id" in milestone) == (m.id, g.id, False)
    assert milestone["web_url"] == f"{BASE}/groups/{g.full_path}/-/milestones/{m.iid}"


def test_a_milestone_the_project_cannot_see_clears_the_scope(api, make):
    u, p = reporter_project(make)
    mine = make.milestone(project=p)
    elsewhere = make.milestone(project=make.project())
    url = boards_url(p, add_board(api, u, p)["id"])
    assert api(u).put(url, json={"milestone_id": mine.id}).json()["milestone"]["id"] == mine.id
    assert api(u).put(url, json={"milestone_id": elsewhere.id}).json()["milestone"] is None


def test_null_clears_the_assignee_and_the_weight_and_an_unknown_user_does_too(api, make):
    u, p = reporter_project(make)
    url = boards_url(p, add_board(api, u, p)["id"])
    set_ = api(u).put(url, json={"assignee_id": u.id, "weight": 2}).json()
    assert (set_["assignee"]["id"], set_["weight"]) == (u.id, 2)
    cleared = api(u).put(url, json={"assignee_id": None, "weight": None}).json()
    assert (cleared["assignee"], cleared["weight"]) == (None, None)
    assert api(u).put(url, json={"assignee_id": u.id}).json()["assignee"]["id"] == u.id
    assert api(u).put(url, json={"assignee_id": 999999}).json()["assignee"] is None


def test_parameters_not_given_are_left_alone(api, make):
    u, p = reporter_project(make)
    url = boards_url(p, add_board(api, u, p)["id"])
    api(u).put(url, json={"assignee_id": u.id, "weight": 3, "labels": "x", "hide_backlog_list": True})
    kept = api(u).put(url, json={"name": "Only the name"}).json()
    assert (kept["assignee"]["id"], kept["weight"], len(kept["labels"]), kept["hide_backlog_list"]) == (
        u.id,
        3,
        1,
        True,
    )


def test_a_blank_new_name_is_refused_and_nothing_changes(api, make, db):
    u, p = reporter_project(make)
    created = add_board(api, u, p, name="Kept")
    r = api(u).put(boards_url(p, created["id"]), json={"name": "", "weight": 5})
    assert (r.status_code, r.json()) == (
        400,
        {"message": '400 Bad request - Failed to save board {:name=>["can\'t be blank"]}'},
    )
    again = api(u).get(boards_url(p, created["id"])).json()
    assert (again["name"], again["weight"]) == ("Kept", None)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"hide_backlog_list": "maybe"}, "hide_backlog_list is invalid"),
        ({"weight": "heavy"}, "weight is invalid"),
        ({"weight": 2**40}, "weight is invalid"),
        ({"assignee_id": "me"}, "assignee_id is invalid"),
        ({"milestone_id": 2**70}, "milestone_id is invalid"),
    ],
)
def test_bad_update_parameters_are_400_and_change_nothing(api, make, body, error):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    r = api(u).put(boards_url(p, created["id"]), json={"name": "Changed", **body})
    assert (r.status_code, r.json()) == (400, {"error": error})
    assert api(u).get(boards_url(p, created["id"])).json()["name"] == "Development"


# ----------------------------------------------------------------------------- deleting


def test_deleting_a_board_removes_its_lists_and_scope(api, make, db):
    u, p = reporter_project(make)
    created = add_board(api, u, p)
    add_list(api, u, p, created["id"], label_id=make.label(project=p).id)
    api(u).put(boards_url(p, created["id"]), json={"labels": "scope"})
    assert db.scalar(select(func.count()).select_from(BoardList)) == 3
    assert db.scalar(select(func.count()).select_from(BoardLabel)) == 1
    r = api(u).delete(boards_url(p, created["id"]))
    assert (r.status_code, r.content) == (204, b"")
    assert board_count(db) == 0
    assert db.scalar(select(func.count()).select_from(BoardList)) == 0
    assert db.scalar(select(func.count()).select_from(BoardLabel)) == 0
    assert api(u).get(boards_url(p, created["id"])).status_code == 404


# ----------------------------------------------------------------------------- lists


def test_a_label_list_is_added_after_the_last_one_with_every_field(api, make):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    todo = make.label(project=p, title="To Do", color="#FFEEAA", description="*Next*")
    doing = make.label(project=p, title="Doing")
    first = add_list(api, u, p, board_id, label_id=todo.id)
    assert first == {
        "id": first["id"],
        "label": {
            "id": todo.id,
            "name": "To Do",
            "color": "#FFEEAA",
            "description": "*Next*",
            "description_html": "<p><em>Next</em></p>",
            "text_color": "#333333",
        },
        "position": 0,
        "max_issue_count": 0,
        "max_issue_weight": 0,
        "limit_metric": None,
        "assignee": None,
        "milestone": None,
        "iteration": None,
    }
    assert add_list(api, u, p, board_id, label_id=doing.id)["position"] == 1
    assert api(u).get(boards_url(p, board_id)).json()["lists"] == api(u).get(lists_url(p, board_id)).json()


def test_a_list_of_a_label_of_a_group_above_the_project(api, make):
    u = make.user()
    top = make.group(members={u: REPORTER})
    sub = make.group(parent=top)
    p = make.project(namespace=sub)
    label = make.label(group=top)
    board_id = add_board(api, u, p)["id"]
    assert add_list(api, u, p, board_id, label_id=label.id)["label"]["id"] == label.id


def test_a_label_the_project_cannot_see_is_not_found(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    theirs = make.label(project=make.project())
    for label_id in (theirs.id, 999999):
        r = api(u).post(lists_url(p, board_id), json={"label_id": label_id})
        assert (r.status_code, r.json()) == (400, {"error": "Label not found!"})
    assert list_rows(db, board_id) == [(BACKLOG, None), (CLOSED, None)]


def test_a_label_has_one_list_per_board(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    label = make.label(project=p)
    add_list(api, u, p, board_id, label_id=label.id)
    r = api(u).post(lists_url(p, board_id), json={"label_id": label.id})
    assert (r.status_code, r.json()) == (400, {"error": "Label has already been taken"})
    assert len(list_rows(db, board_id)) == 3
    other_board = add_board(api, u, p, name="Other")["id"]
    assert add_list(api, u, p, other_board, label_id=label.id)["position"] == 0


def test_a_milestone_list(api, make):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    m = make.milestone(project=p, title="v1")
    created = add_list(api, u, p, board_id, milestone_id=m.id)
    assert (created["label"], created["milestone"]["title"], created["assignee"]) == (None, "v1", None)
    r = api(u).post(lists_url(p, board_id), json={"milestone_id": m.id})
    assert (r.status_code, r.json()) == (400, {"error": "Milestone has already been taken"})
    r = api(u).post(lists_url(p, board_id), json={"milestone_id": make.milestone(project=make.project()).id})
    assert (r.status_code, r.json()) == (400, {"error": "Milestone not found!"})


def test_an_assignee_list_takes_a_member(api, make):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    created = add_list(api, u, p, board_id, assignee_id=u.id)
    assert created["assignee"] == {
        "id": u.id,
        "username": u.username,
        "name": u.row.name,
        "state": "active",
        "locked": False,
        "avatar_url": None,
        "web_url": f"{BASE}/{u.username}",
    }
    r = api(u).post(lists_url(p, board_id), json={"assignee_id": make.user().id})
    assert (r.status_code, r.json()) == (400, {"error": "User not found!"})
    r = api(u).post(lists_url(p, board_id), json={"assignee_id": u.id})
    assert (r.status_code, r.json()) == (400, {"error": "User has already been taken"})


def test_lists_of_every_kind_share_positions_and_show_by_kind(api, make):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    m = make.milestone(project=p)
    by_milestone = add_list(api, u, p, board_id, milestone_id=m.id)
    by_label = add_list(api, u, p, board_id, label_id=make.label(project=p).id)
    by_user = add_list(api, u, p, board_id, assignee_id=u.id)
    shown = api(u).get(lists_url(p, board_id)).json()
    assert [(x["id"], x["position"]) for x in shown] == [
        (by_label["id"], 1),
        (by_user["id"], 2),
        (by_milestone["id"], 0),
    ]


def test_no_iteration_can_be_found(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    r = api(u).post(lists_url(p, board_id), json={"iteration_id": 1})
    assert (r.status_code, r.json()) == (400, {"error": "Iteration not found!"})
    assert list_rows(db, board_id) == [(BACKLOG, None), (CLOSED, None)]


def test_a_list_needs_exactly_one_target(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    label = make.label(project=p)
    r = api(u).post(lists_url(p, board_id), json={})
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": "label_id, milestone_id, iteration_id, assignee_id are missing, "
            "exactly one parameter must be provided"
        },
    )
    r = api(u).post(lists_url(p, board_id), json={"label_id": label.id, "assignee_id": u.id})
    assert (r.status_code, r.json()) == (400, {"error": "label_id, assignee_id are mutually exclusive"})
    r = api(u).post(lists_url(p, board_id), json={"label_id": "first"})
    assert (r.status_code, r.json()) == (400, {"error": "label_id is invalid"})
    assert len(list_rows(db, board_id)) == 2


def test_a_single_list_and_the_boards_own_lists_are_not_found(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    created = add_list(api, u, p, board_id, label_id=make.label(project=p).id)
    assert api(u).get(lists_url(p, board_id, created["id"])).json() == created
    backlog = db.scalars(
        select(BoardList.id).where(BoardList.board_id == board_id, BoardList.list_type == BACKLOG)
    ).one()
    for list_id in (backlog, 999999):
        for r in (
            api(u).get(lists_url(p, board_id, list_id)),
            api(u).put(lists_url(p, board_id, list_id), json={"position": 0}),
            api(u).delete(lists_url(p, board_id, list_id)),
        ):
            assert (r.status_code, r.json()) == (404, {"message": "404 List Not Found"})


def test_a_list_of_another_board_is_not_found_on_this_one(api, make):
    u, p = reporter_project(make)
    one, two = add_board(api, u, p)["id"], add_board(api, u, p)["id"]
    created = add_list(api, u, p, one, label_id=make.label(project=p).id)
    assert api(u).get(lists_url(p, one, created["id"])).json() == created
    r = api(u).get(lists_url(p, two, created["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 List Not Found"})


def test_lists_are_paginated(api, make):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    for _ in range(3):
        add_list(api, u, p, board_id, label_id=make.label(project=p).id)
    r = api(u).get(lists_url(p, board_id), params={"per_page": 2})
    assert ([x["position"] for x in r.json()], r.headers["X-Total"]) == ([0, 1], "3")
    rest = api(u).get(lists_url(p, board_id), params={"per_page": 2, "page": 2}).json()
    assert [x["position"] for x in rest] == [2]


def _three_lists(api, make, u, p) -> tuple[int, list[int]]:
    board_id = add_board(api, u, p)["id"]
    ids = [add_list(api, u, p, board_id, label_id=make.label(project=p, title=t).id)["id"] for t in "abc"]
    return board_id, ids


def test_moving_a_list_later_moves_those_between_back(api, make):
    u, p = reporter_project(make)
    board_id, ids = _three_lists(api, make, u, p)
    r = api(u).put(lists_url(p, board_id, ids[0]), json={"position": 2})
    assert (r.status_code, r.json()["position"]) == (200, 2)
    assert positions(api, u, p, board_id) == [("b", 0), ("c", 1), ("a", 2)]


def test_moving_a_list_earlier_moves_those_between_on(api, make):
    u, p = reporter_project(make)
    board_id, ids = _three_lists(api, make, u, p)
    api(u).put(lists_url(p, board_id, ids[2]), data={"position": "0"})
    assert positions(api, u, p, board_id) == [("c", 0), ("a", 1), ("b", 2)]


@pytest.mark.parametrize("position", [0, 3, -1])
def test_a_move_to_its_own_place_or_off_the_board_is_refused(api, make, position):
    u, p = reporter_project(make)
    board_id, ids = _three_lists(api, make, u, p)
    r = api(u).put(lists_url(p, board_id, ids[0]), json={"position": position})
    assert (r.status_code, r.json()) == (400, {"error": "List could not be moved!"})
    assert positions(api, u, p, board_id) == [("a", 0), ("b", 1), ("c", 2)]


def test_a_move_needs_a_position(api, make):
    u, p = reporter_project(make)
    board_id, ids = _three_lists(api, make, u, p)
    r = api(u).put(lists_url(p, board_id, ids[0]), json={})
    assert (r.status_code, r.json()) == (400, {"error": "position is missing"})
    assert positions(api, u, p, board_id) == [("a", 0), ("b", 1), ("c", 2)]


def test_deleting_a_list_moves_the_later_ones_up(api, make):
    u, p = reporter_project(make)
    board_id, ids = _three_lists(api, make, u, p)
    r = api(u).delete(lists_url(p, board_id, ids[0]))
    assert (r.status_code, r.content) == (204, b"")
    assert positions(api, u, p, board_id) == [("b", 0), ("c", 1)]


def test_deleting_a_label_removes_its_lists(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    label = make.label(project=p)
    add_list(api, u, p, board_id, label_id=label.id)
    db.delete(db.get(Label, label.id))
    db.flush()
    db.expire_all()
    assert api(u).get(lists_url(p, board_id)).json() == []
    assert list_rows(db, board_id) == [(BACKLOG, None), (CLOSED, None)]


# ----------------------------------------------------------------------------- who may


def test_boards_need_a_signed_in_caller(api, make):
    p = make.project(visibility="public")
    r = api().get(boards_url(p))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_a_guest_reads_boards_but_changes_nothing(api, make, db):
    owner, p = reporter_project(make)
    guest = make.user()
    make.member(p, guest, GUEST)
    board_id = add_board(api, owner, p)["id"]
    list_id = add_list(api, owner, p, board_id, label_id=make.label(project=p).id)["id"]
    assert [b["id"] for b in api(guest).get(boards_url(p)).json()] == [board_id]
    assert api(guest).get(lists_url(p, board_id, list_id)).json()["id"] == list_id
    for r in (
        api(guest).post(boards_url(p), json={"name": "x"}),
        api(guest).put(boards_url(p, board_id), json={"name": "x"}),
        api(guest).delete(boards_url(p, board_id)),
        api(guest).post(lists_url(p, board_id), json={"label_id": make.label(project=p).id}),
        api(guest).put(lists_url(p, board_id, list_id), json={"position": 0}),
        api(guest).delete(lists_url(p, board_id, list_id)),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert board_count(db) == 1
    assert len(list_rows(db, board_id)) == 3
    assert api(owner).get(boards_url(p, board_id)).json()["name"] == "Development"


def test_a_private_project_is_404_to_others(api, make, db):
    _owner, p = reporter_project(make)
    stranger = make.user()
    for r in (api(stranger).get(boards_url(p)), api(stranger).post(boards_url(p), json={"name": "x"})):
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert board_count(db) == 0


def test_anyone_signed_in_reads_a_public_projects_boards(api, make, db):
    owner, p = reporter_project(make, visibility="public")
    add_board(api, owner, p)
    stranger = make.user()
    assert len(api(stranger).get(boards_url(p)).json()) == 1
    assert api(stranger).post(boards_url(p), json={"name": "x"}).status_code == 403
    assert board_count(db) == 1


@pytest.mark.parametrize("issues", [DISABLED, FEATURE_PRIVATE])
def test_boards_follow_the_issues_feature(api, make, db, issues):
    owner, p = reporter_project(make, visibility="public", issues_access_level=issues)
    stranger = make.user()
    assert api(stranger).get(boards_url(p)).json() == {"message": "403 Forbidden"}
    assert api(stranger).post(boards_url(p), json={"name": "x"}).status_code == 403
    expected = 403 if issues == DISABLED else 201
    assert api(owner).post(boards_url(p), json={"name": "x"}).status_code == expected
    assert board_count(db) == (0 if issues == DISABLED else 1)


def test_an_archived_projects_boards_are_read_only(api, make, db):
    u, p = reporter_project(make, archived=True)
    assert api(u).get(boards_url(p)).json() == []
    assert api(u).post(boards_url(p), json={"name": "x"}).status_code == 403
    assert board_count(db) == 0


def test_an_administrator_manages_any_projects_boards(api, make, db):
    p = make.project()
    created = api("root").post(boards_url(p), json={"name": "Admin"})
    assert created.status_code == 201
    assert db.scalars(select(Board.name).where(Board.project_id == p.id)).all() == ["Admin"]
    assert api("root").delete(boards_url(p, created.json()["id"])).status_code == 204
    assert board_count(db) == 0


# ----------------------------------------------------------------------------- statements


def _full_board(api, make, u, p) -> None:
    """A board with a scope of every kind and a list of every kind."""
    board_id = add_board(api, u, p)["id"]
    m = make.milestone(project=p)
    api(u).put(
        boards_url(p, board_id),
        json={"milestone_id": m.id, "assignee_id": u.id, "labels": "s1,s2", "weight": 1},
    )
    add_list(api, u, p, board_id, label_id=make.label(project=p).id)
    add_list(api, u, p, board_id, milestone_id=make.milestone(project=p).id)
    add_list(api, u, p, board_id, assignee_id=u.id)


def test_listing_boards_costs_the_same_for_one_board_and_many(api, make, runtime):
    u, p = reporter_project(make)
    _full_board(api, make, u, p)
    few = count(runtime, lambda: api(u).get(boards_url(p)))
    for _ in range(4):
        _full_board(api, make, u, p)
    many = count(runtime, lambda: api(u).get(boards_url(p)))
    assert len(api(u).get(boards_url(p)).json()) == 5
    assert few == many


def test_listing_lists_costs_the_same_for_one_list_and_many(api, make, runtime):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    add_list(api, u, p, board_id, label_id=make.label(project=p).id)
    add_list(api, u, p, board_id, milestone_id=make.milestone(project=p).id)
    add_list(api, u, p, board_id, assignee_id=u.id)
    few = count(runtime, lambda: api(u).get(lists_url(p, board_id)))
    others = [make.user() for _ in range(3)]
    for other in others:
        make.member(p, other, GUEST)
        add_list(api, u, p, board_id, assignee_id=other.id)
        add_list(api, u, p, board_id, label_id=make.label(project=p).id)
        add_list(api, u, p, board_id, milestone_id=make.milestone(project=p).id)
    many = count(runtime, lambda: api(u).get(lists_url(p, board_id)))
    assert len(api(u).get(lists_url(p, board_id)).json()) == 12
    assert few == many


# ----------------------------------------------------------------------------- hostile input


def test_ids_past_any_row_are_not_found_or_refused_never_an_error(api, make, db):
    u, p = reporter_project(make)
    board_id = add_board(api, u, p)["id"]
    list_id = add_list(api, u, p, board_id, label_id=make.label(project=p).id)["id"]
    big = 2**62
    for target in ("label_id", "milestone_id", "assignee_id"):
        assert api(u).post(lists_url(p, board_id), json={target: big}).status_code == 400
    for url in (boards_url(p, big), lists_url(p, big), lists_url(p, board_id, big)):
        assert api(u).get(url).status_code == 404
    for position in (big, -big):
        assert api(u).put(lists_url(p, board_id, list_id), json={"position": position}).status_code == 400
    changed = api(u).put(
        boards_url(p, board_id), json={"milestone_id": big, "assignee_id": big, "labels": "x" * 10_000}
    )
    assert (changed.status_code, changed.json()["labels"], changed.json()["milestone"]) == (200, [], None)
    assert api(u).post(boards_url(p), json={"name": "a\x00b"}).status_code == 400
    assert board_count(db) == 1
