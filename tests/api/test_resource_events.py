"""Resource events: the history of an issue's labels, milestone, state and weight (and an
epic's labels), oldest first, paginated, readable by whoever may read the issue or epic."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.models.namespaces import GUEST, REPORTER
from kiln.services import resource_events
from tests.statements import statements


def as_actor(db, user) -> Actor:
    """Who the shared writes record as the event's user (they read only its id)."""
    return SimpleNamespace(id=user.id)  # type: ignore[return-value]


@pytest.fixture
def setup(make, db):
    reporter = make.user()
    project = make.project(members={reporter: REPORTER})
    issue = make.issue(project, reporter)
    return reporter, project, issue


def events_url(project, issue, kind: str, event_id: int | None = None) -> str:
    url = f"/projects/{project.id}/issues/{issue.iid}/resource_{kind}_events"
    return url if event_id is None else f"{url}/{event_id}"


def test_label_events_show_the_label_the_user_and_the_action(api, db, make, setup):
    reporter, project, issue = setup
    bug = make.label(project=project, title="bug", color="#FF0000", description="Broken")
    with transaction(db):
        resource_events.labels_changed(db, as_actor(db, reporter), "Issue", issue.id, added=[bug.id])
        resource_events.labels_changed(db, as_actor(db, reporter), "Issue", issue.id, removed=[bug.id])
    r = api(reporter).get(events_url(project, issue, "label"))
    assert r.status_code == 200, r.text
    listed = r.json()
    assert [e["action"] for e in listed] == ["add", "remove"]
    first = listed[0]
    assert first["user"]["username"] == reporter.username
    assert (first["resource_type"], first["resource_id"]) == ("Issue", issue.id)
    assert first["label"]["id"] == bug.id
    assert first["label"]["name"] == "bug"
    assert first["label"]["color"] == "#FF0000"
    assert first["label"]["description"] == "Broken"
    assert first["created_at"].endswith("Z")
    one = api(reporter).get(events_url(project, issue, "label", first["id"]))
    assert one.json() == first


def test_milestone_events_show_the_milestone_and_the_issues_state(api, db, make, setup):
    reporter, project, issue = setup
    m = make.milestone(project=project, title="v1")
    with transaction(db):
        resource_events.milestone_changed(db, as_actor(db, reporter), "Issue", issue.id, m.id, None, "opened")
        resource_events.milestone_changed(db, as_actor(db, reporter), "Issue", issue.id, None, m.id, "opened")
    listed = api(reporter).get(events_url(project, issue, "milestone")).json()
    assert [(e["action"], e["state"]) for e in listed] == [("add", "opened"), ("remove", "opened")]
    assert listed[0]["milestone"]["title"] == "v1"
    assert listed[0]["milestone"]["iid"] == m.iid
    assert listed[0]["milestone"]["web_url"].endswith(f"/-/milestones/{m.iid}")


def test_state_and_weight_events(api, db, setup):
    reporter, project, issue = setup
    with transaction(db):
        resource_events.state_changed(db, as_actor(db, reporter), "Issue", issue.id, "closed")
        resource_events.state_changed(db, as_actor(db, reporter), "Issue", issue.id, "reopened")
        resource_events.weight_changed(db, as_actor(db, reporter), "Issue", issue.id, 3)
    states = api(reporter).get(events_url(project, issue, "state")).json()
    assert [e["state"] for e in states] == ["closed", "reopened"]
    assert states[0]["resource_type"] == "Issue"
    weights = api(reporter).get(events_url(project, issue, "weight")).json()
    assert [(w["issue_id"], w["weight"]) for w in weights] == [(issue.id, 3)]
    one = api(reporter).get(events_url(project, issue, "weight", weights[0]["id"]))
    assert (one.status_code, one.json()) == (200, weights[0])
    assert api(reporter).get(events_url(project, issue, "label")).json() == []


def test_events_are_paginated_oldest_first(api, db, make, setup):
    reporter, project, issue = setup
    labels = [make.label(project=project) for _ in range(3)]
    with transaction(db):
        for label in labels:
            resource_events.labels_changed(db, None, "Issue", issue.id, added=[label.id])
    r = api(reporter).get(events_url(project, issue, "label"), params={"per_page": 2})
    assert [e["label"]["id"] for e in r.json()] == [labels[0].id, labels[1].id]
    assert r.headers["X-Total"] == "3"
    assert r.json()[0]["user"] is None
    r = api(reporter).get(events_url(project, issue, "label"), params={"per_page": 2, "page": 2})
    assert [e["label"]["id"] for e in r.json()] == [labels[2].id]


def test_another_issues_event_is_not_found(api, db, make, setup):
    reporter, project, issue = setup
    other = make.issue(project, reporter)
    with transaction(db):
        resource_events.state_changed(db, None, "Issue", other.id, "closed")
    event_id = api(reporter).get(events_url(project, other, "state")).json()[0]["id"]
    r = api(reporter).get(events_url(project, issue, "state", event_id))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_hidden_issues_and_projects_are_not_found(api, db, make, setup):
    reporter, project, issue = setup
    stranger = make.user()
    r = api(stranger).get(events_url(project, issue, "label"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    secret = make.issue(project, reporter, confidential=True)
    guest = make.user()
    make.member(project, guest, GUEST)
    with transaction(db):
        resource_events.state_changed(db, None, "Issue", secret.id, "closed")
        resource_events.state_changed(db, None, "Issue", issue.id, "closed")
    r = api(guest).get(events_url(project, secret, "state"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert [e["state"] for e in api(reporter).get(events_url(project, secret, "state")).json()] == ["closed"]
    r = api(guest).get(events_url(project, issue, "state"))
    assert (r.status_code, [e["resource_id"] for e in r.json()]) == (200, [issue.id])


def test_a_public_issues_events_are_open_to_anonymous_callers(api, db, make):
    owner = make.user()
    public = make.project(visibility="public", members={owner: REPORTER})
    issue = make.issue(public, owner)
    label = make.label(project=public, title="seen")
    with transaction(db):
        resource_events.labels_changed(db, as_actor(db, owner), "Issue", issue.id, added=[label.id])
    r = api().get(events_url(public, issue, "label"))
    assert r.status_code == 200
    assert [(e["action"], e["label"]["name"]) for e in r.json()] == [("add", "seen")]


def test_bad_ids_are_parameter_errors(api, setup):
    reporter, project, issue = setup
    r = api(reporter).get(f"/projects/{project.id}/issues/x/resource_label_events")
    assert (r.status_code, r.json()) == (400, {"error": "issue_iid is invalid"})
    r = api(reporter).get(events_url(project, issue, "label") + "/x")
    assert (r.status_code, r.json()) == (400, {"error": "event_id is invalid"})


def test_epic_label_events_are_reached_by_the_epics_id(api, db, make):
    owner = make.user()
    group = make.group(owners=[owner])
    make.epic(group, owner)  # another epic first: its iid and id differ from the one read
    epic = make.epic(group, owner)
    label = make.label(group=group, title="epic-label")
    with transaction(db):
        resource_events.labels_changed(db, as_actor(db, owner), "Epic", epic.id, added=[label.id])
    base = f"/groups/{group.id}/epics/{epic.id}/resource_label_events"
    r = api(owner).get(base)
    assert r.status_code == 200, r.text
    [event] = r.json()
    assert (event["resource_type"], event["resource_id"], event["label"]["name"]) == (
        "Epic",
        epic.id,
        "epic-label",
    )
    assert api(owner).get(f"{base}/{event['id']}").json() == event
    stranger = make.user()
    r = api(stranger).get(base)
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


@pytest.mark.parametrize("kind", ["label", "milestone", "state", "weight"])
def test_a_page_of_events_costs_the_same_for_one_and_for_many(api, db, make, runtime, setup, kind):
    reporter, project, issue = setup
    authors = [make.user() for _ in range(4)]

    def add(n: int) -> None:
        with transaction(db):
            for i in range(n):
                actor = as_actor(db, authors[i % len(authors)])
                if kind == "label":
                    resource_events.labels_changed(
                        db, actor, "Issue", issue.id, added=[make.label(project=project).id]
                    )
                elif kind == "milestone":
                    m = make.milestone(project=project)
                    resource_events.milestone_changed(db, actor, "Issue", issue.id, m.id, None, "opened")
                elif kind == "state":
                    resource_events.state_changed(db, actor, "Issue", issue.id, "closed")
                else:
                    resource_events.weight_changed(db, actor, "Issue", issue.id, i)

    def call():
        return api(reporter).get(events_url(project, issue, kind))

    add(1)
    one = statements(runtime, call)
    add(7)
    assert len(call().json()) == 8
    many = statements(runtime, call)
    assert len(one) == len(many)


def test_an_event_id_past_any_row_is_not_found(api, setup):
    reporter, project, issue = setup
    assert api(reporter).get(events_url(project, issue, "state", 2**63 - 1)).status_code == 404
