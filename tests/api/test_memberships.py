"""GET /users/:id/memberships: the groups and projects a user is a member of (administrators
only), filtered by `type`, paginated, in a constant number of statements."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.statements import count


def test_memberships_of_groups_and_projects(api, make):
    u = make.user()
    group = make.group(path="mship-group", name="Membership Group", members={u: 30})
    project = make.project(path="mship-project", name="Membership Project", members={u: 40})
    r = api("root").get(f"/users/{u.id}/memberships")
    assert r.status_code == 200
    assert r.json() == [
        {
            "source_id": group.id,
            "source_name": "Membership Group",
            "source_type": "Namespace",
            "access_level": 30,
        },
        {
            "source_id": project.id,
            "source_name": "Membership Project",
            "source_type": "Project",
            "access_level": 40,
        },
    ]


def test_a_project_of_the_users_own_namespace_is_an_owner_membership(api, make):
    u = make.user()
    own = api(u).post("/projects", json={"name": "Mine"}).json()
    expected = {"source_id": own["id"], "source_name": "Mine", "source_type": "Project", "access_level": 50}
    assert api("root").get(f"/users/{u.id}/memberships").json() == [expected]
    assert api("root").get(f"/users/{u.id}/memberships", params={"type": "Project"}).json() == [expected]
    assert api("root").get(f"/users/{u.id}/memberships", params={"type": "Namespace"}).json() == []


def test_memberships_filtered_by_type(api, make):
    u = make.user()
    group = make.group(members={u: 10})
    project = make.project(members={u: 20})
    projects = api("root").get(f"/users/{u.id}/memberships", params={"type": "Project"}).json()
    groups = api("root").get(f"/users/{u.id}/memberships", params={"type": "Namespace"}).json()
    assert [m["source_id"] for m in projects] == [project.id]
    assert [m["source_id"] for m in groups] == [group.id]


def test_memberships_type_must_be_project_or_namespace(api, make):
    u = make.user()
    r = api("root").get(f"/users/{u.id}/memberships", params={"type": "Group"})
    assert r.status_code == 400
    assert r.json() == {"error": "type does not have a valid value"}


def test_access_requests_are_no_memberships(api, make):
    u = make.user()
    group = make.group()
    make.member(group, u, 10, requested_at=datetime.now(UTC))
    assert api("root").get(f"/users/{u.id}/memberships").json() == []


def test_memberships_are_for_administrators(api, make):
    u = make.user()
    r = api(u).get(f"/users/{u.id}/memberships")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_memberships_of_an_unknown_user_is_404(api):
    r = api("root").get("/users/999999/memberships")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_memberships_are_paginated(api, make):
    u = make.user()
    groups = [make.group(members={u: 30}) for _ in range(3)]
    r = api("root").get(f"/users/{u.id}/memberships", params={"per_page": 2, "page": 2})
    assert [m["source_id"] for m in r.json()] == [groups[2].id]
    assert r.headers["x-total"] == "3"
    assert r.headers["x-page"] == "2"


def test_memberships_cost_the_same_for_few_and_many(api, make, runtime):
    u = make.user()
    make.group(members={u: 30})
    make.project(members={u: 30})
    # A page with more after it: its count is one of the statements either way.
    path = f"/users/{u.id}/memberships?per_page=1"
    few = count(runtime, lambda: api("root").get(path))
    # And a page holding them all: its rows grow with the memberships.
    whole = f"/users/{u.id}/memberships?per_page=50"
    few_whole = count(runtime, lambda: api("root").get(whole))
    assert len(api("root").get(whole).json()) == 2
    for _ in range(10):
        make.group(members={u: 30})
        make.project(members={u: 30})
    assert count(runtime, lambda: api("root").get(path)) == few <= 4
    assert count(runtime, lambda: api("root").get(whole)) == few_whole <= 4
    assert len(api("root").get(whole).json()) == 22
