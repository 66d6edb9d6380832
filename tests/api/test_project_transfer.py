"""Moving a project to another namespace (GitLab's PUT /projects/:id/transfer, POST
/groups/:id/projects/:project_id) and where it may go (GET /projects/:id/transfer_locations)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.models import Member, Project
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from tests.api.test_git_http import basic, refs_url
from tests.repositories import new_project
from tests.statements import count


def failed(reason: str) -> dict[str, str]:
    return {"message": f'Failed to transfer project {{:new_namespace=>["{reason}"]}}'}


def namespace_of(db, project) -> int:
    db.expire_all()
    return db.get(Project, project.id).namespace_id


# ------------------------------------------------------------------ the move


def test_owner_moves_a_personal_project_into_a_group_they_maintain(api, make):
    u = make.user()
    g = make.group(path="dest", members={u: MAINTAINER})
    p = make.project(owner=u, path="tool")
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["path_with_namespace"] == "dest/tool"
    assert body["namespace"]["id"] == g.id
    assert body["namespace"]["kind"] == "group"
    assert body["web_url"].endswith("/dest/tool")
    assert body["http_url_to_repo"].endswith("/dest/tool.git")
    assert "permissions" not in body  # GitLab answers Entities::Project
    assert api(u).get("/projects/dest%2Ftool").json()["id"] == p.id
    assert api(u).get(f"/projects/{u.username}%2Ftool").status_code == 404


def test_namespace_may_be_named_by_full_path(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    sub = make.group(path="sub", parent=top, owners=[u])
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": "top/sub"})
    assert r.status_code == 200
    assert r.json()["namespace"]["id"] == sub.id


def test_a_group_project_moves_back_to_its_owners_namespace(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(namespace=g, path="back")
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": u.username})
    assert r.status_code == 200
    assert r.json()["path_with_namespace"] == f"{u.username}/back"
    assert r.json()["owner"]["id"] == u.id


def test_a_user_at_their_projects_limit_moves_nothing_into_their_namespace(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    make.project(owner=u, path="held")
    p = make.project(namespace=g, path="incoming")
    api("root").put(f"/users/{u.id}", json={"projects_limit": 1})
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": u.username})
    assert (r.status_code, r.json()) == (
        400,
        failed("You don't have permission to transfer projects into that namespace."),
    )
    assert api(u).get(f"/projects/{p.id}").json()["namespace"]["id"] == g.id
    api("root").put(f"/users/{u.id}", json={"projects_limit": 2})
    assert api(u).put(f"/projects/{p.id}/transfer", json={"namespace": u.username}).status_code == 200


def test_the_former_personal_owner_stays_owner_after_the_move(api, make, db):
    u = make.user()
    g = make.group(members={u: MAINTAINER})
    p = make.project(owner=u)
    assert api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id}).status_code == 200
    access = api(u).get(f"/projects/{p.id}").json()["permissions"]
    assert access["project_access"]["access_level"] == OWNER
    assert access["group_access"]["access_level"] == MAINTAINER
    member = db.scalars(select(Member).where(Member.project_id == p.id, Member.user_id == u.id)).one()
    assert member.access_level == OWNER


def test_group_members_reach_the_moved_project_and_the_old_groups_members_do_not(api, make):
    owner, old_dev, new_dev = make.user(), make.user(), make.user()
    old = make.group(owners=[owner], members={old_dev: DEVELOPER})
    new = make.group(owners=[owner], members={new_dev: REPORTER})
    p = make.project(namespace=old)
    assert api(old_dev).get(f"/projects/{p.id}").status_code == 200
    assert api(owner).put(f"/projects/{p.id}/transfer", json={"namespace": new.id}).status_code == 200
    assert api(old_dev).get(f"/projects/{p.id}").status_code == 404
    seen = api(new_dev).get(f"/projects/{p.id}")
    assert seen.status_code == 200
    assert seen.json()["permissions"]["group_access"]["access_level"] == REPORTER


def test_a_project_above_the_new_groups_visibility_is_lowered_to_it(api, make):
    u = make.user()
    g = make.group(owners=[u], visibility="internal")
    p = make.project(owner=u, visibility="public")
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()["visibility"]) == (200, "internal")


def test_a_project_below_the_new_groups_visibility_keeps_its_own(api, make):
    u = make.user()
    g = make.group(owners=[u], visibility="public")
    p = make.project(owner=u, visibility="private")
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()["visibility"]) == (200, "private")


def test_shares_stay_with_the_moved_project(api, make):
    u = make.user()
    other = make.group(owners=[u])
    dest = make.group(owners=[u])
    p = make.project(owner=u)
    assert (
        api(u).post(f"/projects/{p.id}/share", json={"group_id": other.id, "group_access": 30}).status_code
        == 201
    )
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": dest.id})
    assert [s["group_id"] for s in r.json()["shared_with_groups"]] == [other.id]


def test_the_repository_is_read_and_cloned_at_the_new_path(api, make, client):
    u = make.user()
    g = make.group(path="moved-to", owners=[u])
    project = new_project(api, make, u)
    assert api(u).put(f"/projects/{project['id']}/transfer", json={"namespace": g.id}).status_code == 200
    moved = api(u).get(f"/projects/{project['id']}").json()
    assert moved["path_with_namespace"] == f"moved-to/{project['path']}"
    r = api(u).get(f"/projects/moved-to%2F{project['path']}/repository/files/README.md?ref=main")
    assert r.status_code == 200
    refs = client.get(refs_url(moved, "git-upload-pack"), headers=basic("x", u.token))
    assert refs.status_code == 200
    assert b"refs/heads/main" in refs.content


def test_an_archived_project_may_be_moved(api, make):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(owner=u, archived=True)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()["namespace"]["id"], r.json()["archived"]) == (200, g.id, True)


def test_an_administrator_moves_any_project_anywhere(api, make):
    u, v = make.user(), make.user()
    p = make.project(owner=u)
    r = api("root").put(f"/projects/{p.id}/transfer", json={"namespace": v.username})
    assert (r.status_code, r.json()["namespace"]["full_path"]) == (200, v.username)


# ------------------------------------------------------------------ refusals


def test_the_same_namespace_is_refused(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    before = namespace_of(db, p)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": u.username})
    assert (r.status_code, r.json()) == (400, failed("Project is already in this namespace."))
    assert namespace_of(db, p) == before


def test_a_path_taken_in_the_target_is_refused_and_nothing_changes(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    make.project(namespace=g, path="same")
    p = make.project(owner=u, path="same", name="other-name")
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()) == (
        400,
        failed("Project with same name or path in target namespace already exists"),
    )
    db.expire_all()
    assert db.get(Project, p.id).namespace_id != g.id


def test_a_path_taken_case_insensitively_or_a_name_taken_is_refused(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    make.project(namespace=g, path="Shared", name="Taken Name")
    by_path = make.project(owner=u, path="shared")
    by_name = make.project(owner=u, path="elsewhere", name="Taken Name")
    for p in (by_path, by_name):
        r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
        assert (r.status_code, r.json()) == (
            400,
            failed("Project with same name or path in target namespace already exists"),
        )
        assert namespace_of(db, p) != g.id


def test_a_subgroup_with_the_path_is_refused(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    make.group(parent=g, path="clash", owners=[u])
    p = make.project(owner=u, path="clash")
    before = namespace_of(db, p)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert r.status_code == 400
    assert namespace_of(db, p) == before


def test_a_developer_of_the_target_group_may_not_move_projects_into_it(api, make, db):
    u = make.user()
    g = make.group(members={u: DEVELOPER})
    p = make.project(owner=u)
    before = namespace_of(db, p)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()) == (
        400,
        failed("You don't have permission to transfer projects into that namespace."),
    )
    assert namespace_of(db, p) == before


def test_a_group_where_maintainers_may_not_create_projects_refuses_them(api, make, db):
    u = make.user()
    g = make.group(members={u: MAINTAINER}, project_creation_level="owner")
    p = make.project(owner=u)
    before = namespace_of(db, p)
    assert api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id}).status_code == 400
    assert namespace_of(db, p) == before


def test_a_public_group_the_caller_does_not_belong_to_refuses(api, make, db):
    u = make.user()
    g = make.group(visibility="public")
    p = make.project(owner=u)
    before = namespace_of(db, p)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()) == (
        400,
        failed("You don't have permission to transfer projects into that namespace."),
    )
    assert namespace_of(db, p) == before


@pytest.mark.parametrize("target", ["private-group", "other-user", "missing"])
def test_a_namespace_the_caller_may_not_see_is_404(api, make, db, target):
    u, v = make.user(), make.user()
    make.group(path="hidden-dest")
    p = make.project(owner=u)
    before = namespace_of(db, p)
    namespace = {"private-group": "hidden-dest", "other-user": v.username, "missing": "no/such/thing"}[target]
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": namespace})
    assert (r.status_code, r.json()) == (404, {"message": "404 Namespace Not Found"})
    assert namespace_of(db, p) == before


@pytest.mark.parametrize("level", [GUEST, REPORTER, DEVELOPER, MAINTAINER])
def test_only_the_projects_owner_may_move_it(api, make, db, level):
    owner, u = make.user(), make.user()
    g = make.group(owners=[owner, u])
    p = make.project(owner=owner, members={u: level})
    before = namespace_of(db, p)
    r = api(u).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert namespace_of(db, p) == before


def test_a_hidden_project_is_404_and_anonymous_is_401(api, make, db):
    u, stranger = make.user(), make.user()
    g = make.group(owners=[u, stranger])
    p = make.project(owner=u)
    before = namespace_of(db, p)
    r = api(stranger).put(f"/projects/{p.id}/transfer", json={"namespace": g.id})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api().put(f"/projects/{p.id}/transfer", json={"namespace": g.id}).status_code == 401
    assert namespace_of(db, p) == before


def test_namespace_is_required(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}/transfer", json={})
    assert (r.status_code, r.json()) == (400, {"error": "namespace is missing"})


# ------------------------------------------------------------------ administrators' move into a group


def test_an_administrator_moves_a_project_into_a_group_and_gets_the_group(api, make):
    u = make.user()
    g = make.group(path="admins-dest")
    p = make.project(owner=u, path="moved")
    r = api("root").post(f"/groups/{g.id}/projects/{p.id}")
    assert r.status_code == 201
    assert r.json()["id"] == g.id
    assert [x["path_with_namespace"] for x in r.json()["projects"]] == ["admins-dest/moved"]


def test_only_administrators_move_projects_into_groups_that_way(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(owner=u)
    before = namespace_of(db, p)
    r = api(u).post(f"/groups/{g.id}/projects/{p.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert namespace_of(db, p) == before


# ------------------------------------------------------------------ transfer locations


def test_transfer_locations_are_the_groups_the_owner_may_move_projects_into(api, make):
    u = make.user()
    current = make.group(path="loc-current", owners=[u])
    maintained = make.group(path="loc-b", members={u: MAINTAINER})
    owned = make.group(path="loc-a", owners=[u])
    make.group(path="loc-dev", members={u: DEVELOPER})
    make.group(path="loc-none", members={u: MAINTAINER}, project_creation_level="noone")
    sub = make.group(path="loc-sub", parent=owned)
    p = make.project(namespace=current)
    r = api(u).get(f"/projects/{p.id}/transfer_locations")
    assert r.status_code == 200
    assert [g["full_path"] for g in r.json()] == ["loc-a", "loc-b", "loc-a/loc-sub"]
    assert set(r.json()[0]) == {"id", "web_url", "name", "avatar_url", "full_name", "full_path"}
    assert {maintained.id, owned.id, sub.id} == {g["id"] for g in r.json()}
    found = api(u).get(f"/projects/{p.id}/transfer_locations?search=sub").json()
    assert [g["id"] for g in found] == [sub.id]


@pytest.mark.parametrize(
    ("caller", "status"), [("anonymous", 401), ("stranger", 404), ("maintainer", 403), ("admin", 200)]
)
def test_transfer_locations_take_the_projects_owner(api, make, caller, status):
    owner, maintainer = make.user(), make.user()
    p = make.project(owner=owner, members={maintainer: MAINTAINER})
    who = {"anonymous": None, "stranger": make.user(), "maintainer": maintainer, "admin": "root"}[caller]
    r = api(who).get(f"/projects/{p.id}/transfer_locations")
    assert r.status_code == status
    if status == 403:
        assert r.json() == {"message": "403 Forbidden"}


def test_transfer_locations_cost_the_same_whatever_their_number(api, make, runtime):
    u = make.user()
    p = make.project(owner=u)

    def grow(n: int) -> None:
        for _ in range(n):
            top = make.group(members={u: MAINTAINER})
            make.group(parent=top)

    def cost() -> int:
        # The least of two runs: the instance's settings are read again now and then.
        return min(count(runtime, lambda: api(u).get(path)) for _ in range(2))

    path = f"/projects/{p.id}/transfer_locations?per_page=50"
    grow(1)
    few = cost()
    assert len(api(u).get(path).json()) == 2
    grow(8)
    assert cost() == few
    assert len(api(u).get(path).json()) == 18
    assert few <= 4  # the token, the project, the page, its count
