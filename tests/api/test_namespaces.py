"""Namespaces: GET /namespaces, /namespaces/:id and /namespaces/:id/exists."""

from __future__ import annotations

import pytest

from kiln.models import ProjectStatistics
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER
from tests.bodies import UNAUTHORIZED
from tests.statements import count

NAMESPACE_NOT_FOUND = {"message": "404 Namespace Not Found"}
BASIC_KEYS = ["id", "name", "path", "kind", "full_path", "parent_id", "avatar_url", "web_url"]
OWNER_KEYS = ["billable_members_count", "plan", "end_date", "trial_ends_on", "trial"]


def paths(r) -> list[str]:
    return [n["full_path"] for n in r.json()]


def test_namespaces_need_authentication(api):
    for path in ("/namespaces", "/namespaces/1", "/namespaces/root/exists"):
        r = api().get(path)
        assert (r.status_code, r.json()) == (401, UNAUTHORIZED), path


def test_user_sees_own_namespace_and_groups_they_belong_to(api, make):
    u = make.user(username="alice")
    make.user(username="bob")
    top = make.group(path="team", members={u: GUEST})
    make.group(path="sub", parent=top)
    make.group(path="public-other", visibility="public")
    r = api(u).get("/namespaces")
    assert (r.status_code, paths(r)) == (200, ["alice", "team", "team/sub"])


def test_admin_sees_every_namespace(api, make):
    make.user(username="alice")
    make.group(path="team")
    r = api("root").get("/namespaces")
    assert paths(r) == ["root", "alice", "team"]


def test_search_matches_path_or_name(api, make):
    u = make.user(username="alice")
    make.group(path="backend", name="Back End", members={u: GUEST})
    make.group(path="web", name="Frontend", members={u: GUEST})
    assert paths(api(u).get("/namespaces?search=end")) == ["backend", "web"]
    assert paths(api(u).get("/namespaces?search=ALI")) == ["alice"]


def test_full_path_search_matches_full_paths(api, make):
    u = make.user(username="alice")
    top = make.group(path="team", members={u: GUEST})
    make.group(path="api", parent=top)
    assert paths(api(u).get("/namespaces?search=team/ap&full_path_search=true")) == ["team/api"]
    assert paths(api(u).get("/namespaces?search=team/ap")) == []


def test_owned_only_lists_own_namespace_and_owned_groups(api, make):
    u = make.user(username="alice")
    make.group(path="owned", owners=[u])
    make.group(path="developed", members={u: DEVELOPER})
    assert paths(api(u).get("/namespaces?owned_only=true")) == ["alice", "owned"]


def test_top_level_only_hides_subgroups(api, make):
    u = make.user(username="alice")
    top = make.group(path="team", owners=[u])
    make.group(path="sub", parent=top)
    assert paths(api(u).get("/namespaces?top_level_only=true")) == ["alice", "team"]


@pytest.mark.parametrize("query", ["", "?owned_only=true"])
def test_the_same_list_for_two_callers_shows_each_their_own_namespaces(api, make, query):
    """The list's statement is kept per shape: its third run is compiled, and still each
    caller's own."""
    ada, bob = make.user(username="ada"), make.user(username="bob")
    make.group(path="adas", owners=[ada])
    make.group(path="bobs", owners=[bob])
    for caller, own in ((ada, ["ada", "adas"]), (bob, ["bob", "bobs"]), (ada, ["ada", "adas"])):
        assert paths(api(caller).get(f"/namespaces{query}")) == own


def test_namespace_list_is_paginated(api, make):
    u = make.user(username="alice")
    for n in range(3):
        make.group(path=f"g{n}", members={u: GUEST})
    r = api(u).get("/namespaces?per_page=2")
    assert paths(r) == ["alice", "g0"]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Next-Page"]) == ("4", "2", "2")


def test_user_namespace_view(api, make):
    u = make.user(username="alice", avatar_path="user/avatar/face.png")
    ns = api(u).get("/namespaces").json()[0]
    assert list(ns) == BASIC_KEYS + OWNER_KEYS
    assert (
        ns["kind"],
        ns["path"],
        ns["parent_id"],
        ns["web_url"],
        ns["billable_members_count"],
        ns["plan"],
    ) == (
        "user",
        "alice",
        None,
        "http://kiln.test/alice",
        1,
        "default",
    )
    assert ns["avatar_url"] == f"http://kiln.test/uploads/-/system/user/avatar/{u.id}/face.png"


def test_group_owner_sees_member_counts(api, make):
    u, dev, guest, project_member = make.user(), make.user(), make.user(), make.user()
    top = make.group(path="team", owners=[u], members={dev: DEVELOPER})
    sub = make.group(path="sub", parent=top, members={guest: GUEST})
    make.project(namespace=sub, members={project_member: DEVELOPER, dev: MAINTAINER})
    ns = api(u).get(f"/namespaces/{top.id}").json()
    assert list(ns) == [*BASIC_KEYS, "members_count_with_descendants", *OWNER_KEYS]
    assert (
        ns["kind"],
        ns["web_url"],
        ns["members_count_with_descendants"],
        ns["billable_members_count"],
    ) == (
        "group",
        "http://kiln.test/groups/team",
        3,
        4,
    )


def test_group_developer_sees_no_counts(api, make):
    dev = make.user()
    top = make.group(path="team", members={dev: DEVELOPER})
    ns = api(dev).get(f"/namespaces/{top.id}").json()
    assert list(ns) == BASIC_KEYS


def test_admin_sees_project_counts_and_root_repository_size(api, make, db):
    top = make.group(path="team")
    sub = make.group(path="sub", parent=top)
    p1 = make.project(namespace=top)
    p2 = make.project(namespace=sub)
    for pid, size in ((p1.id, 100), (p2.id, 50)):
        db.get(ProjectStatistics, pid).repository_size = size
    db.commit()
    ns = api("root").get("/namespaces/team%2Fsub").json()
    assert (ns["projects_count"], ns["root_repository_size"], ns["members_count_with_descendants"]) == (
        1,
        150,
        0,
    )
    assert api("root").get(f"/namespaces/{top.id}").json()["projects_count"] == 2


def test_get_namespace_by_id_and_by_path(api, make):
    u = make.user(username="alice")
    top = make.group(path="team", members={u: GUEST})
    sub = make.group(path="sub", parent=top)
    assert api(u).get(f"/namespaces/{sub.id}").json()["full_path"] == "team/sub"
    r = api(u).get("/namespaces/team%2Fsub")
    assert (r.status_code, r.json()["id"], r.json()["parent_id"]) == (200, sub.id, top.id)
    assert api(u).get("/namespaces/alice").json()["kind"] == "user"


def test_hidden_group_namespace_is_404(api, make):
    make.group(path="secret")
    r = api(make.user()).get("/namespaces/secret")
    assert (r.status_code, r.json()) == (404, NAMESPACE_NOT_FOUND)


def test_another_users_namespace_is_404_except_for_admins(api, make):
    make.user(username="bob")
    r = api(make.user()).get("/namespaces/bob")
    assert (r.status_code, r.json()) == (404, NAMESPACE_NOT_FOUND)
    assert api("root").get("/namespaces/bob").json()["path"] == "bob"


def test_unknown_namespace_is_404(api):
    for ident in ("999999", "nobody", "a%2Fb"):
        r = api("root").get(f"/namespaces/{ident}")
        assert (r.status_code, r.json()) == (404, NAMESPACE_NOT_FOUND), ident


def test_exists_suggests_a_free_path(api, make):
    u = make.user()
    make.group(path="taken")
    make.group(path="taken1")
    r = api(u).get("/namespaces/taken/exists")
    assert (r.status_code, r.json()) == (200, {"exists": True, "suggests": ["taken2"]})


def test_exists_is_false_for_a_free_path(api, make):
    r = api(make.user()).get("/namespaces/free-path/exists")
    assert (r.status_code, r.json()) == (200, {"exists": False, "suggests": []})


def test_exists_counts_user_namespaces_at_the_top_level(api, make):
    make.user(username="carol")
    assert api(make.user()).get("/namespaces/CAROL/exists").json() == {"exists": True, "suggests": ["CAROL1"]}


def test_exists_looks_inside_the_given_parent(api, make):
    u = make.user()
    top = make.group(path="team")
    make.group(path="api", parent=top)
    assert api(u).get(f"/namespaces/api/exists?parent_id={top.id}").json() == {
        "exists": True,
        "suggests": ["api1"],
    }
    assert api(u).get("/namespaces/api/exists").json() == {"exists": False, "suggests": []}


def test_exists_with_non_numeric_parent_id_is_400(api, make):
    r = api(make.user()).get("/namespaces/api/exists?parent_id=team")
    assert (r.status_code, r.json()) == (400, {"error": "parent_id is invalid"})


def test_namespace_list_costs_the_same_whatever_its_length(api, make, db, runtime):
    u = make.user()

    def grow(n: int) -> None:
        for _ in range(n):
            g = make.group(owners=[u])
            make.project(namespace=g, members={make.user(): GUEST})

    grow(2)
    few = count(runtime, lambda: api(u).get("/namespaces"))
    grow(8)
    assert count(runtime, lambda: api(u).get("/namespaces")) == few


# A namespace named by an id too large for the database's integers names nothing: the write
# that looks it up answers as for any namespace that does not exist.
TOO_LARGE_ID = 99999999999999999999


def test_project_create_in_a_namespace_id_too_large_is_refused(api, make):
    r = api(make.user()).post(f"/projects?name=x&namespace_id={TOO_LARGE_ID}")
    assert (r.status_code, r.json()) == (400, {"message": {"namespace": ["is not valid"]}})


def test_fork_into_a_namespace_id_too_large_is_not_found(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/fork", json={"namespace": str(TOO_LARGE_ID)})
    assert (r.status_code, r.json()) == (404, NAMESPACE_NOT_FOUND)
