"""Access requests to groups and projects: asking, listing, approving, denying, withdrawing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from tests.api.test_members import ANY_TIME, basic, entity, levels


def requester(u) -> dict:
    return basic(u) | {"created_at": ANY_TIME, "requested_at": ANY_TIME}


def public_group(make, **kw):
    owner = make.user()
    return owner, make.group(owners=[owner], visibility="public", **kw)


def public_project(make, **kw):
    owner = make.user()
    return owner, make.project(owner=owner, visibility="public", **kw)


def ask(make, source, user) -> None:
    make.member(source, user, DEVELOPER, requested_at=datetime.now(UTC))


# ------------------------------------------------------------------ asking


@pytest.mark.parametrize("kind", ["groups", "projects"])
def test_request_access_answers_201_with_the_requester(api, make, kind):
    owner, source = public_group(make) if kind == "groups" else public_project(make)
    u = make.user()
    r = api(u).post(f"/{kind}/{source.id}/access_requests")
    assert (r.status_code, r.json()) == (201, requester(u))
    assert list(r.json())[-2:] == ["created_at", "requested_at"]
    r = api(owner).get(f"/{kind}/{source.id}/access_requests")
    assert (r.status_code, r.json()) == (200, [requester(u)])


def test_request_access_needs_authentication(api, make):
    _, g = public_group(make)
    r = api().post(f"/groups/{g.id}/access_requests")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_request_access_when_disabled_is_403(api, make):
    _, g = public_group(make, request_access_enabled=False)
    _, p = public_project(make, request_access_enabled=False)
    u = make.user()
    for path in (f"/groups/{g.id}", f"/projects/{p.id}"):
        r = api(u).post(f"{path}/access_requests")
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"}), path


def test_request_access_to_a_hidden_project_is_404(api, make):
    p = make.project(owner=make.user())
    r = api(make.user()).post(f"/projects/{p.id}/access_requests")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_members_cannot_request_access(api, make):
    owner, g = public_group(make)
    d = make.user()
    make.member(g, d, DEVELOPER)
    r = api(d).post(f"/groups/{g.id}/access_requests")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api(owner).post(f"/groups/{g.id}/access_requests")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_inherited_members_cannot_request_access(api, make):
    owner, g = public_group(make)
    p = make.project(namespace=g, visibility="public")
    r = api(owner).post(f"/projects/{p.id}/access_requests")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


@pytest.mark.parametrize("kind", ["groups", "projects"])
def test_asking_twice_is_403(api, make, kind):
    _, source = public_group(make) if kind == "groups" else public_project(make)
    u = make.user()
    assert api(u).post(f"/{kind}/{source.id}/access_requests").status_code == 201
    r = api(u).post(f"/{kind}/{source.id}/access_requests")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_a_request_grants_nothing(api, make):
    owner, g = public_group(make)
    inside = make.project(namespace=g, visibility="private")
    u = make.user()
    assert api(u).post(f"/groups/{g.id}/access_requests").status_code == 201
    r = api(u).get(f"/projects/{inside.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert levels(api(owner).get(f"/groups/{g.id}/members/all")) == [(owner.id, OWNER)]


# ------------------------------------------------------------------ listing


def test_access_requests_are_listed_oldest_first_and_paginated(api, make):
    owner, p = public_project(make)
    a, b, c = make.user(), make.user(), make.user()
    for u in (a, b, c):
        ask(make, p, u)
    r = api(owner).get(f"/projects/{p.id}/access_requests", params={"per_page": 2})
    assert (r.status_code, r.json()) == (200, [requester(a), requester(b)])
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")


def test_developers_cannot_list_access_requests(api, make):
    _owner, p = public_project(make)
    d = make.user()
    make.member(p, d, DEVELOPER)
    r = api(d).get(f"/projects/{p.id}/access_requests")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_access_requests_of_a_hidden_group_are_404(api, make):
    g = make.group(owners=[make.user()])
    r = api(make.user()).get(f"/groups/{g.id}/access_requests")
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


# ------------------------------------------------------------------ approving


@pytest.mark.parametrize("kind", ["groups", "projects"])
def test_approve_makes_a_developer_by_default(api, make, kind):
    owner, source = public_group(make) if kind == "groups" else public_project(make)
    u = make.user()
    ask(make, source, u)
    r = api(owner).put(f"/{kind}/{source.id}/access_requests/{u.id}/approve")
    assert (r.status_code, r.json()) == (201, entity(u, DEVELOPER, by=owner))
    assert api(owner).get(f"/{kind}/{source.id}/access_requests").json() == []
    assert dict(levels(api(owner).get(f"/{kind}/{source.id}/members")))[u.id] == DEVELOPER


def test_approve_with_a_level(api, make):
    owner, g = public_group(make)
    u = make.user()
    ask(make, g, u)
    r = api(owner).put(f"/groups/{g.id}/access_requests/{u.id}/approve", json={"access_level": REPORTER})
    assert (r.status_code, r.json()) == (201, entity(u, REPORTER, by=owner))


def test_approved_member_gains_access(api, make):
    owner, g = public_group(make)
    inside = make.project(namespace=g, visibility="private")
    u = make.user()
    ask(make, g, u)
    assert api(owner).put(f"/groups/{g.id}/access_requests/{u.id}/approve").status_code == 201
    assert api(u).get(f"/projects/{inside.id}").status_code == 200


def test_approve_with_an_invalid_level_is_400(api, make):
    owner, g = public_group(make)
    u = make.user()
    ask(make, g, u)
    r = api(owner).put(f"/groups/{g.id}/access_requests/{u.id}/approve", json={"access_level": 35})
    assert (r.status_code, r.json()) == (400, {"error": "access_level does not have a valid value"})


def test_approve_without_a_request_is_404(api, make):
    owner, g = public_group(make)
    member = make.user()
    make.member(g, member, GUEST)
    for user_id in (member.id, 999999):
        r = api(owner).put(f"/groups/{g.id}/access_requests/{user_id}/approve")
        assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_developers_cannot_approve(api, make):
    _owner, p = public_project(make)
    d, u = make.user(), make.user()
    make.member(p, d, DEVELOPER)
    ask(make, p, u)
    r = api(d).put(f"/projects/{p.id}/access_requests/{u.id}/approve")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_maintainer_cannot_approve_as_owner(api, make):
    _owner, p = public_project(make)
    m, u = make.user(), make.user()
    make.member(p, m, MAINTAINER)
    ask(make, p, u)
    r = api(m).put(f"/projects/{p.id}/access_requests/{u.id}/approve", json={"access_level": OWNER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api(m).put(f"/projects/{p.id}/access_requests/{u.id}/approve", json={"access_level": MAINTAINER})
    assert (r.status_code, r.json()) == (201, entity(u, MAINTAINER, by=m))


def test_adding_a_requester_as_member_turns_the_request_into_membership(api, make):
    owner, g = public_group(make)
    u = make.user()
    ask(make, g, u)
    r = api(owner).post(f"/groups/{g.id}/members", json={"user_id": u.id, "access_level": GUEST})
    assert (r.status_code, r.json()) == (201, entity(u, GUEST, by=owner))
    assert api(owner).get(f"/groups/{g.id}/access_requests").json() == []


# ------------------------------------------------------------------ denying and withdrawing


def test_deny_removes_the_request(api, make):
    owner, g = public_group(make)
    u = make.user()
    ask(make, g, u)
    r = api(owner).delete(f"/groups/{g.id}/access_requests/{u.id}")
    assert (r.status_code, r.content) == (204, b"")
    assert api(owner).get(f"/groups/{g.id}/access_requests").json() == []
    assert levels(api(owner).get(f"/groups/{g.id}/members")) == [(owner.id, OWNER)]
    # Once denied, the user may ask again.
    assert api(u).post(f"/groups/{g.id}/access_requests").status_code == 201


def test_requester_can_withdraw_their_request(api, make):
    owner, p = public_project(make)
    u = make.user()
    ask(make, p, u)
    assert api(u).delete(f"/projects/{p.id}/access_requests/{u.id}").status_code == 204
    assert api(owner).get(f"/projects/{p.id}/access_requests").json() == []


def test_others_cannot_deny_a_request(api, make):
    _owner, p = public_project(make)
    u, other = make.user(), make.user()
    ask(make, p, u)
    r = api(other).delete(f"/projects/{p.id}/access_requests/{u.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_deny_without_a_request_is_404(api, make):
    owner, p = public_project(make)
    r = api(owner).delete(f"/projects/{p.id}/access_requests/{make.user().id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_deny_leaves_members_alone(api, make):
    owner, g = public_group(make)
    d = make.user()
    make.member(g, d, DEVELOPER)
    r = api(owner).delete(f"/groups/{g.id}/access_requests/{d.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    assert dict(levels(api(owner).get(f"/groups/{g.id}/members")))[d.id] == DEVELOPER
