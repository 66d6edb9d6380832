"""Group issue boards: GitLab's Group Boards API, the project boards' rules under
/groups/:id. A group board sees the labels and milestones of the group and the groups above
it, and offers lists to the group's members (those of the groups above included)."""

from __future__ import annotations

from sqlalchemy import func, select

from kiln.models import Board, BoardList, Label
from kiln.models.boards import BACKLOG, CLOSED
from kiln.models.namespaces import GUEST, REPORTER
from tests.statements import count

BASE = "http://kiln.test"


def boards_url(group, board_id: int | str | None = None) -> str:
    base = f"/groups/{group.id}/boards"
    return base if board_id is None else f"{base}/{board_id}"


def lists_url(group, board_id: int | str, list_id: int | str | None = None) -> str:
    base = f"{boards_url(group, board_id)}/lists"
    return base if list_id is None else f"{base}/{list_id}"


def reporter_group(make, **kw):
    u = make.user()
    return u, make.group(members={u: REPORTER}, **kw)


def add_board(api, caller, group, name: str = "Development") -> dict:
    r = api(caller).post(boards_url(group), json={"name": name})
    assert r.status_code == 201, r.text
    return r.json()


def add_list(api, caller, group, board_id: int, **target) -> dict:
    r = api(caller).post(lists_url(group, board_id), json=target)
    assert r.status_code == 201, r.text
    return r.json()


def board_count(db) -> int:
    return db.scalar(select(func.count()).select_from(Board))


# ----------------------------------------------------------------------------- boards


def test_a_group_without_boards_lists_none(api, make):
    u, g = reporter_group(make)
    assert api(u).get(boards_url(g)).json() == []


def test_reporter_creates_a_group_board_showing_its_group(api, make, db):
    u, g = reporter_group(make, path="team", name="Team")
    r = api(u).post(boards_url(g), json={"name": "Plan"})
    assert r.status_code == 201
    created = r.json()
    assert created == {
        "id": created["id"],
        "name": "Plan",
        "hide_backlog_list": False,
        "hide_closed_list": False,
        "project": None,
        "group": {"id": g.id, "web_url": f"{BASE}/groups/team", "name": "Team"},
        "milestone": None,
        "assignee": None,
        "labels": [],
        "weight": None,
        "lists": [],
    }
    kinds = db.scalars(select(BoardList.list_type).where(BoardList.board_id == created["id"])).all()
    assert sorted(kinds) == [BACKLOG, CLOSED]
    assert api(u).get(boards_url(g)).json() == [created]
    assert api(u).get(boards_url(g, created["id"])).json() == created


def test_a_group_board_is_not_reached_through_another_group_or_a_project(api, make):
    u, g = reporter_group(make)
    other = make.group(members={u: REPORTER})
    p = make.project(namespace=g)
    created = add_board(api, u, g)
    assert api(u).get(boards_url(g, created["id"])).json()["id"] == created["id"]
    assert api(u).get(boards_url(other, created["id"])).json() == {"message": "404 Board Not Found"}
    assert api(u).get(f"/projects/{p.id}/boards/{created['id']}").json() == {"message": "404 Board Not Found"}
    assert api(u).get(f"/projects/{p.id}/boards").json() == []


def test_a_group_board_is_renamed_scoped_and_deleted(api, make, db):
    u, g = reporter_group(make)
    m = make.milestone(group=g)
    created = add_board(api, u, g)
    url = boards_url(g, created["id"])
    changed = (
        api(u)
        .put(
            url,
            json={"name": "Scoped", "milestone_id": m.id, "assignee_id": u.id, "labels": "g1", "weight": 0},
        )
        .json()
    )
    assert (
        changed["name"],
        changed["milestone"]["group_id"],
        changed["assignee"]["id"],
        changed["weight"],
    ) == (
        "Scoped",
        g.id,
        u.id,
        0,
    )
    assert changed["milestone"]["web_url"] == f"{BASE}/groups/{g.full_path}/-/milestones/{m.iid}"
    made = db.scalars(select(Label).where(Label.title == "g1")).one()
    assert (made.group_id, made.project_id) == (g.id, None)
    assert api(u).delete(url).status_code == 204
    assert board_count(db) == 0


def test_a_blank_name_is_refused(api, make, db):
    u, g = reporter_group(make)
    r = api(u).post(boards_url(g), json={"name": ""})
    assert (r.status_code, r.json()) == (400, {"message": {"name": ["can't be blank"]}})
    assert board_count(db) == 0


# ----------------------------------------------------------------------------- lists


def test_a_group_board_takes_labels_of_the_group_and_the_groups_above(api, make):
    u = make.user()
    top = make.group(members={u: REPORTER})
    g = make.group(parent=top)
    board_id = add_board(api, u, g)["id"]
    own = add_list(api, u, g, board_id, label_id=make.label(group=g).id)
    above = add_list(api, u, g, board_id, label_id=make.label(group=top).id)
    assert [(x["id"], x["position"]) for x in api(u).get(lists_url(g, board_id)).json()] == [
        (own["id"], 0),
        (above["id"], 1),
    ]


def test_a_project_label_or_a_subgroups_label_is_not_found(api, make, db):
    u, g = reporter_group(make)
    board_id = add_board(api, u, g)["id"]
    sub = make.group(parent=g)
    for label in (make.label(project=make.project(namespace=g)), make.label(group=sub)):
        r = api(u).post(lists_url(g, board_id), json={"label_id": label.id})
        assert (r.status_code, r.json()) == (400, {"error": "Label not found!"})
    assert db.scalar(select(func.count()).select_from(BoardList).where(BoardList.board_id == board_id)) == 2


def test_a_group_milestone_list_and_a_member_list(api, make, db):
    u = make.user()
    top = make.group(members={u: REPORTER})
    g = make.group(parent=top)
    board_id = add_board(api, u, g)["id"]
    m = make.milestone(group=top)
    assert add_list(api, u, g, board_id, milestone_id=m.id)["milestone"]["id"] == m.id
    # A member of the group above is a member of this one.
    assert add_list(api, u, g, board_id, assignee_id=u.id)["assignee"]["id"] == u.id
    r = api(u).post(lists_url(g, board_id), json={"assignee_id": make.user().id})
    assert (r.status_code, r.json()) == (400, {"error": "User not found!"})
    assert db.scalar(select(func.count()).select_from(BoardList).where(BoardList.board_id == board_id)) == 4


def test_group_lists_move_and_go(api, make):
    u, g = reporter_group(make)
    board_id = add_board(api, u, g)["id"]
    ids = [add_list(api, u, g, board_id, label_id=make.label(group=g).id)["id"] for _ in range(3)]
    assert api(u).put(lists_url(g, board_id, ids[2]), json={"position": 0}).json()["position"] == 0
    assert api(u).delete(lists_url(g, board_id, ids[0])).status_code == 204
    shown = api(u).get(lists_url(g, board_id)).json()
    assert [(x["id"], x["position"]) for x in shown] == [(ids[2], 0), (ids[1], 1)]
    assert api(u).get(lists_url(g, board_id, ids[1])).json()["position"] == 1


# ----------------------------------------------------------------------------- who may


def test_a_guest_reads_group_boards_but_changes_nothing(api, make, db):
    owner, g = reporter_group(make)
    guest = make.user()
    make.member(g, guest, GUEST)
    board_id = add_board(api, owner, g)["id"]
    assert api(guest).get(boards_url(g, board_id)).json()["name"] == "Development"
    for r in (
        api(guest).post(boards_url(g), json={"name": "x"}),
        api(guest).put(boards_url(g, board_id), json={"name": "x"}),
        api(guest).delete(boards_url(g, board_id)),
        api(guest).post(lists_url(g, board_id), json={"label_id": make.label(group=g).id}),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert board_count(db) == 1
    assert db.scalar(select(func.count()).select_from(BoardList).where(BoardList.board_id == board_id)) == 2
    assert api(owner).get(boards_url(g, board_id)).json()["name"] == "Development"


def test_a_private_group_is_404_to_others_and_a_public_one_readable(api, make, db):
    _owner, hidden = reporter_group(make)
    owner, public = reporter_group(make, visibility="public")
    add_board(api, owner, public)
    stranger = make.user()
    r = api(stranger).get(boards_url(hidden))
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})
    assert len(api(stranger).get(boards_url(public)).json()) == 1
    assert api(stranger).post(boards_url(public), json={"name": "x"}).status_code == 403
    assert api(stranger).post(boards_url(hidden), json={"name": "x"}).status_code == 404
    assert board_count(db) == 1
    assert api().get(boards_url(public)).status_code == 401


# ----------------------------------------------------------------------------- statements


def _full_board(api, make, u, g) -> None:
    board_id = add_board(api, u, g)["id"]
    api(u).put(
        boards_url(g, board_id),
        json={"milestone_id": make.milestone(group=g).id, "assignee_id": u.id, "labels": "s1,s2"},
    )
    add_list(api, u, g, board_id, label_id=make.label(group=g).id)
    add_list(api, u, g, board_id, milestone_id=make.milestone(group=g).id)
    add_list(api, u, g, board_id, assignee_id=u.id)


def test_listing_group_boards_costs_the_same_for_one_board_and_many(api, make, runtime):
    u, g = reporter_group(make)
    _full_board(api, make, u, g)
    few = count(runtime, lambda: api(u).get(boards_url(g)))
    for _ in range(4):
        _full_board(api, make, u, g)
    many = count(runtime, lambda: api(u).get(boards_url(g)))
    assert len(api(u).get(boards_url(g)).json()) == 5
    assert few == many
