"""What merge requests share with issues besides notes: emoji reactions on them and on their
notes, their label, milestone and state (merged too) events, the to-do a caller sets on one,
and time tracking (estimate, time spent, time stats)."""

from __future__ import annotations

from types import SimpleNamespace

from sqlalchemy import select

from kiln.db import transaction
from kiln.models import AwardEmoji, Event, Member, MergeRequest, Note, Timelog, Todo
from kiln.models.namespaces import GUEST, REPORTER
from kiln.models.todos import DONE, MARKED, PENDING
from kiln.services import resource_events
from tests.merge_requests import public_mr
from tests.statements import count


def mr_url(project, mr, what: str) -> str:
    return f"/projects/{project.id}/merge_requests/{mr.iid}/{what}"


# ----------------------------------------------------------------------------- emoji


def test_reacting_to_a_merge_request_counts_its_thumbs(api, make, db):
    owner, p, mr = public_mr(make)
    fan = make.user()
    r = api(fan).post(mr_url(p, mr, "award_emoji"), json={"name": "thumbsup"})
    assert r.status_code == 201, r.text
    award = r.json()
    assert (award["name"], award["awardable_type"], award["awardable_id"], award["user"]["id"]) == (
        "thumbsup",
        "MergeRequest",
        mr.id,
        fan.id,
    )
    assert db.scalar(select(MergeRequest.upvotes).where(MergeRequest.id == mr.id)) == 1
    assert [a["id"] for a in api().get(mr_url(p, mr, "award_emoji")).json()] == [award["id"]]
    assert api(fan).post(mr_url(p, mr, "award_emoji"), json={"name": "thumbsup"}).status_code == 404
    assert api(owner).delete(mr_url(p, mr, f"award_emoji/{award['id']}")).status_code == 401
    assert api(fan).delete(mr_url(p, mr, f"award_emoji/{award['id']}")).status_code == 204
    db.expire_all()
    assert db.scalar(select(MergeRequest.upvotes).where(MergeRequest.id == mr.id)) == 0


def test_reacting_to_a_merge_requests_note(api, make, db):
    owner, p, mr = public_mr(make)
    note = api(owner).post(mr_url(p, mr, "notes"), json={"body": "ship it"}).json()
    url = mr_url(p, mr, f"notes/{note['id']}/award_emoji")
    r = api(owner).post(url, json={"name": "rocket"})
    assert r.status_code == 201, r.text
    assert (r.json()["awardable_type"], r.json()["awardable_id"]) == ("Note", note["id"])
    assert [a["name"] for a in api().get(url).json()] == ["rocket"]
    # A reaction on a note leaves the merge request's own counts alone.
    assert db.scalar(select(MergeRequest.upvotes).where(MergeRequest.id == mr.id)) == 0


def test_a_guest_of_a_private_project_may_not_react(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    guest = make.user()
    make.member(p, guest, GUEST)
    assert api(guest).post(mr_url(p, mr, "award_emoji"), json={"name": "thumbsup"}).status_code == 403
    assert db.scalars(select(AwardEmoji).where(AwardEmoji.awardable_id == mr.id)).all() == []


# ----------------------------------------------------------------------------- resource events


def test_label_milestone_and_state_events_of_a_merge_request(api, make, db):
    owner, p, mr = public_mr(make)
    bug = make.label(project=p, title="bug")
    v1 = make.milestone(project=p, title="v1")
    who = SimpleNamespace(id=owner.id)
    with transaction(db):
        resource_events.labels_changed(db, who, "MergeRequest", mr.id, added=[bug.id])
        resource_events.milestone_changed(db, who, "MergeRequest", mr.id, v1.id, None, "opened")
        resource_events.state_changed(db, who, "MergeRequest", mr.id, "closed")
        resource_events.state_changed(db, who, "MergeRequest", mr.id, "reopened")
        resource_events.state_changed(db, who, "MergeRequest", mr.id, "merged")
    [label] = api().get(mr_url(p, mr, "resource_label_events")).json()
    assert (label["resource_type"], label["resource_id"], label["label"]["name"], label["action"]) == (
        "MergeRequest",
        mr.id,
        "bug",
        "add",
    )
    [milestone] = api().get(mr_url(p, mr, "resource_milestone_events")).json()
    assert (milestone["milestone"]["title"], milestone["action"]) == ("v1", "add")
    states = api().get(mr_url(p, mr, "resource_state_events")).json()
    assert [(s["state"], s["resource_type"], s["user"]["id"]) for s in states] == [
        ("closed", "MergeRequest", owner.id),
        ("reopened", "MergeRequest", owner.id),
        ("merged", "MergeRequest", owner.id),
    ]
    one = api().get(mr_url(p, mr, f"resource_state_events/{states[2]['id']}")).json()
    assert one == states[2]
    assert api().get(mr_url(p, mr, "resource_state_events/999999")).status_code == 404


def test_an_issues_events_are_not_a_merge_requests(api, make, db):
    owner, p, mr = public_mr(make)
    issue = make.issue(p, owner)
    with transaction(db):
        resource_events.state_changed(db, SimpleNamespace(id=owner.id), "Issue", issue.id, "closed")
    assert api().get(mr_url(p, mr, "resource_state_events")).json() == []


def test_merge_request_events_are_hidden_with_their_project(api, make):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    assert api(make.user()).get(mr_url(p, mr, "resource_state_events")).status_code == 404


# ----------------------------------------------------------------------------- to-dos


def test_a_user_marks_a_merge_request_as_a_todo_once(api, make, db):
    _owner, p, mr = public_mr(make, title="Add the thing")
    me = make.user()
    r = api(me).post(mr_url(p, mr, "todo"))
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["action_name"], body["state"], body["target_type"], body["body"]) == (
        "marked",
        "pending",
        "MergeRequest",
        "Add the thing",
    )
    assert (body["target"]["id"], body["target"]["iid"], body["target"]["title"]) == (
        mr.id,
        mr.iid,
        "Add the thing",
    )
    assert body["target_url"].endswith(f"/-/merge_requests/{mr.iid}")
    assert (body["project"]["id"], body["author"]["id"]) == (p.id, me.id)
    assert api(me).post(mr_url(p, mr, "todo")).status_code == 304
    rows = db.scalars(select(Todo).where(Todo.user_id == me.id)).all()
    assert [(t.action, t.target_type, t.target_id, t.state) for t in rows] == [
        (MARKED, "MergeRequest", mr.id, PENDING)
    ]
    [listed] = api(me).get("/todos").json()
    assert listed["target"]["iid"] == mr.iid
    api(me).post(f"/todos/{body['id']}/mark_as_done")
    assert api(me).post(mr_url(p, mr, "todo")).status_code == 201
    rows = db.scalars(select(Todo.state).where(Todo.user_id == me.id).order_by(Todo.id)).all()
    assert rows == [DONE, PENDING]


def test_a_merge_request_todo_needs_sight_of_it(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    r = api(make.user()).post(mr_url(p, mr, "todo"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    r = api(owner).post(f"/projects/{p.id}/merge_requests/999/todo")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})
    assert db.scalars(select(Todo)).all() == []


def test_a_todo_whose_merge_request_the_user_may_no_longer_read_is_left_out(api, make, db):
    owner = make.user()
    me = make.user()
    p = make.project_with_repository(owner=owner, visibility="private", members={me: REPORTER})
    mr = make.merge_request(p, owner)
    assert api(me).post(mr_url(p, mr, "todo")).status_code == 201
    assert len(api(me).get("/todos").json()) == 1
    with transaction(db):
        for m in db.scalars(select(Member).where(Member.user_id == me.id)):
            db.delete(m)
    assert api(me).get("/todos").json() == []


def test_the_todo_list_costs_the_same_for_one_merge_request_and_for_many(api, make, runtime):
    me = make.user()
    p = make.project_with_repository(owner=me, visibility="public")
    label = make.label(project=p)

    def add() -> None:
        mr = make.merge_request(p, make.user(), labels=[label], assignees=[make.user()])
        assert api(me).post(mr_url(p, mr, "todo")).status_code == 201

    add()
    one = count(runtime, lambda: api(me).get("/todos"))
    for _ in range(4):
        add()
    assert len(api(me).get("/todos").json()) == 5
    assert count(runtime, lambda: api(me).get("/todos")) == one


# ----------------------------------------------------------------------------- time tracking


def test_estimating_a_merge_request(api, make, db):
    owner, p, mr = public_mr(make)
    r = api(owner).post(mr_url(p, mr, "time_estimate"), json={"duration": "3h30m"})
    assert (r.status_code, r.json()) == (
        200,
        {
            "time_estimate": 12600,
            "total_time_spent": 0,
            "human_time_estimate": "3h 30m",
            "human_total_time_spent": None,
        },
    )
    assert api().get(mr_url(p, mr, "time_stats")).json()["time_estimate"] == 12600
    notes = db.scalars(
        select(Note.body).where(Note.noteable_type == "MergeRequest", Note.noteable_id == mr.id, Note.system)
    ).all()
    assert notes == ["changed time estimate to 3h 30m"]
    event = db.scalars(
        select(Event)
        .where(Event.target_type == "MergeRequest", Event.target_id == mr.id)
        .order_by(Event.id.desc())
    ).first()
    assert event.data["hook"] == "merge_request"
    assert event.data["changes"]["time_estimate"] == {"previous": 0, "current": 12600}
    r = api(owner).post(mr_url(p, mr, "reset_time_estimate"))
    assert (r.status_code, r.json()["time_estimate"]) == (200, 0)


def test_spending_time_on_a_merge_request(api, make, db):
    owner, p, mr = public_mr(make)
    r = api(owner).post(mr_url(p, mr, "add_spent_time"), json={"duration": "1h", "summary": "review"})
    assert (r.status_code, r.json()["total_time_spent"], r.json()["human_total_time_spent"]) == (
        201,
        3600,
        "1h",
    )
    api(owner).post(mr_url(p, mr, "add_spent_time"), json={"duration": "-30m"})
    assert api().get(mr_url(p, mr, "time_stats")).json()["total_time_spent"] == 1800
    logs = db.scalars(
        select(Timelog.time_spent).where(Timelog.target_type == "MergeRequest", Timelog.target_id == mr.id)
    ).all()
    assert sorted(logs) == [-1800, 3600]
    r = api(owner).post(mr_url(p, mr, "reset_spent_time"))
    assert (r.status_code, r.json()["total_time_spent"]) == (200, 0)
    r = api(owner).post(mr_url(p, mr, "add_spent_time"), json={"duration": "-1h"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"base": ["Time to subtract exceeds the total time spent"]}},
    )


def test_tracking_time_on_a_merge_request_takes_a_reporter(api, make, db):
    _owner, p, mr = public_mr(make)
    someone, reporter = make.user(), make.user()
    make.member(p, reporter, REPORTER)
    assert api(someone).post(mr_url(p, mr, "time_estimate"), json={"duration": "1h"}).status_code == 403
    assert api(someone).post(mr_url(p, mr, "add_spent_time"), json={"duration": "1h"}).status_code == 403
    r = api(someone).get(mr_url(p, mr, "time_stats"))
    assert (r.status_code, r.json()["time_estimate"], r.json()["total_time_spent"]) == (200, 0, 0)
    assert db.scalars(select(Timelog)).all() == []
    assert api(reporter).post(mr_url(p, mr, "time_estimate"), json={"duration": "1h"}).status_code == 200
    assert db.scalar(select(MergeRequest.time_estimate).where(MergeRequest.id == mr.id)) == 3600
