"""Epics: GitLab's Epics API (and its Epic Links API for child epics), one rule per test."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import func, select

from kiln.models import (
    AwardEmoji,
    Epic,
    Event,
    Label,
    LabelLink,
    Note,
    ResourceLabelEvent,
    ResourceStateEvent,
    Subscription,
    Todo,
)
from kiln.models.namespaces import GUEST, REPORTER
from tests.statements import count

BASE = "http://kiln.test"


def url(group, iid: int | None = None, tail: str = "") -> str:
    base = f"/groups/{group.id}/epics"
    return (base if iid is None else f"{base}/{iid}") + tail


def owned(make, **kw):
    owner = make.user()
    return owner, make.group(owners=[owner], **kw)


def create(api, caller, group, **body):
    r = api(caller).post(url(group), json={"title": "An epic", **body})
    assert r.status_code == 201, r.text
    return r.json()


def epic_count(db) -> int:
    return db.scalar(select(func.count()).select_from(Epic))


def flag(api, name: str, on: bool) -> None:
    r = api("root").post(f"/features/{name}", json={"value": "true" if on else "false"})
    assert r.status_code == 201, r.text


def team(make, **kw):
    """A group with an Owner, a Reporter, a Guest; and someone outside it."""
    owner, reporter, guest, stranger = make.user(), make.user(), make.user(), make.user()
    g = make.group(owners=[owner], members={reporter: REPORTER, guest: GUEST}, **kw)
    return g, owner, reporter, guest, stranger


def count_of(db, model, *where) -> int:
    db.expire_all()
    return db.scalar(select(func.count()).select_from(model).where(*where))


# ----------------------------------------------------------------------------- creating


def test_an_epic_is_shown_with_every_field(api, make):
    owner, g = owned(make, path="planning")
    r = api(owner).post(url(g), json={"title": "Roadmap", "description": "Plan", "labels": "a,b"})
    assert r.status_code == 201, r.text
    view = r.json()
    assert view == {
        "id": view["id"],
        "iid": 1,
        "color": "#1068bf",
        "text_color": "#FFFFFF",
        "group_id": g.id,
        "parent_id": None,
        "parent_iid": None,
        "imported": False,
        "imported_from": "none",
        "title": "Roadmap",
        "description": "Plan",
        "confidential": False,
        "author": {
            "id": owner.id,
            "username": owner.username,
            "name": view["author"]["name"],
            "state": "active",
            "locked": False,
            "avatar_url": view["author"]["avatar_url"],
            "web_url": f"{BASE}/{owner.username}",
        },
        "start_date": None,
        "start_date_is_fixed": False,
        "start_date_fixed": None,
        "start_date_from_inherited_source": None,
        "start_date_from_milestones": None,
        "end_date": None,
        "due_date": None,
        "due_date_is_fixed": False,
        "due_date_fixed": None,
        "due_date_from_inherited_source": None,
        "due_date_from_milestones": None,
        "state": "opened",
        "web_edit_url": "/groups/planning/-/epics/1",
        "web_url": f"{BASE}/groups/planning/-/epics/1",
        "references": {"short": "&1", "relative": "&1", "full": "planning&1"},
        "reference": "planning&1",
        "created_at": view["created_at"],
        "updated_at": view["updated_at"],
        "closed_at": None,
        "labels": ["a", "b"],
        "upvotes": 0,
        "downvotes": 0,
        "_links": {
            "self": f"{BASE}/api/v4/groups/{g.id}/epics/1",
            "epic_issues": f"{BASE}/api/v4/groups/{g.id}/epics/1/issues",
            "group": f"{BASE}/api/v4/groups/{g.id}",
            "parent": None,
        },
    }


def test_title_is_required(api, make, db):
    owner, g = owned(make)
    r = api(owner).post(url(g), json={"description": "x"})
    assert (r.status_code, r.json()) == (400, {"error": "title is missing"})
    assert epic_count(db) == 0


def test_a_blank_title_is_refused(api, make, db):
    owner, g = owned(make)
    r = api(owner).post(url(g), json={"title": "  "})
    assert (r.status_code, r.json()) == (400, {"message": {"title": ["can't be blank"]}})
    assert epic_count(db) == 0


def test_a_description_over_a_mebibyte_is_refused(api, make, db):
    owner, g = owned(make)
    r = api(owner).post(url(g), json={"title": "t", "description": "x" * 1_048_577})
    assert r.status_code == 400
    assert r.json() == {"message": {"description": ["is too long (maximum is 1048576 characters)"]}}
    assert epic_count(db) == 0


def test_iids_count_per_group(api, make):
    owner, g = owned(make)
    _, other = owned(make)
    assert [create(api, owner, g)["iid"] for _ in range(3)] == [1, 2, 3]
    other_owner = make.user()
    other = make.group(owners=[other_owner])
    assert create(api, other_owner, other)["iid"] == 1


@pytest.mark.parametrize("labels", ["bug, ux", ["bug", "ux"]])
def test_labels_are_a_comma_string_or_an_array_and_missing_ones_are_created(api, make, db, labels):
    owner, g = owned(make)
    make.label(group=g, title="bug", color="#ff0000")
    view = create(api, owner, g, labels=labels)
    assert view["labels"] == ["bug", "ux"]
    created = db.scalars(select(Label).where(Label.title == "ux")).one()
    assert created.group_id == g.id


def test_labels_of_a_parent_group_are_used(api, make, db):
    owner, top = owned(make)
    sub = make.group(parent=top)
    make.label(group=top, title="roadmap")
    view = create(api, owner, sub, labels="roadmap")
    assert view["labels"] == ["roadmap"]
    assert count_of(db, Label, Label.title == "roadmap") == 1


def test_labels_are_sorted_by_title(api, make):
    owner, g = owned(make)
    assert create(api, owner, g, labels="zeta,alpha")["labels"] == ["alpha", "zeta"]


def test_confidential_is_ignored_while_the_flag_is_off(api, make, db):
    owner, g = owned(make)
    view = create(api, owner, g, confidential=True)
    assert view["confidential"] is False
    db.expire_all()
    assert db.get(Epic, view["id"]).confidential is False


def test_confidential_is_kept_with_the_flag_on(api, make):
    owner, g = owned(make)
    flag(api, "confidential_epics", True)
    assert create(api, owner, g, confidential=True)["confidential"] is True


def test_fixed_dates_are_the_epic_dates(api, make):
    owner, g = owned(make)
    view = create(
        api,
        owner,
        g,
        start_date_is_fixed=True,
        start_date_fixed="2024-01-02",
        due_date_is_fixed="true",
        due_date_fixed="2024-03-04",
    )
    assert (view["start_date"], view["start_date_fixed"], view["start_date_is_fixed"]) == (
        "2024-01-02",
        "2024-01-02",
        True,
    )
    assert (view["due_date"], view["end_date"], view["due_date_fixed"]) == (
        "2024-03-04",
        "2024-03-04",
        "2024-03-04",
    )


def test_deprecated_start_and_end_date_set_the_fixed_dates(api, make):
    owner, g = owned(make)
    view = create(api, owner, g, start_date="2024-01-02", end_date="2024-02-03")
    assert (view["start_date_fixed"], view["due_date_fixed"]) == ("2024-01-02", "2024-02-03")
    assert view["start_date"] is None  # not fixed: inherited, and nothing to inherit


def test_an_invalid_date_is_refused(api, make, db):
    owner, g = owned(make)
    r = api(owner).post(url(g), json={"title": "t", "start_date_fixed": "not a date"})
    assert (r.status_code, r.json()) == (400, {"error": "start_date_fixed is invalid"})
    assert epic_count(db) == 0


def test_created_at_is_kept_for_owners(api, make):
    owner, g = owned(make)
    view = create(api, owner, g, created_at="2020-05-06T07:08:09Z")
    assert view["created_at"] == "2020-05-06T07:08:09.000Z"


def test_created_at_is_ignored_for_reporters(api, make):
    g, _, reporter, _, _ = team(make)
    view = create(api, reporter, g, created_at="2020-05-06T07:08:09Z")
    assert not view["created_at"].startswith("2020")


def test_creating_records_an_epic_event(api, make, db):
    owner, g = owned(make)
    view = create(api, owner, g)
    event = db.scalars(select(Event).where(Event.target_type == "Epic", Event.target_id == view["id"])).one()
    assert event.action == "opened"
    assert event.data == {"hook": "epic", "hook_action": "open", "iid": 1, "group_id": g.id}


def test_mentions_in_the_description_give_to_dos(api, make, db):
    owner, mentioned = make.user(), make.user(username="alice")
    g = make.group(owners=[owner], members={mentioned: GUEST})
    view = create(api, owner, g, description="Please look @alice")
    todo = db.scalars(select(Todo).where(Todo.user_id == mentioned.id)).one()
    assert (todo.target_type, todo.target_id, todo.group_id) == ("Epic", view["id"], g.id)


# ----------------------------------------------------------------------------- who may


def test_a_reporter_creates_epics(api, make):
    g, _, reporter, _, _ = team(make)
    assert create(api, reporter, g)["author"]["id"] == reporter.id


def test_a_guest_may_not_create_epics(api, make, db):
    g, _, _, guest, _ = team(make)
    r = api(guest).post(url(g), json={"title": "t"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert epic_count(db) == 0


def test_a_private_group_is_hidden_from_strangers(api, make, db):
    g, owner, _, _, stranger = team(make)
    create(api, owner, g)
    assert api(stranger).get(url(g)).status_code == 404
    assert api(stranger).get(url(g, 1)).json() == {"message": "404 Group Not Found"}
    assert api(stranger).post(url(g), json={"title": "t"}).status_code == 404
    assert epic_count(db) == 1


def test_a_public_groups_epics_are_open_to_any_signed_in_user(api, make, db):
    g, owner, _, _, stranger = team(make, visibility="public")
    create(api, owner, g)
    assert [e["iid"] for e in api(stranger).get(url(g)).json()] == [1]
    assert api(stranger).post(url(g), json={"title": "t"}).status_code == 403
    assert epic_count(db) == 1


def test_epics_need_authentication(api, make):
    g, owner, *_ = team(make, visibility="public")
    create(api, owner, g)
    assert api().get(url(g)).status_code == 401


def test_epics_are_forbidden_while_the_feature_is_off(api, make, db):
    g, owner, *_ = team(make)
    create(api, owner, g)
    flag(api, "epics", False)
    assert api(owner).get(url(g)).json() == {"message": "403 Forbidden"}
    assert api(owner).get(url(g, 1)).status_code == 403
    assert api(owner).post(url(g), json={"title": "t"}).status_code == 403
    assert epic_count(db) == 1


def test_a_missing_epic_is_not_found(api, make):
    owner, g = owned(make)
    assert api(owner).get(url(g, 7)).json() == {"message": "404 Epic Not Found"}


def test_a_confidential_epic_is_for_reporters_and_its_author(api, make):
    g, owner, reporter, guest, _ = team(make)
    flag(api, "confidential_epics", True)
    make.epic(g, owner, confidential=True)
    mine = make.epic(g, guest, confidential=True)
    assert api(reporter).get(url(g, 1)).status_code == 200
    assert api(guest).get(url(g, 1)).json() == {"message": "404 Epic Not Found"}
    assert api(guest).get(url(g, mine.iid)).status_code == 200
    assert [e["iid"] for e in api(guest).get(url(g)).json()] == [mine.iid]
    assert sorted(e["iid"] for e in api(reporter).get(url(g)).json()) == [1, 2]


# ----------------------------------------------------------------------------- reading


def test_the_list_holds_subgroup_epics_newest_first(api, make):
    owner, top = owned(make, path="top")
    sub = make.group(parent=top, path="sub")
    make.epic(top, owner, title="top epic")
    make.epic(sub, owner, title="sub epic")
    views = api(owner).get(url(top)).json()
    assert [v["title"] for v in views] == ["sub epic", "top epic"]
    assert views[0]["references"] == {"short": "&1", "relative": "sub&1", "full": "top/sub&1"}


def test_descendants_are_left_out_on_request(api, make):
    owner, top = owned(make)
    sub = make.group(parent=top)
    make.epic(top, owner, title="top epic")
    make.epic(sub, owner, title="sub epic")
    views = api(owner).get(url(top), params={"include_descendant_groups": "false"}).json()
    assert [v["title"] for v in views] == ["top epic"]


def test_ancestors_are_included_on_request(api, make):
    owner, top = owned(make)
    sub = make.group(parent=top)
    make.epic(top, owner, title="top epic")
    make.epic(sub, owner, title="sub epic")
    assert [v["title"] for v in api(owner).get(url(sub)).json()] == ["sub epic"]
    views = api(owner).get(url(sub), params={"include_ancestor_groups": True}).json()
    assert sorted(v["title"] for v in views) == ["sub epic", "top epic"]


def test_a_subgroup_the_caller_may_not_see_is_left_out(api, make):
    owner = make.user()
    member = make.user()
    top = make.group(owners=[owner], visibility="public")
    hidden = make.group(parent=top, visibility="private")
    make.epic(top, owner, title="open")
    make.epic(hidden, owner, title="hidden")
    assert [v["title"] for v in api(owner).get(url(top)).json()] == ["hidden", "open"]
    assert [v["title"] for v in api(member).get(url(top)).json()] == ["open"]


def test_state_filters_and_defaults_to_all(api, make):
    owner, g = owned(make)
    make.epic(g, owner, title="open")
    make.epic(g, owner, title="shut", state="closed")
    assert len(api(owner).get(url(g)).json()) == 2
    assert [v["title"] for v in api(owner).get(url(g), params={"state": "closed"}).json()] == ["shut"]
    assert [v["title"] for v in api(owner).get(url(g), params={"state": "opened"}).json()] == ["open"]
    r = api(owner).get(url(g), params={"state": "merged"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})


def test_labels_filter_needs_every_label(api, make):
    owner, g = owned(make)
    bug, ux = make.label(group=g, title="bug"), make.label(group=g, title="ux")
    make.epic(g, owner, title="both", labels=[bug, ux])
    make.epic(g, owner, title="bug only", labels=[bug])
    make.epic(g, owner, title="none")
    titles = lambda **q: sorted(v["title"] for v in api(owner).get(url(g), params=q).json())  # noqa: E731
    assert titles(labels="bug,ux") == ["both"]
    assert titles(labels="bug") == ["both", "bug only"]
    assert titles(labels="None") == ["none"]
    assert titles(labels="Any") == ["both", "bug only"]
    assert titles(**{"not[labels]": "ux"}) == ["bug only", "none"]


def test_author_filters(api, make):
    g, owner, reporter, _, _ = team(make)
    make.epic(g, owner, title="by owner")
    make.epic(g, reporter, title="by reporter")
    titles = lambda **q: [v["title"] for v in api(owner).get(url(g), params=q).json()]  # noqa: E731
    assert titles(author_id=owner.id) == ["by owner"]
    assert titles(author_username=reporter.username) == ["by reporter"]
    assert titles(**{"not[author_id]": owner.id}) == ["by reporter"]
    assert titles(**{"not[author_username]": reporter.username}) == ["by owner"]


def test_author_id_and_username_are_exclusive(api, make):
    owner, g = owned(make)
    r = api(owner).get(url(g), params={"author_id": owner.id, "author_username": owner.username})
    assert (r.status_code, r.json()) == (400, {"error": "author_id, author_username are mutually exclusive"})


def test_search_matches_title_and_description(api, make):
    owner, g = owned(make)
    make.epic(g, owner, title="Alpha launch")
    make.epic(g, owner, title="Other", description="the ALPHA plan")
    make.epic(g, owner, title="Beta")
    views = api(owner).get(url(g), params={"search": "alpha"}).json()
    assert sorted(v["title"] for v in views) == ["Alpha launch", "Other"]


def test_order_by_title_ascending(api, make):
    owner, g = owned(make)
    for title in ("b", "c", "a"):
        make.epic(g, owner, title=title)
    views = api(owner).get(url(g), params={"order_by": "title", "sort": "asc"}).json()
    assert [v["title"] for v in views] == ["a", "b", "c"]


def test_an_unknown_order_is_refused(api, make):
    owner, g = owned(make)
    r = api(owner).get(url(g), params={"order_by": "priority"})
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_created_after_and_before(api, make):
    from datetime import UTC, datetime

    owner, g = owned(make)
    make.epic(g, owner, title="old", created_at=datetime(2020, 1, 1, tzinfo=UTC))
    make.epic(g, owner, title="new", created_at=datetime(2023, 1, 1, tzinfo=UTC))
    after = api(owner).get(url(g), params={"created_after": "2021-01-01T00:00:00Z"}).json()
    before = api(owner).get(url(g), params={"created_before": "2021-01-01"}).json()
    assert ([v["title"] for v in after], [v["title"] for v in before]) == (["new"], ["old"])
    assert api(owner).get(url(g), params={"created_after": "soon"}).status_code == 400


def test_iids_look_in_the_group_alone(api, make):
    owner, top = owned(make)
    sub = make.group(parent=top)
    make.epic(top, owner, title="top 1")
    make.epic(top, owner, title="top 2")
    make.epic(sub, owner, title="sub 1")
    views = api(owner).get(url(top) + "?iids[]=1").json()
    assert [v["title"] for v in views] == ["top 1"]


def test_confidential_filter(api, make):
    owner, g = owned(make)
    make.epic(g, owner, title="secret", confidential=True)
    make.epic(g, owner, title="open")
    views = api(owner).get(url(g), params={"confidential": "true"}).json()
    assert [v["title"] for v in views] == ["secret"]
    views = api(owner).get(url(g), params={"confidential": "false"}).json()
    assert [v["title"] for v in views] == ["open"]


def test_my_reaction_emoji(api, make, db):
    from kiln.models import AwardEmoji

    owner, g = owned(make)
    liked = make.epic(g, owner, title="liked")
    make.epic(g, owner, title="plain")
    db.add(AwardEmoji(name="thumbsup", user_id=owner.id, awardable_type="Epic", awardable_id=liked.id))
    db.flush()
    titles = lambda v: [e["title"] for e in api(owner).get(url(g), params={"my_reaction_emoji": v}).json()]  # noqa: E731
    assert (titles("thumbsup"), titles("Any"), titles("None")) == (["liked"], ["liked"], ["plain"])


def test_with_labels_details(api, make):
    owner, g = owned(make)
    bug = make.label(group=g, title="bug", color="#ff0000", description="Broken")
    make.epic(g, owner, labels=[bug])
    view = api(owner).get(url(g), params={"with_labels_details": True}).json()[0]
    assert view["labels"] == [
        {
            "id": bug.id,
            "name": "bug",
            "color": "#ff0000",
            "description": "Broken",
            "description_html": "<p>Broken</p>",
            "text_color": "#FFFFFF",
        }
    ]


def test_the_list_is_paginated(api, make):
    owner, g = owned(make)
    for _ in range(3):
        make.epic(g, owner)
    r = api(owner).get(url(g), params={"per_page": 2})
    assert len(r.json()) == 2
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    rest = api(owner).get(url(g), params={"per_page": 2, "page": 2}).json()
    assert sorted(v["iid"] for v in r.json() + rest) == [1, 2, 3]


def test_a_list_costs_the_same_for_one_and_many_epics(api, make, runtime):
    owner, g = owned(make)
    sub = make.group(parent=g)
    label = make.label(group=g)
    make.epic(g, owner, labels=[label])

    def call():
        return api(owner).get(url(g), params={"labels": label.title})

    one = count(runtime, call)
    for n in range(6):
        other = make.user()
        make.epic(sub if n % 2 else g, other, labels=[label])
    assert len(call().json()) == 7
    assert count(runtime, call) == one


def test_one_epic_carries_subscribed(api, make):
    g, owner, reporter, _, _ = team(make)
    make.epic(g, owner)
    assert api(owner).get(url(g, 1)).json()["subscribed"] is True
    assert api(reporter).get(url(g, 1)).json()["subscribed"] is False
    assert "subscribed" not in api(owner).get(url(g)).json()[0]


def test_a_path_names_the_group(api, make):
    owner, g = owned(make, path="by-path")
    make.epic(g, owner)
    assert api(owner).get("/groups/by-path/epics/1").json()["iid"] == 1


# ----------------------------------------------------------------------------- changing


def change(api, caller, group, iid, **body):
    r = api(caller).put(url(group, iid), json=body)
    assert r.status_code == 200, r.text
    return r.json()


def notes_of(db, epic_id: int) -> list[str]:
    db.expire_all()
    return list(
        db.scalars(
            select(Note.body)
            .where(Note.noteable_type == "Epic", Note.noteable_id == epic_id)
            .order_by(Note.id)
        )
    )


def test_a_change_names_something_to_change(api, make, db):
    owner, g = owned(make)
    make.epic(g, owner)
    r = api(owner).put(url(g, 1), json={})
    assert r.status_code == 400
    assert r.json()["error"].endswith("are missing, at least one parameter must be provided")
    assert r.json()["error"].startswith("add_labels, color, confidential, description")


def test_title_and_description_change_with_system_notes(api, make, db):
    owner, g = owned(make)
    epic = make.epic(g, owner, title="Old", description="before")
    view = change(api, owner, g, 1, title="New", description="after")
    assert (view["title"], view["description"]) == ("New", "after")
    assert notes_of(db, epic.id) == ["changed title from **Old** to **New**", "changed the description"]
    event = db.scalars(select(Event).where(Event.target_type == "Epic")).one()
    assert event.data["changes"]["title"] == {"previous": "Old", "current": "New"}
    assert (event.action, event.data["hook_action"]) == ("updated", "update")


def test_closing_and_reopening(api, make, db):
    g, owner, reporter, _, _ = team(make)
    epic = make.epic(g, owner)
    closed = change(api, reporter, g, 1, state_event="close")
    assert closed["state"] == "closed"
    assert closed["closed_at"] is not None
    db.expire_all()
    assert db.get(Epic, epic.id).closed_by_id == reporter.id
    opened = change(api, reporter, g, 1, state_event="reopen")
    assert (opened["state"], opened["closed_at"]) == ("opened", None)
    states = db.scalars(
        select(ResourceStateEvent.state)
        .where(ResourceStateEvent.target_id == epic.id)
        .order_by(ResourceStateEvent.id)
    )
    assert list(states) == ["closed", "reopened"]
    actions = db.scalars(select(Event.action).where(Event.target_id == epic.id).order_by(Event.id))
    assert list(actions) == ["closed", "reopened"]


def test_an_unknown_state_event_is_refused(api, make, db):
    owner, g = owned(make)
    epic = make.epic(g, owner)
    r = api(owner).put(url(g, 1), json={"state_event": "merge"})
    assert (r.status_code, r.json()) == (400, {"error": "state_event does not have a valid value"})
    db.expire_all()
    assert db.get(Epic, epic.id).state == "opened"


def test_labels_are_replaced_added_and_removed(api, make, db):
    owner, g = owned(make)
    epic = make.epic(g, owner, labels=[make.label(group=g, title="a")])
    assert change(api, owner, g, 1, labels="b,c")["labels"] == ["b", "c"]
    assert change(api, owner, g, 1, add_labels="d", remove_labels="b")["labels"] == ["c", "d"]
    assert change(api, owner, g, 1, labels="")["labels"] == []
    actions = db.scalars(select(ResourceLabelEvent.action).where(ResourceLabelEvent.target_id == epic.id))
    assert sorted(actions) == ["add", "add", "add", "remove", "remove", "remove", "remove"]


def test_a_guest_may_not_change_an_epic(api, make, db):
    g, owner, _, guest, _ = team(make)
    epic = make.epic(g, owner, title="Same")
    r = api(guest).put(url(g, 1), json={"title": "Other", "labels": "new"})
    assert r.status_code == 403
    db.expire_all()
    assert db.get(Epic, epic.id).title == "Same"
    assert count_of(db, Label) == 0


def test_an_invalid_change_writes_nothing(api, make, db):
    owner, g = owned(make)
    epic = make.epic(g, owner, title="Same")
    r = api(owner).put(url(g, 1), json={"title": "", "labels": "new"})
    assert r.status_code == 400
    db.expire_all()
    assert db.get(Epic, epic.id).title == "Same"
    assert count_of(db, Label) == 0


def test_updated_at_is_kept_for_owners(api, make):
    owner, g = owned(make)
    make.epic(g, owner)
    view = change(api, owner, g, 1, title="x", updated_at="2021-02-03T04:05:06Z")
    assert view["updated_at"] == "2021-02-03T04:05:06.000Z"


def test_confidential_needs_confidential_issues(api, make, db):
    owner, g = owned(make)
    flag(api, "confidential_epics", True)
    project = make.project(namespace=g, owner=owner)
    epic = make.epic(g, owner, issues=[make.issue(project, owner)])
    r = api(owner).put(url(g, 1), json={"confidential": True})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": {
                "confidential": ["Cannot make the epic confidential if it contains non-confidential issues"]
            }
        },
    )
    db.expire_all()
    assert db.get(Epic, epic.id).confidential is False
    assert notes_of(db, epic.id) == []


def test_confidential_changes_with_a_note(api, make, db):
    owner, g = owned(make)
    flag(api, "confidential_epics", True)
    epic = make.epic(g, owner)
    assert change(api, owner, g, 1, confidential=True)["confidential"] is True
    assert notes_of(db, epic.id) == ["made the epic confidential"]


# ----------------------------------------------------------------------------- dates


def test_dates_are_inherited_from_the_milestones_of_its_issues(api, make, db):
    owner, g = owned(make)
    project = make.project(namespace=g, owner=owner)
    early = make.milestone(group=g, start_date=date(2024, 1, 1), due_date=date(2024, 2, 1))
    late = make.milestone(project=project, start_date=date(2024, 3, 1), due_date=date(2024, 6, 30))
    make.epic(g, owner)
    for milestone in (early, late):
        issue = make.issue(project, owner, milestone=milestone)
        assert api(owner).post(url(g, 1, f"/issues/{issue.id}")).status_code == 201
    view = api(owner).get(url(g, 1)).json()
    assert (view["start_date"], view["due_date"]) == ("2024-01-01", "2024-06-30")
    assert (view["start_date_from_inherited_source"], view["due_date_from_inherited_source"]) == (
        "2024-01-01",
        "2024-06-30",
    )
    fixed = change(api, owner, g, 1, start_date_is_fixed=True, start_date_fixed="2023-12-01")
    assert (fixed["start_date"], fixed["start_date_from_inherited_source"]) == ("2023-12-01", "2024-01-01")
    assert notes_of(db, fixed["id"])[-1] == "changed start date to Dec 1, 2023"
    unfixed = change(api, owner, g, 1, start_date_is_fixed=False)
    assert unfixed["start_date"] == "2024-01-01"


def test_inherited_dates_follow_an_issues_milestone_as_it_changes(api, make):
    owner, g = owned(make)
    project = make.project(namespace=g, owner=owner)
    spring = make.milestone(project=project, start_date=date(2024, 3, 1), due_date=date(2024, 5, 31))
    autumn = make.milestone(project=project, start_date=date(2024, 9, 1), due_date=date(2024, 11, 30))
    issue = make.issue(project, owner)
    make.epic(g, owner, issues=[issue])
    assert api(owner).get(url(g, 1)).json()["start_date"] is None
    moved = api(owner).put(f"/projects/{project.id}/issues/{issue.iid}", json={"milestone_id": spring.id})
    assert moved.status_code == 200, moved.text
    assert (api(owner).get(url(g, 1)).json()["start_date"]) == "2024-03-01"
    api(owner).put(f"/projects/{project.id}/issues/{issue.iid}", json={"milestone_id": autumn.id})
    assert (api(owner).get(url(g, 1)).json()["due_date"]) == "2024-11-30"
    api(owner).put(f"/projects/{project.id}/milestones/{autumn.id}", json={"due_date": "2024-12-24"})
    assert (api(owner).get(url(g, 1)).json()["due_date"]) == "2024-12-24"
    assert api(owner).delete(f"/projects/{project.id}/milestones/{autumn.id}").status_code == 204
    assert (api(owner).get(url(g, 1)).json()["due_date"]) is None
    api(owner).put(f"/projects/{project.id}/issues/{issue.iid}", json={"milestone_id": spring.id})
    assert (api(owner).get(url(g, 1)).json()["start_date"]) == "2024-03-01"
    assert api(owner).delete(f"/projects/{project.id}/issues/{issue.iid}").status_code == 204
    assert (api(owner).get(url(g, 1)).json()["start_date"]) is None


def test_dates_follow_child_epics_up_the_tree(api, make):
    owner, g = owned(make)
    make.epic(g, owner, title="top")
    create(api, owner, g, parent_id=_id(api, owner, g, 1))
    create(api, owner, g, parent_id=_id(api, owner, g, 2))
    change(api, owner, g, 3, due_date_is_fixed=True, due_date_fixed="2025-05-05")
    assert api(owner).get(url(g, 1)).json()["due_date"] == "2025-05-05"
    change(api, owner, g, 3, due_date_fixed="2025-06-06")
    assert api(owner).get(url(g, 1)).json()["due_date"] == "2025-06-06"


def _id(api, caller, group, iid: int) -> int:
    return api(caller).get(url(group, iid)).json()["id"]


# ----------------------------------------------------------------------------- parents


def test_a_parent_is_set_on_creation(api, make, db):
    owner, g = owned(make, path="grp")
    parent = make.epic(g, owner)
    view = create(api, owner, g, parent_id=parent.id)
    assert (view["parent_id"], view["parent_iid"]) == (parent.id, 1)
    assert view["_links"]["parent"] == f"{BASE}/api/v4/groups/{g.id}/epics/1"
    assert notes_of(db, parent.id) == ["added epic &2 as child epic"]
    assert notes_of(db, view["id"]) == ["added epic &1 as parent epic"]


def test_a_parent_in_a_subgroup_is_refused(api, make, db):
    owner, top = owned(make)
    sub = make.group(parent=top)
    parent = make.epic(sub, owner)
    r = api(owner).post(url(top), json={"title": "t", "parent_id": parent.id})
    message = (
        "This epic cannot be added. An epic must belong to the same group or subgroup as its parent epic."
    )
    assert (r.status_code, r.json()) == (400, {"message": {"base": [message]}})
    assert epic_count(db) == 1


def test_a_parent_the_caller_may_not_see_is_refused(api, make, db):
    owner, g = owned(make)
    other_owner, other = owned(make)
    parent = make.epic(other, other_owner)
    r = api(owner).post(url(g), json={"title": "t", "parent_id": parent.id})
    message = "No matching epic found. Make sure that you are adding a valid epic URL."
    assert (r.status_code, r.json()) == (400, {"message": {"base": [message]}})
    assert epic_count(db) == 1


def test_a_cycle_is_refused(api, make, db):
    owner, g = owned(make)
    top = make.epic(g, owner)
    child = make.epic(g, owner, parent_id=top.id)
    r = api(owner).put(url(g, top.iid), json={"parent_id": child.id})
    message = "This epic cannot be added. It is already an ancestor of the parent epic."
    assert (r.status_code, r.json()) == (400, {"message": {"base": [message]}})
    db.expire_all()
    assert db.get(Epic, top.id).parent_id is None


def test_an_epic_is_not_its_own_parent(api, make, db):
    owner, g = owned(make)
    epic = make.epic(g, owner)
    r = api(owner).put(url(g, 1), json={"parent_id": epic.id})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"base": ["This epic cannot be added. An epic cannot be added to itself."]}
    }
    db.expire_all()
    assert db.get(Epic, epic.id).parent_id is None


def test_the_tree_is_at_most_seven_levels_deep(api, make, db):
    owner, g = owned(make)
    parent = None
    for _ in range(7):
        parent = make.epic(g, owner, parent_id=parent.id if parent is not None else None)
    r = api(owner).post(url(g), json={"title": "eighth", "parent_id": parent.id})
    assert r.status_code == 400
    assert r.json()["message"]["base"] == [
        "This epic cannot be added. One or more epics would exceed the maximum depth (7) from its most distant "
        "ancestor."
    ]
    assert epic_count(db) == 7


def test_moving_to_another_parent(api, make, db):
    owner, g = owned(make)
    first, second = make.epic(g, owner), make.epic(g, owner)
    child = make.epic(g, owner, parent_id=first.id)
    view = change(api, owner, g, child.iid, parent_id=second.id)
    assert view["parent_iid"] == second.iid
    assert notes_of(db, first.id) == ["removed child epic &3"]


# ----------------------------------------------------------------------------- deleting


def test_the_owner_deletes_an_epic(api, make, db):
    owner, g = owned(make)
    label = make.label(group=g)
    parent = make.epic(g, owner, labels=[label])
    child = make.epic(g, owner, parent_id=parent.id)
    r = api(owner).delete(url(g, 1))
    assert (r.status_code, r.content) == (204, b"")
    assert epic_count(db) == 1
    db.expire_all()
    assert db.get(Epic, child.id).parent_id is None
    assert count_of(db, LabelLink, LabelLink.target_type == "Epic") == 0
    assert api(owner).get(url(g, 1)).status_code == 404


def test_deleting_an_epic_leaves_nothing_of_it_behind(api, make, db):
    owner, g = owned(make)
    label = make.label(group=g)
    make.epic(g, owner)
    assert (
        api(owner).put(url(g, 1), json={"add_labels": label.title, "state_event": "close"}).status_code == 200
    )
    note = api(owner).post(url(g, 1, "/notes"), json={"body": "Agreed"}).json()
    assert api(owner).post(url(g, 1, "/award_emoji"), json={"name": "rocket"}).status_code == 201
    r = api(owner).post(url(g, 1, f"/notes/{note['id']}/award_emoji"), json={"name": "thumbsup"})
    assert r.status_code == 201
    assert api(owner).post(url(g, 1, "/todo")).status_code == 201
    assert api(owner).delete(url(g, 1)).status_code == 204
    left = [
        count_of(db, model)
        for model in (AwardEmoji, Note, LabelLink, ResourceLabelEvent, ResourceStateEvent, Subscription, Todo)
    ]
    assert left == [0] * 7


def test_a_reporter_may_not_delete_an_epic(api, make, db):
    g, owner, reporter, _, _ = team(make)
    make.epic(g, owner)
    assert api(reporter).delete(url(g, 1)).status_code == 403
    assert epic_count(db) == 1


# ----------------------------------------------------------------------------- to-dos


def test_a_to_do_on_an_epic(api, make, db):
    owner, g = owned(make, path="team")
    make.epic(g, owner, title="Plan")
    r = api(owner).post(url(g, 1, "/todo"))
    assert r.status_code == 201
    view = r.json()
    assert view["group"] == {
        "id": g.id,
        "name": g.name,
        "path": "team",
        "kind": "group",
        "full_path": "team",
        "parent_id": None,
    }
    assert (view["action_name"], view["target_type"], view["state"], view["body"]) == (
        "marked",
        "epic",
        "pending",
        "Plan",
    )
    assert view["target"]["iid"] == 1
    assert view["target_url"] == f"{BASE}/groups/team/-/epics/1"
    assert view["author"]["id"] == owner.id


def test_a_second_to_do_is_not_modified(api, make, db):
    owner, g = owned(make)
    make.epic(g, owner)
    assert api(owner).post(url(g, 1, "/todo")).status_code == 201
    r = api(owner).post(url(g, 1, "/todo"))
    assert (r.status_code, r.content) == (304, b"")
    assert count_of(db, Todo) == 1


# ----------------------------------------------------------------------------- child epics


def test_child_epics_are_listed_in_order(api, make):
    owner, g = owned(make)
    parent = make.epic(g, owner)
    make.epic(g, owner, title="second", parent_id=parent.id, relative_position=2)
    make.epic(g, owner, title="first", parent_id=parent.id, relative_position=1)
    views = api(owner).get(url(g, 1, "/epics")).json()
    assert [v["title"] for v in views] == ["first", "second"]


def test_an_epic_is_assigned_as_a_child_by_its_global_id(api, make, db):
    owner, g = owned(make)
    parent, child = make.epic(g, owner), make.epic(g, owner)
    r = api(owner).post(url(g, 1, f"/epics/{child.id}"))
    assert r.status_code == 201
    assert (r.json()["id"], r.json()["parent_id"]) == (child.id, parent.id)
    db.expire_all()
    assert db.get(Epic, child.id).parent_id == parent.id


def test_assigning_a_missing_child_is_not_found(api, make):
    owner, g = owned(make)
    make.epic(g, owner)
    r = api(owner).post(url(g, 1, "/epics/999999"))
    assert r.json() == {"message": "No matching epic found. Make sure that you are adding a valid epic URL."}
    assert r.status_code == 404


def test_assigning_an_ancestor_as_a_child_conflicts(api, make, db):
    owner, g = owned(make)
    top = make.epic(g, owner)
    make.epic(g, owner, parent_id=top.id)
    r = api(owner).post(url(g, 2, f"/epics/{top.id}"))
    assert (r.status_code, r.json()) == (
        409,
        {"message": "This epic cannot be added. It is already an ancestor of the parent epic."},
    )
    db.expire_all()
    assert db.get(Epic, top.id).parent_id is None


def test_a_child_epic_is_made_under_a_parent(api, make):
    owner, g = owned(make, path="grp")
    parent = make.epic(g, owner)
    r = api(owner).post(url(g, 1, "/epics"), json={"title": "Child"})
    assert r.status_code == 201
    view = r.json()
    assert view == {
        "id": view["id"],
        "iid": 2,
        "title": "Child",
        "group_id": g.id,
        "parent_id": parent.id,
        "has_children": False,
        "has_issues": False,
        "reference": "&2",
        "url": f"{BASE}/groups/grp/-/epics/2",
        "relation_url": f"{BASE}/groups/grp/-/epics/1/links/{view['id']}",
    }


def test_a_child_epic_is_removed(api, make, db):
    owner, g = owned(make)
    parent = make.epic(g, owner)
    child = make.epic(g, owner, parent_id=parent.id)
    r = api(owner).delete(url(g, 1, f"/epics/{child.id}"))
    assert r.status_code == 200
    assert (r.json()["id"], r.json()["parent_id"]) == (child.id, None)
    db.expire_all()
    assert db.get(Epic, child.id).parent_id is None
    assert api(owner).delete(url(g, 1, f"/epics/{child.id}")).status_code == 404


def test_child_epics_are_reordered(api, make):
    owner, g = owned(make)
    parent = make.epic(g, owner)
    a = make.epic(g, owner, title="a", parent_id=parent.id, relative_position=1)
    b = make.epic(g, owner, title="b", parent_id=parent.id, relative_position=2)
    r = api(owner).put(url(g, 1, f"/epics/{a.id}"), json={"move_before_id": b.id})
    assert r.status_code == 200
    assert [v["title"] for v in r.json()] == ["b", "a"]
    assert [v["title"] for v in api(owner).get(url(g, 1, "/epics")).json()] == ["b", "a"]


def test_a_guest_may_not_link_epics(api, make, db):
    g, owner, _, guest, _ = team(make)
    make.epic(g, owner)
    child = make.epic(g, owner)
    assert api(guest).post(url(g, 1, f"/epics/{child.id}")).status_code == 403
    assert api(guest).post(url(g, 1, "/epics"), json={"title": "x"}).status_code == 403
    db.expire_all()
    assert db.get(Epic, child.id).parent_id is None
    assert epic_count(db) == 2


def test_child_epics_cost_the_same_for_one_and_many(api, make, runtime):
    owner, g = owned(make)
    sub = make.group(parent=g)
    parent = make.epic(g, owner)
    make.epic(g, owner, parent_id=parent.id, labels=[make.label(group=g)])

    def call():
        return api(owner).get(url(g, 1, "/epics"))

    one = count(runtime, call)
    for n in range(5):
        make.epic(sub if n % 2 else g, make.user(), parent_id=parent.id, labels=[make.label(group=g)])
    assert len(call().json()) == 6
    assert count(runtime, call) == one


def test_mentions_in_the_change_that_makes_an_epic_confidential_reach_only_its_readers(api, make, db):
    flag(api, "confidential_epics", True)
    owner, stranger, reporter = make.user(), make.user(), make.user()
    g = make.group(owners=[owner], members={reporter: REPORTER}, visibility="public")
    make.epic(g, owner)
    body = {"description": f"@{stranger.username} @{reporter.username} see this", "confidential": True}
    assert api(owner).put(url(g, 1), json=body).status_code == 200
    assert count_of(db, Todo, Todo.user_id == stranger.id) == 0
    assert count_of(db, Todo, Todo.user_id == reporter.id) == 1
