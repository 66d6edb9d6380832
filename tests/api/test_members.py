"""Group and project members (GitLab's members API): direct and inherited lists, adding,
changing and removing members, and what a membership grants."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from kiln.models import Member, ProjectGroupLink
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from kiln.queries import members as member_queries
from tests.statements import count

BASE = "http://kiln.test"


class _Time:
    """Equal to any timestamp in GitLab's format (…sssZ)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", other))

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "<any time>"


ANY_TIME = _Time()


def basic(u) -> dict[str, Any]:
    return {
        "id": u.id,
        "username": u.username,
        "name": u.row.name,
        "state": "active",
        "locked": False,
        "avatar_url": None,
        "web_url": f"{BASE}/{u.username}",
    }


def entity(u, level: int, *, by=None, expires: str | None = None) -> dict[str, Any]:
    view = basic(u) | {"access_level": level, "created_at": ANY_TIME}
    if by is not None:
        view["created_by"] = basic(by)
    return view | {"expires_at": expires, "membership_state": "active"}


def levels(response) -> list[tuple[int, int]]:
    assert response.status_code == 200, response.text
    return [(m["id"], m["access_level"]) for m in response.json()]


def in_days(n: int) -> date:
    return date.today() + timedelta(days=n)


def share(db, project, group, level: int, expires_at: date | None = None) -> None:
    db.add(
        ProjectGroupLink(project_id=project.id, group_id=group.id, group_access=level, expires_at=expires_at)
    )
    db.commit()


# ------------------------------------------------------------------ listing


def test_group_members_lists_direct_members_in_the_order_they_joined(api, make):
    o, a, b = make.user(), make.user(), make.user()
    g = make.group(owners=[o])
    make.member(g, a, DEVELOPER)
    make.member(g, b, REPORTER)
    r = api(o).get(f"/groups/{g.id}/members")
    assert r.status_code == 200
    assert r.json() == [entity(o, OWNER), entity(a, DEVELOPER), entity(b, REPORTER)]
    assert (r.headers["X-Total"], r.headers["X-Page"]) == ("3", "1")


def test_member_view_has_gitlabs_keys_in_order(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).post(f"/groups/{g.id}/members", json={"user_id": u.id, "access_level": GUEST})
    assert r.status_code == 201
    assert list(r.json()) == [
        "id",
        "username",
        "name",
        "state",
        "locked",
        "avatar_url",
        "web_url",
        "access_level",
        "created_at",
        "created_by",
        "expires_at",
        "membership_state",
    ]


def test_members_by_full_path(api, make):
    o = make.user()
    g = make.group(owners=[o], path="team")
    sub = make.group(parent=g, path="core", members={o: MAINTAINER})
    p = make.project(namespace=sub, path="tool")
    assert levels(api(o).get("/groups/team%2Fcore/members")) == [(o.id, MAINTAINER)]
    assert levels(api(o).get("/projects/team%2Fcore%2Ftool/members/all")) == [(o.id, OWNER)]
    assert p.id


def test_members_need_authentication_even_for_public_groups(api, make):
    g = make.group(owners=[make.user()], visibility="public")
    r = api().get(f"/groups/{g.id}/members")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_private_group_members_are_404_to_outsiders(api, make):
    g = make.group(owners=[make.user()])
    for path in ("members", "members/all", "members/1", "members/all/1"):
        r = api(make.user()).get(f"/groups/{g.id}/{path}")
        assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"}), path


def test_private_project_members_are_404_to_outsiders(api, make):
    p = make.project(owner=make.user())
    r = api(make.user()).get(f"/projects/{p.id}/members")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_unknown_group_is_404(api, make):
    r = api(make.user()).get("/groups/no-such-group/members")
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


def test_public_project_members_are_visible_to_any_signed_in_user(api, make):
    o, d = make.user(), make.user()
    g = make.group(owners=[o], visibility="public")
    p = make.project(namespace=g, visibility="public", members={d: DEVELOPER})
    assert levels(api(make.user()).get(f"/projects/{p.id}/members")) == [(d.id, DEVELOPER)]


def test_personal_project_lists_its_owner_as_an_owner_member(api, make):
    o, d = make.user(), make.user()
    p = make.project(owner=o, members={d: DEVELOPER})
    r = api(o).get(f"/projects/{p.id}/members")
    assert r.status_code == 200
    assert r.json() == [entity(o, OWNER, by=o), entity(d, DEVELOPER)]
    assert levels(api(d).get(f"/projects/{p.id}/members/all")) == [(o.id, OWNER), (d.id, DEVELOPER)]


def test_inherited_members_show_in_all_but_not_in_direct_members(api, make):
    o, d, r_ = make.user(), make.user(), make.user()
    parent = make.group(owners=[o], members={d: DEVELOPER})
    sub = make.group(parent=parent, members={r_: REPORTER})
    assert levels(api(o).get(f"/groups/{sub.id}/members")) == [(r_.id, REPORTER)]
    assert levels(api(o).get(f"/groups/{sub.id}/members/all")) == [
        (o.id, OWNER),
        (d.id, DEVELOPER),
        (r_.id, REPORTER),
    ]


def test_all_members_shows_each_user_once_at_the_highest_level(api, make):
    o, up, down = make.user(), make.user(), make.user()
    parent = make.group(owners=[o], members={up: REPORTER, down: MAINTAINER})
    sub = make.group(parent=parent, members={up: MAINTAINER, down: GUEST})
    r = api(o).get(f"/groups/{sub.id}/members/all")
    assert levels(r) == [(o.id, OWNER), (down.id, MAINTAINER), (up.id, MAINTAINER)]
    assert r.headers["X-Total"] == "3"


def test_project_all_members_include_the_group_chain(api, make):
    o, gd, pr = make.user(), make.user(), make.user()
    g = make.group(owners=[o], members={gd: DEVELOPER})
    sub = make.group(parent=g)
    p = make.project(namespace=sub, members={pr: REPORTER, gd: GUEST})
    assert levels(api(o).get(f"/projects/{p.id}/members")) == [(pr.id, REPORTER), (gd.id, GUEST)]
    assert levels(api(o).get(f"/projects/{p.id}/members/all")) == [
        (o.id, OWNER),
        (gd.id, DEVELOPER),
        (pr.id, REPORTER),
    ]


def test_project_all_members_include_shared_groups_capped_at_the_share(api, make, db):
    o, sm, sg = make.user(), make.user(), make.user()
    g = make.group(owners=[o])
    p = make.project(namespace=g)
    s = make.group(owners=[make.user()], members={sm: MAINTAINER, sg: GUEST})
    share(db, p, s, REPORTER)
    r = api(o).get(f"/projects/{p.id}/members/all")
    shown = dict(levels(r))
    assert (shown[sm.id], shown[sg.id], shown[o.id]) == (REPORTER, GUEST, OWNER)
    assert sm.id not in dict(levels(api(o).get(f"/projects/{p.id}/members")))
    assert api(o).get(f"/projects/{p.id}/members/all/{sm.id}").json()["access_level"] == REPORTER


def test_expired_share_adds_no_members(api, make, db):
    o, sm = make.user(), make.user()
    g = make.group(owners=[o])
    p = make.project(namespace=g)
    s = make.group(owners=[make.user()], members={sm: MAINTAINER})
    share(db, p, s, DEVELOPER, expires_at=in_days(-1))
    assert sm.id not in dict(levels(api(o).get(f"/projects/{p.id}/members/all")))


def test_expired_memberships_are_not_listed(api, make):
    o, gone = make.user(), make.user()
    g = make.group(owners=[o])
    make.member(g, gone, DEVELOPER, expires_at=in_days(-1))
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]
    r = api(o).get(f"/groups/{g.id}/members/{gone.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_future_expiry_is_listed_with_its_date(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    make.member(g, u, DEVELOPER, expires_at=in_days(10))
    r = api(o).get(f"/groups/{g.id}/members/{u.id}")
    assert (r.status_code, r.json()) == (200, entity(u, DEVELOPER, expires=in_days(10).isoformat()))


def test_access_requests_are_not_members(api, make):
    o, asking = make.user(), make.user()
    g = make.group(owners=[o], visibility="public")
    make.member(g, asking, DEVELOPER, requested_at=datetime.now(UTC))
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]
    assert levels(api(o).get(f"/groups/{g.id}/members/all")) == [(o.id, OWNER)]


def test_query_matches_name_or_username(api, make):
    o = make.user()
    alice = make.user(username="alice", name="Alice Liddell")
    bob = make.user(username="bob", name="Robert")
    g = make.group(owners=[o], members={alice: DEVELOPER, bob: DEVELOPER})
    assert levels(api(o).get(f"/groups/{g.id}/members", params={"query": "LIDDELL"})) == [
        (alice.id, DEVELOPER)
    ]
    assert levels(api(o).get(f"/groups/{g.id}/members/all", params={"query": "bo"})) == [(bob.id, DEVELOPER)]


def test_user_ids_and_skip_users_filter_the_list(api, make):
    o, a, b = make.user(), make.user(), make.user()
    g = make.group(owners=[o], members={a: DEVELOPER, b: REPORTER})
    by_array = api(o).get(f"/groups/{g.id}/members?user_ids[]={a.id}&user_ids[]={b.id}")
    assert levels(by_array) == [(a.id, DEVELOPER), (b.id, REPORTER)]
    by_comma = api(o).get(f"/groups/{g.id}/members/all", params={"user_ids": f"{o.id},{b.id}"})
    assert levels(by_comma) == [(o.id, OWNER), (b.id, REPORTER)]
    skipped = api(o).get(f"/groups/{g.id}/members", params={"skip_users": f"{o.id},{a.id}"})
    assert levels(skipped) == [(b.id, REPORTER)]


def test_filtered_member_lists_keep_one_statement_whatever_the_values(api, make):
    """A filter's values are values of the kept statement: each run answers its own rows, and
    new values keep no new statement."""
    o = make.user()
    alice = make.user(username="alice", name="Alice Liddell")
    bob = make.user(username="bob", name="Robert")
    g = make.group(owners=[o], members={alice: DEVELOPER, bob: REPORTER})
    url = f"/groups/{g.id}/members"
    api(o).get(url, params={"query": "zzz", "user_ids": str(o.id), "skip_users": str(o.id)})
    kept = member_queries._listing.cache_info().currsize
    assert levels(api(o).get(url, params={"query": "liddell", "user_ids": f"{alice.id},{bob.id}"})) == [
        (alice.id, DEVELOPER)
    ]
    assert levels(api(o).get(url, params={"query": "rob", "user_ids": f"{alice.id},{bob.id}"})) == [
        (bob.id, REPORTER)
    ]
    assert levels(api(o).get(url, params={"query": "a", "skip_users": f"{o.id},{bob.id}"})) == [
        (alice.id, DEVELOPER)
    ]
    assert levels(api(o).get(url, params={"query": "rob", "skip_users": str(alice.id)})) == [
        (bob.id, REPORTER)
    ]
    assert member_queries._listing.cache_info().currsize <= kept + 2  # the two shapes above


def test_bad_user_ids_filter_is_400(api, make):
    o = make.user()
    g = make.group(owners=[o])
    r = api(o).get(f"/groups/{g.id}/members", params={"user_ids": "1,abc"})
    assert (r.status_code, r.json()) == (400, {"error": "user_ids is invalid"})


def test_members_are_paginated(api, make):
    o = make.user()
    others = [make.user() for _ in range(3)]
    g = make.group(owners=[o], members=dict.fromkeys(others, GUEST))
    r = api(o).get(f"/groups/{g.id}/members", params={"per_page": 2, "page": 2})
    assert levels(r) == [(others[1].id, GUEST), (others[2].id, GUEST)]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Prev-Page"]) == ("4", "2", "1")


# ------------------------------------------------------------------ one member


def test_get_direct_member(api, make):
    o, d = make.user(), make.user()
    g = make.group(owners=[o], members={d: DEVELOPER})
    r = api(d).get(f"/groups/{g.id}/members/{o.id}")
    assert (r.status_code, r.json()) == (200, entity(o, OWNER))


def test_get_inherited_member_only_through_all(api, make):
    o = make.user()
    parent = make.group(owners=[o])
    sub = make.group(parent=parent)
    r = api(o).get(f"/groups/{sub.id}/members/{o.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    r = api(o).get(f"/groups/{sub.id}/members/all/{o.id}")
    assert (r.status_code, r.json()) == (200, entity(o, OWNER))


def test_non_numeric_user_id_is_400(api, make):
    o = make.user()
    g = make.group(owners=[o])
    for path in ("members/abc", "members/all/abc"):
        r = api(o).get(f"/groups/{g.id}/{path}")
        assert (r.status_code, r.json()) == (400, {"error": "user_id is invalid"}), path
    r = api(o).put(f"/groups/{g.id}/members/abc", json={"access_level": 30})
    assert (r.status_code, r.json()) == (400, {"error": "user_id is invalid"})


# ------------------------------------------------------------------ adding


@pytest.mark.parametrize("body", ["json", "data"])
def test_owner_adds_a_member(api, make, body):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).post(f"/groups/{g.id}/members", **{body: {"user_id": u.id, "access_level": DEVELOPER}})
    assert (r.status_code, r.json()) == (201, entity(u, DEVELOPER, by=o))
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER), (u.id, DEVELOPER)]


def test_add_by_username(api, make):
    o, u = make.user(), make.user(username="Someone")
    p = make.project(owner=o)
    r = api(o).post(f"/projects/{p.id}/members", json={"username": "someone", "access_level": REPORTER})
    assert (r.status_code, r.json()) == (201, entity(u, REPORTER, by=o))


def test_add_with_expiry(api, make):
    o, u = make.user(), make.user()
    p = make.project(owner=o)
    when = in_days(30).isoformat()
    r = api(o).post(
        f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": GUEST, "expires_at": when}
    )
    assert (r.status_code, r.json()) == (201, entity(u, GUEST, by=o, expires=when))


def test_expiry_today_is_accepted_but_grants_nothing(api, make):
    o, u = make.user(), make.user()
    p = make.project(owner=o)
    today = date.today().isoformat()
    r = api(o).post(
        f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": GUEST, "expires_at": today}
    )
    assert (r.status_code, r.json()) == (201, entity(u, GUEST, by=o, expires=today))
    assert levels(api(o).get(f"/projects/{p.id}/members")) == [(o.id, OWNER)]
    assert api(u).get(f"/projects/{p.id}").status_code == 404


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"user_id": 5}, "access_level is missing"),
        ({"access_level": 30}, "user_id, username are missing, at least one parameter must be provided"),
        (
            {},
            "access_level is missing, user_id, username are missing, at least one parameter must be provided",
        ),
        ({"user_id": 5, "username": "x", "access_level": 30}, "user_id, username are mutually exclusive"),
        ({"user_id": 5, "access_level": 15}, "access_level does not have a valid value"),
        ({"user_id": 5, "access_level": "dev"}, "access_level is invalid"),
        ({"user_id": 5, "access_level": 30, "expires_at": "soon"}, "expires_at is invalid"),
    ],
)
def test_add_with_bad_parameters_is_400(api, make, payload, message):
    o = make.user()
    g = make.group(owners=[o])
    r = api(o).post(f"/groups/{g.id}/members", json=payload)
    assert (r.status_code, r.json()) == (400, {"error": message})


def test_add_with_past_expiry_is_a_validation_error(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).post(
        f"/groups/{g.id}/members",
        json={"user_id": u.id, "access_level": 30, "expires_at": in_days(-1).isoformat()},
    )
    assert (r.status_code, r.json()) == (400, {"message": {"expires_at": ["cannot be a date in the past"]}})
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]


@pytest.mark.parametrize("user", ["999999", "abc"])
def test_add_unknown_user_is_404(api, make, user):
    o = make.user()
    g = make.group(owners=[o])
    r = api(o).post(f"/groups/{g.id}/members", json={"user_id": user, "access_level": 30})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})
    r = api(o).post(f"/groups/{g.id}/members", json={"username": "nobody-here", "access_level": 30})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_add_existing_member_is_409(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    r = api(o).post(f"/groups/{g.id}/members", json={"user_id": u.id, "access_level": 40})
    assert (r.status_code, r.json()) == (409, {"message": "Member already exists"})


def test_adding_the_personal_namespace_owner_is_409(api, make):
    o = make.user()
    p = make.project(owner=o)
    r = api(o).post(f"/projects/{p.id}/members", json={"user_id": o.id, "access_level": 30})
    assert (r.status_code, r.json()) == (409, {"message": "Member already exists"})


def test_add_needs_authentication(api, make):
    g = make.group(owners=[make.user()], visibility="public")
    r = api().post(f"/groups/{g.id}/members", json={"user_id": 1, "access_level": 30})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_developer_cannot_add_members(api, make):
    o, d, u = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={d: DEVELOPER})
    r = api(d).post(f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": GUEST})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_outsider_cannot_add_to_a_visible_group(api, make):
    g = make.group(owners=[make.user()], visibility="public")
    outsider = make.user()
    r = api(outsider).post(f"/groups/{g.id}/members", json={"user_id": outsider.id, "access_level": 30})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_outsider_gets_404_adding_to_a_hidden_project(api, make):
    p = make.project(owner=make.user())
    outsider = make.user()
    r = api(outsider).post(f"/projects/{p.id}/members", json={"user_id": outsider.id, "access_level": 30})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_maintainer_adds_members_below_owner(api, make):
    o, m, u = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={m: MAINTAINER})
    r = api(m).post(f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": MAINTAINER})
    assert (r.status_code, r.json()) == (201, entity(u, MAINTAINER, by=m))


def test_maintainer_cannot_grant_owner(api, make):
    o, m, u = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={m: MAINTAINER})
    r = api(m).post(f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": OWNER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert u.id not in dict(levels(api(o).get(f"/projects/{p.id}/members")))


def test_owners_and_admins_grant_owner(api, make):
    o, u, v = make.user(), make.user(), make.user()
    p = make.project(owner=o)
    r = api(o).post(f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": OWNER})
    assert (r.status_code, r.json()["access_level"]) == (201, OWNER)
    r = api("root").post(f"/projects/{p.id}/members", json={"user_id": v.id, "access_level": OWNER})
    assert (r.status_code, r.json()["access_level"]) == (201, OWNER)


def test_add_several_users_at_once(api, make):
    o, a, b = make.user(), make.user(), make.user()
    g = make.group(owners=[o], members={b: GUEST})
    r = api(o).post(f"/groups/{g.id}/members", json={"user_id": f"{a.id},{b.id},999999", "access_level": 30})
    assert (r.status_code, r.json()) == (201, {"status": "success"})
    # Unknown users are skipped; existing members take the new level.
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [
        (o.id, OWNER),
        (b.id, DEVELOPER),
        (a.id, DEVELOPER),
    ]


def test_add_several_users_with_past_expiry_reports_each(api, make):
    o, a, b = make.user(), make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).post(
        f"/groups/{g.id}/members",
        json={
            "username": f"{a.username},{b.username}",
            "access_level": 30,
            "expires_at": in_days(-2).isoformat(),
        },
    )
    message = f"{a.username}: Expires at cannot be a date in the past and {b.username}: Expires at cannot be a date in the past"
    assert (r.status_code, r.json()) == (201, {"status": "error", "message": message})
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]


# ------------------------------------------------------------------ what a membership grants


def test_membership_grants_and_removal_revokes_access(api, make):
    o, u = make.user(), make.user()
    p = make.project(owner=o)
    assert api(u).get(f"/projects/{p.id}").status_code == 404
    r = api(o).post(f"/projects/{p.id}/members", json={"user_id": u.id, "access_level": REPORTER})
    assert r.status_code == 201
    r = api(u).get(f"/projects/{p.id}")
    assert (r.status_code, r.json()["id"]) == (200, p.id)
    assert api(o).delete(f"/projects/{p.id}/members/{u.id}").status_code == 204
    r = api(u).get(f"/projects/{p.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_group_membership_reaches_projects_inside(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    p = make.project(namespace=make.group(parent=g))
    assert api(u).get(f"/projects/{p.id}").status_code == 404
    assert (
        api(o).post(f"/groups/{g.id}/members", json={"user_id": u.id, "access_level": GUEST}).status_code
        == 201
    )
    assert api(u).get(f"/projects/{p.id}").status_code == 200


# ------------------------------------------------------------------ changing


def test_update_changes_level_and_expiry(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    when = in_days(5).isoformat()
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={"access_level": MAINTAINER, "expires_at": when})
    assert (r.status_code, r.json()) == (200, entity(u, MAINTAINER, expires=when))
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER), (u.id, MAINTAINER)]


def test_update_without_expiry_keeps_it_and_null_clears_it(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    make.member(g, u, GUEST, expires_at=in_days(3))
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", data={"access_level": "20"})
    assert (r.status_code, r.json()["access_level"], r.json()["expires_at"]) == (
        200,
        20,
        in_days(3).isoformat(),
    )
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={"access_level": 20, "expires_at": None})
    assert (r.status_code, r.json()["expires_at"]) == (200, None)


def test_update_needs_a_valid_access_level(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={})
    assert (r.status_code, r.json()) == (400, {"error": "access_level is missing"})
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={"access_level": 15})
    assert (r.status_code, r.json()) == (400, {"error": "access_level does not have a valid value"})


def test_update_with_past_expiry_is_a_validation_error(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={"access_level": 30, "expires_at": "2001-01-01"})
    assert (r.status_code, r.json()) == (400, {"message": {"expires_at": ["cannot be a date in the past"]}})


def test_update_of_a_non_member_is_404(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).put(f"/groups/{g.id}/members/{u.id}", json={"access_level": 30})
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_developer_cannot_change_members(api, make):
    o, d, u = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={d: DEVELOPER, u: GUEST})
    r = api(d).put(f"/projects/{p.id}/members/{u.id}", json={"access_level": REPORTER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_maintainer_cannot_promote_to_owner_or_touch_owners(api, make):
    o, m, u, own = make.user(), make.user(), make.user(), make.user()
    p = make.project(owner=o, members={m: MAINTAINER, u: GUEST, own: OWNER})
    r = api(m).put(f"/projects/{p.id}/members/{u.id}", json={"access_level": OWNER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api(m).put(f"/projects/{p.id}/members/{own.id}", json={"access_level": GUEST})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api(m).put(f"/projects/{p.id}/members/{u.id}", json={"access_level": MAINTAINER})
    assert (r.status_code, r.json()["access_level"]) == (200, MAINTAINER)


def test_last_owner_of_a_group_cannot_be_demoted(api, make):
    o = make.user()
    g = make.group(owners=[o])
    r = api(o).put(f"/groups/{g.id}/members/{o.id}", json={"access_level": MAINTAINER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api("root").put(f"/groups/{g.id}/members/{o.id}", json={"access_level": MAINTAINER})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_an_owner_can_be_demoted_while_another_remains(api, make):
    o, other = make.user(), make.user()
    g = make.group(owners=[o, other])
    r = api(o).put(f"/groups/{g.id}/members/{o.id}", json={"access_level": MAINTAINER})
    assert (r.status_code, r.json()["access_level"]) == (200, MAINTAINER)


def test_owners_of_a_parent_group_count_for_a_subgroup(api, make):
    o, sub_owner = make.user(), make.user()
    parent = make.group(owners=[o])
    sub = make.group(parent=parent, owners=[sub_owner])
    r = api(sub_owner).put(f"/groups/{sub.id}/members/{sub_owner.id}", json={"access_level": DEVELOPER})
    assert (r.status_code, r.json()["access_level"]) == (200, DEVELOPER)


def test_personal_namespace_owner_cannot_be_changed(api, make):
    o = make.user()
    p = make.project(owner=o)
    r = api("root").put(f"/projects/{p.id}/members/{o.id}", json={"access_level": GUEST})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    r = api("root").delete(f"/projects/{p.id}/members/{o.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


# ------------------------------------------------------------------ removing


def test_owner_removes_a_member(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: DEVELOPER})
    r = api(o).delete(f"/groups/{g.id}/members/{u.id}")
    assert (r.status_code, r.content) == (204, b"")
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]


def test_remove_accepts_gitlabs_flags(api, make):
    o, u = make.user(), make.user()
    p = make.project(owner=o, members={u: DEVELOPER})
    r = api(o).delete(f"/projects/{p.id}/members/{u.id}", params={"unassign_issuables": "true"})
    assert r.status_code == 204


def test_remove_of_a_non_member_is_404(api, make):
    o, u = make.user(), make.user()
    g = make.group(owners=[o])
    r = api(o).delete(f"/groups/{g.id}/members/{u.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_last_owner_cannot_be_removed_even_by_an_admin(api, make):
    o, d = make.user(), make.user()
    g = make.group(owners=[o], members={d: DEVELOPER})
    r = api("root").delete(f"/groups/{g.id}/members/{o.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER), (d.id, DEVELOPER)]


def test_a_member_can_leave(api, make):
    o, d = make.user(), make.user()
    g = make.group(owners=[o], members={d: DEVELOPER})
    assert api(d).delete(f"/groups/{g.id}/members/{d.id}").status_code == 204
    assert levels(api(o).get(f"/groups/{g.id}/members")) == [(o.id, OWNER)]


def test_the_last_owner_cannot_leave(api, make):
    o = make.user()
    g = make.group(owners=[o])
    r = api(o).delete(f"/groups/{g.id}/members/{o.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_an_owner_can_leave_when_another_owner_remains(api, make):
    o, other = make.user(), make.user()
    g = make.group(owners=[o, other])
    assert api(o).delete(f"/groups/{g.id}/members/{o.id}").status_code == 204
    assert levels(api(other).get(f"/groups/{g.id}/members")) == [(other.id, OWNER)]


def test_developer_cannot_remove_others(api, make):
    o, d, u = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={d: DEVELOPER, u: GUEST})
    r = api(d).delete(f"/projects/{p.id}/members/{u.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_maintainer_cannot_remove_an_owner(api, make):
    o, m, own = make.user(), make.user(), make.user()
    p = make.project(owner=o, members={m: MAINTAINER, own: OWNER})
    r = api(m).delete(f"/projects/{p.id}/members/{own.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_removing_a_group_member_removes_their_memberships_inside(api, make, db):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    sub = make.group(parent=g, members={u: DEVELOPER})
    p = make.project(namespace=sub, members={u: REPORTER})
    outside = make.project(owner=o, members={u: REPORTER})
    assert api(o).delete(f"/groups/{g.id}/members/{u.id}").status_code == 204
    remaining = {(m.namespace_id, m.project_id) for m in db.query(Member).filter_by(user_id=u.id)}
    assert remaining == {(None, outside.id)}
    assert api(u).get(f"/projects/{p.id}").status_code == 404


def test_skip_subresources_keeps_memberships_inside(api, make, db):
    o, u = make.user(), make.user()
    g = make.group(owners=[o], members={u: GUEST})
    sub = make.group(parent=g, members={u: DEVELOPER})
    r = api(o).delete(f"/groups/{g.id}/members/{u.id}", params={"skip_subresources": "true"})
    assert r.status_code == 204
    remaining = {(m.namespace_id, m.access_level) for m in db.query(Member).filter_by(user_id=u.id)}
    assert remaining == {(sub.id, DEVELOPER)}


# ------------------------------------------------------------------ cost


def test_member_lists_cost_the_same_for_few_and_many_members(api, make, db, runtime):
    o = make.user()
    g = make.group(owners=[o])
    p = make.project(namespace=make.group(parent=g))
    shared = make.group(owners=[make.user()])
    share(db, p, shared, REPORTER)

    def add(n: int) -> None:
        for _ in range(n):
            u = make.user()
            make.member(g, u, GUEST)
            make.member(p, u, REPORTER, created_by_id=o.id)
            make.member(shared, make.user(), DEVELOPER)
            make.member(p, make.user(), DEVELOPER, requested_at=datetime.now(UTC))

    def cost() -> tuple[int, int, int]:
        return (
            count(runtime, lambda: api(o).get(f"/projects/{p.id}/members/all?per_page=2")),
            count(runtime, lambda: api(o).get(f"/groups/{g.id}/members?per_page=2")),
            count(runtime, lambda: api(o).get(f"/projects/{p.id}/access_requests?per_page=1")),
        )

    add(2)
    few = cost()
    add(15)
    assert cost() == few
