"""Groups and subgroups: GET/POST/PUT/DELETE /groups, /groups/:id/subgroups,
/descendant_groups, /projects, /transfer and /restore."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import func, select

from kiln.auth.actor import Actor
from kiln.errors import BadRequest
from kiln.git.layout import repository_path
from kiln.models import (
    GroupCustomAttribute,
    Job,
    Member,
    Namespace,
    Project,
    ProjectGroupLink,
    ProjectStatistics,
)
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from kiln.queries import projects as project_queries
from kiln.queries.users import row_by_id
from kiln.services import groups, instance_settings
from tests.bodies import FORBIDDEN, UNAUTHORIZED
from tests.statements import count

GROUP_NOT_FOUND = {"message": "404 Group Not Found"}
GROUP_KEYS = [
    "id",
    "web_url",
    "name",
    "path",
    "description",
    "visibility",
    "share_with_group_lock",
    "require_two_factor_authentication",
    "two_factor_grace_period",
    "project_creation_level",
    "auto_devops_enabled",
    "subgroup_creation_level",
    "emails_disabled",
    "emails_enabled",
    "show_diff_preview_in_email",
    "mentions_disabled",
    "lfs_enabled",
    "archived",
    "math_rendering_limits_enabled",
    "lock_math_rendering_limits_enabled",
    "default_branch",
    "default_branch_protection",
    "default_branch_protection_defaults",
    "avatar_url",
    "request_access_enabled",
    "full_name",
    "full_path",
    "created_at",
    "parent_id",
    "organization_id",
    "shared_runners_setting",
    "max_artifacts_size",
    "marked_for_deletion_on",
]


def names(r) -> list[str]:
    return [g["name"] for g in r.json()]


def taken(errors: str) -> dict[str, str]:
    return {"message": f"Failed to save group {errors}"}


# ---------------------------------------------------------------------------- GET /groups


def test_anonymous_list_shows_public_groups_only(api, make):
    make.group(path="pub", visibility="public")
    make.group(path="intern", visibility="internal")
    make.group(path="priv", visibility="private")
    r = api().get("/groups")
    assert (r.status_code, names(r)) == (200, ["pub"])


def test_signed_in_list_defaults_to_groups_the_user_belongs_to(api, make):
    u = make.user()
    make.group(path="pub", visibility="public")
    make.group(path="mine", members={u: GUEST})
    make.group(path="other")
    r = api(u).get("/groups")
    assert (r.status_code, names(r)) == (200, ["mine"])


def test_all_available_adds_public_and_internal_groups(api, make):
    u = make.user()
    make.group(path="pub", visibility="public")
    make.group(path="intern", visibility="internal")
    make.group(path="mine", members={u: GUEST})
    make.group(path="other")
    r = api(u).get("/groups?all_available=true")
    assert (r.status_code, names(r)) == (200, ["intern", "mine", "pub"])


def test_external_user_does_not_see_internal_groups(api, make):
    u = make.user(external=True)
    make.group(path="pub", visibility="public")
    make.group(path="intern", visibility="internal")
    r = api(u).get("/groups?all_available=true")
    assert names(r) == ["pub"]


def test_admin_lists_every_group(api, make):
    make.group(path="a-priv")
    make.group(path="b-pub", visibility="public")
    r = api("root").get("/groups")
    assert (r.status_code, names(r)) == (200, ["a-priv", "b-pub"])


def test_membership_of_a_parent_lists_its_subgroups(api, make):
    u = make.user()
    top = make.group(path="top", members={u: DEVELOPER})
    make.group(path="child", parent=top)
    make.group(path="elsewhere")
    r = api(u).get("/groups")
    assert names(r) == ["child", "top"]


def test_project_membership_lists_the_ancestors_of_the_project(api, make):
    u = make.user()
    top = make.group(path="top")
    child = make.group(path="child", parent=top)
    make.project(namespace=child, members={u: REPORTER})
    r = api(u).get("/groups")
    assert names(r) == ["child", "top"]


@pytest.mark.parametrize("query", ["", "?min_access_level=10", "?owned=true", "?all_available=true"])
def test_the_same_list_for_two_callers_shows_each_their_own_groups(api, make, query):
    """The list's statement is kept per shape: its third run is compiled, and still each
    caller's own."""
    ada, bob = make.user(), make.user()
    make.group(path="adas", owners=[ada])
    make.group(path="bobs", owners=[bob])
    for caller, own in ((ada, ["adas"]), (bob, ["bobs"]), (ada, ["adas"])):
        assert names(api(caller).get(f"/groups{query}")) == own


def test_list_search_matches_name_or_path(api, make):
    make.group(path="alpha-team", name="Alpha", visibility="public")
    make.group(path="beta", name="Team Beta", visibility="public")
    make.group(path="gamma", visibility="public")
    r = api().get("/groups?search=team")
    assert names(r) == ["Alpha", "Team Beta"]


def test_list_owned_shows_groups_the_user_owns(api, make):
    u = make.user()
    make.group(path="owned", owners=[u])
    make.group(path="maintained", members={u: MAINTAINER})
    r = api(u).get("/groups?owned=true")
    assert names(r) == ["owned"]


def test_list_min_access_level_filters_by_membership_level(api, make):
    u = make.user()
    make.group(path="guest", members={u: GUEST})
    make.group(path="dev", members={u: DEVELOPER})
    make.group(path="owner", owners=[u])
    r = api(u).get("/groups?min_access_level=30")
    assert names(r) == ["dev", "owner"]


def test_list_min_access_level_must_be_an_access_level(api, make):
    r = api(make.user()).get("/groups?min_access_level=35")
    assert (r.status_code, r.json()) == (400, {"error": "min_access_level does not have a valid value"})


def test_list_top_level_only_hides_subgroups(api, make):
    top = make.group(path="top", visibility="public")
    make.group(path="child", parent=top, visibility="public")
    r = api().get("/groups?top_level_only=true")
    assert names(r) == ["top"]


def test_list_skip_groups_leaves_those_out(api, make):
    a = make.group(path="a", visibility="public")
    b = make.group(path="b", visibility="public")
    make.group(path="c", visibility="public")
    assert names(api().get(f"/groups?skip_groups[]={a.id}&skip_groups[]={b.id}")) == ["c"]
    assert names(api().get(f"/groups?skip_groups={a.id},{b.id}")) == ["c"]


def test_list_visibility_filter(api, make):
    make.group(path="pub", visibility="public")
    make.group(path="intern", visibility="internal")
    r = api("root").get("/groups?visibility=internal")
    assert names(r) == ["intern"]


def test_list_orders_by_name_ascending_by_default_then_id(api, make):
    first = make.group(path="x1", name="Same", visibility="public")
    second = make.group(path="x2", name="Same", visibility="public")
    make.group(path="a0", name="Another", visibility="public")
    r = api().get("/groups")
    assert [g["id"] for g in r.json()][1:] == [first.id, second.id]
    assert names(r)[0] == "Another"


def test_list_order_by_path_descending(api, make):
    make.group(path="b", name="One", visibility="public")
    make.group(path="c", name="Two", visibility="public")
    make.group(path="a", name="Three", visibility="public")
    r = api().get("/groups?order_by=path&sort=desc")
    assert [g["path"] for g in r.json()] == ["c", "b", "a"]


def test_list_order_by_id(api, make):
    ids = [make.group(path=p, visibility="public").id for p in ("z", "y", "x")]
    r = api().get("/groups?order_by=id")
    assert [g["id"] for g in r.json()] == ids


def test_list_order_by_unknown_field_is_400(api):
    r = api().get("/groups?order_by=created_at")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_list_is_paginated_with_headers(api, make):
    for n in range(3):
        make.group(path=f"g{n}", visibility="public")
    r = api().get("/groups?per_page=2")
    assert names(r) == ["g0", "g1"]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Next-Page"]) == ("3", "2", "2")
    assert 'rel="next"' in r.headers["Link"]
    r2 = api().get("/groups?per_page=2&page=2")
    assert (names(r2), r2.headers["X-Prev-Page"]) == (["g2"], "1")


def test_list_statistics_are_for_admins_only(api, make, db):
    g = make.group(path="stats", visibility="public")
    p = make.project(namespace=g, visibility="public")
    row = db.get(ProjectStatistics, p.id)
    row.repository_size, row.uploads_size = 100, 20
    db.commit()
    r = api("root").get("/groups?statistics=true")
    assert r.json()[0]["statistics"] == {
        "storage_size": 120,
        "repository_size": 100,
        "wiki_size": 0,
        "lfs_objects_size": 0,
        "job_artifacts_size": 0,
        "pipeline_artifacts_size": 0,
        "packages_size": 0,
        "snippets_size": 0,
        "uploads_size": 20,
    }
    assert "statistics" not in api(make.user()).get("/groups?statistics=true&all_available=true").json()[0]


def test_list_custom_attributes_for_admins(api, make, db):
    a = make.group(path="tagged", visibility="public")
    make.group(path="plain", visibility="public")
    db.add(GroupCustomAttribute(namespace_id=a.id, key="team", value="red"))
    db.commit()
    r = api("root").get("/groups?custom_attributes[team]=red&with_custom_attributes=true")
    assert [(g["path"], g["custom_attributes"]) for g in r.json()] == [
        ("tagged", [{"key": "team", "value": "red"}])
    ]
    # Non-administrators neither filter by them nor see them.
    r = api(make.user()).get(
        "/groups?custom_attributes[team]=red&with_custom_attributes=true&all_available=1"
    )
    assert [(g["path"], "custom_attributes" in g) for g in r.json()] == [("plain", False), ("tagged", False)]


def test_list_view_has_gitlabs_fields_in_order(api, make):
    make.group(path="shape", visibility="public", description="About")
    g = api().get("/groups").json()[0]
    assert list(g) == GROUP_KEYS
    assert (g["web_url"], g["full_name"], g["description"], g["default_branch_protection"]) == (
        "http://kiln.test/groups/shape",
        "shape",
        "About",
        2,
    )
    assert g["default_branch_protection_defaults"] == {
        "allowed_to_push": [{"access_level": 40}],
        "allow_force_push": False,
        "allowed_to_merge": [{"access_level": 40}],
    }


# ---------------------------------------------------------------------------- GET /groups/:id


def test_get_group_by_id_returns_the_detail_view(api, make):
    u = make.user()
    g = make.group(path="detail", owners=[u])
    r = api(u).get(f"/groups/{g.id}")
    assert r.status_code == 200
    assert list(r.json()) == [
        *GROUP_KEYS,
        "shared_with_groups",
        "prevent_sharing_groups_outside_hierarchy",
        "projects",
        "shared_projects",
    ]
    assert (r.json()["id"], r.json()["projects"], r.json()["shared_projects"]) == (g.id, [], [])


def test_get_group_by_url_encoded_full_path(api, make):
    top = make.group(path="top", visibility="public")
    child = make.group(path="child", parent=top, visibility="public")
    r = api().get("/groups/top%2Fchild")
    assert (r.status_code, r.json()["id"], r.json()["full_path"], r.json()["parent_id"]) == (
        200,
        child.id,
        "top/child",
        top.id,
    )
    assert "prevent_sharing_groups_outside_hierarchy" not in r.json()


def test_get_private_group_is_404_to_non_members(api, make):
    g = make.group(path="secret")
    assert (api(make.user()).get(f"/groups/{g.id}").json()) == GROUP_NOT_FOUND
    r = api().get("/groups/secret")
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_get_internal_group_needs_a_signed_in_user(api, make):
    g = make.group(path="inside", visibility="internal")
    assert api().get(f"/groups/{g.id}").status_code == 404
    assert api(make.user()).get(f"/groups/{g.id}").status_code == 200


def test_get_unknown_group_is_404(api):
    for ident in ("999999", "no-such-group", "a%2Fb"):
        r = api("root").get(f"/groups/{ident}")
        assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND), ident


def test_get_user_namespace_through_groups_is_404(api, make):
    u = make.user(username="someone")
    r = api("root").get(f"/groups/{u.username}")
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_get_group_lists_visible_projects_and_shared_projects(api, make, db):
    u = make.user()
    g = make.group(path="withprojects", visibility="public")
    public = make.project(namespace=g, path="open", visibility="public")
    make.project(namespace=g, path="closed", visibility="private")
    other = make.group(path="other", visibility="public")
    shared = make.project(namespace=other, path="sharedone", visibility="public")
    db.add(ProjectGroupLink(project_id=shared.id, group_id=g.id, group_access=DEVELOPER))
    db.commit()
    r = api(u).get(f"/groups/{g.id}")
    body = r.json()
    assert [p["id"] for p in body["projects"]] == [public.id]
    assert [p["path_with_namespace"] for p in body["shared_projects"]] == ["other/sharedone"]
    assert "permissions" not in body["projects"][0]


def test_get_group_with_projects_false_leaves_them_out(api, make):
    g = make.group(path="lean", visibility="public")
    body = api().get(f"/groups/{g.id}?with_projects=false").json()
    assert "projects" not in body
    assert "shared_projects" not in body


def test_get_group_custom_attributes_for_admin(api, make, db):
    g = make.group(path="attrs", visibility="public")
    db.add(GroupCustomAttribute(namespace_id=g.id, key="k", value="v"))
    db.commit()
    assert api("root").get(f"/groups/{g.id}?with_custom_attributes=true").json()["custom_attributes"] == [
        {"key": "k", "value": "v"}
    ]
    assert "custom_attributes" not in api().get(f"/groups/{g.id}?with_custom_attributes=true").json()


def test_private_ancestor_is_visible_to_a_member_of_a_subgroup(api, make):
    u = make.user()
    top = make.group(path="top")
    make.group(path="child", parent=top, members={u: GUEST})
    r = api(u).get(f"/groups/{top.id}")
    assert (r.status_code, r.json()["full_path"]) == (200, "top")


# ---------------------------------------------------------------------------- POST /groups


def test_create_group_returns_201_with_the_detail_view(api, make, db):
    u = make.user()
    r = api(u).post("/groups", json={"name": "My Group", "path": "my-group", "description": "d"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["name"], body["path"], body["full_path"], body["description"], body["visibility"]) == (
        "My Group",
        "my-group",
        "my-group",
        "d",
        "private",
    )
    assert (body["web_url"], body["parent_id"]) == ("http://kiln.test/groups/my-group", None)
    assert "projects" not in body
    assert body["shared_with_groups"] == []


def test_creator_becomes_owner_member(api, make, db):
    u = make.user()
    gid = api(u).post("/groups", json={"name": "Owned", "path": "owned"}).json()["id"]
    rows = db.execute(
        select(Member.user_id, Member.access_level, Member.created_by_id).where(Member.namespace_id == gid)
    ).all()
    assert rows == [(u.id, OWNER, u.id)]
    assert [g["id"] for g in api(u).get("/groups?owned=true").json()] == [gid]


def test_create_group_with_form_body_and_settings(api, make):
    u = make.user()
    r = api(u).post(
        "/groups",
        data={
            "name": "Formed",
            "path": "formed",
            "visibility": "internal",
            "request_access_enabled": "false",
            "project_creation_level": "maintainer",
            "subgroup_creation_level": "owner",
            "emails_disabled": "true",
            "lfs_enabled": "0",
            "default_branch_protection": "0",
            "default_branch": "trunk",
        },
    )
    body = r.json()
    assert r.status_code == 201
    assert (
        body["visibility"],
        body["request_access_enabled"],
        body["project_creation_level"],
        body["subgroup_creation_level"],
        body["emails_disabled"],
        body["emails_enabled"],
        body["lfs_enabled"],
        body["default_branch_protection"],
        body["default_branch"],
    ) == ("internal", False, "maintainer", "owner", True, False, False, 0, "trunk")
    assert body["default_branch_protection_defaults"]["allow_force_push"] is True


def test_create_requires_authentication(api):
    r = api().post("/groups", json={"name": "x", "path": "x"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_create_without_name_and_path_is_400(api, make):
    r = api(make.user()).post("/groups", json={})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing, path is missing"})


def test_create_without_path_is_400(api, make):
    r = api(make.user()).post("/groups", json={"name": "Only"})
    assert (r.status_code, r.json()) == (400, {"error": "path is missing"})


def test_create_with_invalid_path_is_400(api, make):
    r = api(make.user()).post("/groups", json={"name": "Bad", "path": "-bad path"})
    assert (r.status_code, r.json()) == (
        400,
        taken(
            "{:path=>[\"can contain only letters, digits, '_', '-' and '.'. "
            "Cannot start with '-', end in '.git' or end in '.atom'\"]}"
        ),
    )


def test_create_with_reserved_top_level_path_is_400(api, make):
    r = api(make.user()).post("/groups", json={"name": "Api", "path": "api"})
    assert (r.status_code, r.json()) == (400, taken('{:path=>["api is a reserved name"]}'))


def test_create_with_invalid_visibility_is_400(api, make):
    r = api(make.user()).post("/groups", json={"name": "V", "path": "v", "visibility": "secret"})
    assert (r.status_code, r.json()) == (400, {"error": "visibility does not have a valid value"})


def test_create_with_taken_path_is_400(api, make):
    make.group(path="dup")
    r = api(make.user()).post("/groups", json={"name": "Dup", "path": "DUP"})
    assert (r.status_code, r.json()) == (400, taken('{:path=>["has already been taken"]}'))


def test_create_with_a_username_as_path_is_400(api, make):
    make.user(username="alice")
    r = api(make.user()).post("/groups", json={"name": "Alice", "path": "alice"})
    assert (r.status_code, r.json()) == (400, taken('{:path=>["has already been taken"]}'))


def test_create_is_403_for_users_who_may_not_create_groups(api, make):
    u = make.user(can_create_group=False)
    r = api(u).post("/groups", json={"name": "No", "path": "no"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_create_uses_the_instance_default_visibility(api, make, db):
    instance_settings.update(db, {"default_group_visibility": "internal"})
    r = api(make.user()).post("/groups", json={"name": "Def", "path": "def"})
    assert (r.status_code, r.json()["visibility"]) == (201, "internal")


@pytest.mark.parametrize(
    ("setting", "level"),
    [(0, "noone"), (1, "maintainer"), (2, "developer"), (3, "administrator"), (4, "owner")],
)
def test_create_takes_the_instance_default_project_creation(api, make, db, setting, level):
    instance_settings.update(db, {"default_project_creation": setting})
    r = api(make.user()).post("/groups", json={"name": "Made", "path": "made"})
    assert (r.status_code, r.json()["project_creation_level"]) == (201, level)


def test_create_restricted_visibility_is_400_for_non_admins(api, make, db):
    instance_settings.update(db, {"restricted_visibility_levels": ["public"]})
    body = {"name": "Pub", "path": "pub", "visibility": "public"}
    r = api(make.user()).post("/groups", json=body)
    assert (r.status_code, r.json()) == (
        400,
        taken('{:visibility_level=>["Public has been restricted by your GitLab administrator"]}'),
    )
    assert api("root").post("/groups", json=body).status_code == 201


def test_create_subgroup_under_parent(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="public")
    r = api(u).post("/groups", json={"name": "Child", "path": "child", "parent_id": top.id})
    body = r.json()
    assert (r.status_code, body["full_path"], body["full_name"], body["parent_id"]) == (
        201,
        "top/child",
        "top / Child",
        top.id,
    )
    assert api(u).get("/groups/top%2Fchild").json()["id"] == body["id"]


def test_create_subgroup_needs_maintainer_by_default(api, make):
    dev, maintainer = make.user(), make.user()
    top = make.group(path="top", members={dev: DEVELOPER, maintainer: MAINTAINER})
    r = api(dev).post("/groups", json={"name": "C", "path": "c", "parent_id": top.id})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert (
        api(maintainer).post("/groups", json={"name": "C", "path": "c", "parent_id": top.id}).status_code
        == 201
    )


def test_create_subgroup_needs_owner_when_parent_says_so(api, make):
    maintainer = make.user()
    top = make.group(path="top", members={maintainer: MAINTAINER}, subgroup_creation_level="owner")
    r = api(maintainer).post("/groups", json={"name": "C", "path": "c", "parent_id": top.id})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_create_subgroup_of_unknown_or_hidden_parent_is_404(api, make):
    u = make.user()
    hidden = make.group(path="hidden")
    for parent in (hidden.id, 999999):
        r = api(u).post("/groups", json={"name": "C", "path": "c", "parent_id": parent})
        assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_create_subgroup_with_non_numeric_parent_id_is_400(api, make):
    r = api(make.user()).post("/groups", json={"name": "C", "path": "c", "parent_id": "top"})
    assert (r.status_code, r.json()) == (400, {"error": "parent_id is invalid"})


def test_create_subgroup_more_visible_than_parent_is_400(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="internal")
    r = api(u).post("/groups", json={"name": "C", "path": "c", "parent_id": top.id, "visibility": "public"})
    assert (r.status_code, r.json()) == (
        400,
        taken(
            '{:visibility_level=>["public is not allowed since the parent group has a internal visibility."]}'
        ),
    )


def test_create_subgroup_default_visibility_is_capped_by_parent(api, make, db):
    instance_settings.update(db, {"default_group_visibility": "public"})
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="internal")
    r = api(u).post("/groups", json={"name": "C", "path": "c", "parent_id": top.id})
    assert (r.status_code, r.json()["visibility"]) == (201, "internal")


def test_subgroup_paths_are_unique_per_parent(api, make):
    u = make.user()
    one = make.group(path="one", owners=[u])
    two = make.group(path="two", owners=[u])
    make.group(path="same", parent=one)
    r = api(u).post("/groups", json={"name": "Same", "path": "same", "parent_id": one.id})
    assert (r.status_code, r.json()) == (
        400,
        taken('{:name=>["has already been taken"], :path=>["has already been taken"]}'),
    )
    r = api(u).post("/groups", json={"name": "Same", "path": "same", "parent_id": two.id})
    assert (r.status_code, r.json()["full_path"]) == (201, "two/same")


def test_subgroup_path_may_not_repeat_a_project_path_in_the_parent(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    make.project(namespace=top, path="app")
    r = api(u).post("/groups", json={"name": "App group", "path": "app", "parent_id": top.id})
    assert (r.status_code, r.json()) == (400, taken('{:path=>["has already been taken"]}'))


def test_top_level_groups_may_share_a_name(api, make):
    make.group(path="first", name="Shared name")
    r = api(make.user()).post("/groups", json={"name": "Shared name", "path": "second"})
    assert r.status_code == 201


# ---------------------------------------------------------------------------- PUT /groups/:id


def test_owner_updates_settings(api, make):
    u = make.user()
    g = make.group(path="g", owners=[u])
    r = api(u).put(
        f"/groups/{g.id}",
        json={
            "name": "Renamed",
            "description": "new",
            "visibility": "internal",
            "request_access_enabled": False,
            "share_with_group_lock": True,
            "require_two_factor_authentication": True,
            "two_factor_grace_period": 12,
            "mentions_disabled": True,
            "emails_enabled": False,
            "auto_devops_enabled": True,
        },
    )
    body = r.json()
    assert r.status_code == 200, r.text
    assert (
        body["name"],
        body["full_name"],
        body["path"],
        body["description"],
        body["visibility"],
        body["request_access_enabled"],
        body["share_with_group_lock"],
        body["require_two_factor_authentication"],
        body["two_factor_grace_period"],
        body["mentions_disabled"],
        body["emails_disabled"],
        body["auto_devops_enabled"],
    ) == ("Renamed", "Renamed", "g", "new", "internal", False, True, True, 12, True, True, True)
    assert body["projects"] == []
    assert body["shared_projects"] == []


def test_update_is_403_for_a_maintainer(api, make):
    u = make.user()
    g = make.group(path="g", members={u: MAINTAINER})
    r = api(u).put(f"/groups/{g.id}", json={"description": "x"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_update_is_403_for_a_non_member_of_a_public_group(api, make):
    g = make.group(path="g", visibility="public")
    r = api(make.user()).put(f"/groups/{g.id}", json={"description": "x"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_update_of_a_hidden_group_is_404(api, make):
    g = make.group(path="g")
    r = api(make.user()).put(f"/groups/{g.id}", json={"description": "x"})
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_update_requires_authentication(api, make):
    g = make.group(path="g", visibility="public")
    r = api().put(f"/groups/{g.id}", json={"description": "x"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_admin_updates_any_group(api, make):
    g = make.group(path="g")
    r = api("root").put(f"/groups/{g.id}", json={"description": "by admin"})
    assert (r.status_code, r.json()["description"]) == (200, "by admin")


def test_rename_path_moves_descendants_and_project_paths(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    child = make.group(path="child", parent=top, name="Child")
    grandchild = make.group(path="grand", parent=child, name="Grand")
    project = make.project(namespace=grandchild, path="app")
    r = api(u).put(f"/groups/{top.id}", json={"path": "renamed", "name": "Renamed"})
    assert (r.status_code, r.json()["full_path"]) == (200, "renamed")
    assert api(u).get(f"/groups/{grandchild.id}").json()["full_path"] == "renamed/child/grand"
    assert api(u).get(f"/groups/{grandchild.id}").json()["full_name"] == "Renamed / Child / Grand"
    p = api(u).get(f"/projects/{project.id}").json()
    assert (p["path_with_namespace"], p["name_with_namespace"]) == (
        "renamed/child/grand/app",
        "Renamed / Child / Grand / app",
    )
    assert api(u).get("/groups/renamed%2Fchild").json()["id"] == child.id
    assert api(u).get("/groups/top%2Fchild").status_code == 404


def test_rename_to_a_taken_path_is_400(api, make):
    u = make.user()
    make.group(path="taken")
    g = make.group(path="mine", owners=[u])
    r = api(u).put(f"/groups/{g.id}", json={"path": "taken"})
    assert (r.status_code, r.json()) == (400, {"message": {"path": ["has already been taken"]}})


def test_rename_to_an_invalid_path_is_400(api, make):
    u = make.user()
    g = make.group(path="mine", owners=[u])
    r = api(u).put(f"/groups/{g.id}", json={"path": "bad.git"})
    assert r.status_code == 400
    assert list(r.json()["message"]) == ["path"]


def test_update_visibility_above_parent_is_400(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="internal")
    child = make.group(path="child", parent=top, visibility="internal")
    r = api(u).put(f"/groups/{child.id}", json={"visibility": "public"})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": {
                "visibility_level": [
                    "public is not allowed since the parent group has a internal visibility."
                ]
            }
        },
    )


def test_update_visibility_below_a_subgroup_is_400(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="public")
    make.group(path="child", parent=top, visibility="internal")
    r = api(u).put(f"/groups/{top.id}", json={"visibility": "private"})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": {
                "visibility_level": [
                    "private is not allowed since there are sub-groups with higher visibility."
                ]
            }
        },
    )


def test_update_visibility_below_a_project_is_400(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u], visibility="public")
    make.project(namespace=top, visibility="public")
    r = api(u).put(f"/groups/{top.id}", json={"visibility": "internal"})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": {
                "visibility_level": [
                    "internal is not allowed since this group contains projects with higher visibility."
                ]
            }
        },
    )


def test_update_with_invalid_project_creation_level_is_400(api, make):
    u = make.user()
    g = make.group(path="g", owners=[u])
    r = api(u).put(f"/groups/{g.id}", json={"project_creation_level": "everyone"})
    assert (r.status_code, r.json()) == (400, {"error": "project_creation_level does not have a valid value"})


def test_update_by_full_path(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    make.group(path="child", parent=top)
    r = api(u).put("/groups/top%2Fchild", json={"description": "via path"})
    assert (r.status_code, r.json()["description"]) == (200, "via path")


# ---------------------------------------------------------------------------- DELETE /groups/:id


def test_delete_removes_group_subgroups_projects_and_members(api, make, db, settings):
    u, other = make.user(), make.user()
    top = make.group(path="top", owners=[u], members={other: DEVELOPER})
    child = make.group(path="child", parent=top, members={other: REPORTER})
    p1 = make.project(namespace=top, path="p1", members={other: DEVELOPER})
    p2 = make.project(namespace=child, path="p2")
    outside = make.project(owner=other, path="outside")
    db.add(ProjectGroupLink(project_id=outside.id, group_id=child.id, group_access=DEVELOPER))
    db.add(GroupCustomAttribute(namespace_id=child.id, key="k", value="v"))
    db.commit()
    ids, project_ids = [top.id, child.id], [p1.id, p2.id]
    r = api(u).delete(f"/groups/{top.id}")
    assert (r.status_code, r.json()) == (202, {"message": "202 Accepted"})
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Namespace).where(Namespace.id.in_(ids))) == 0
    assert db.scalars(select(Project.id).where(Project.id.in_(project_ids))).all() == []
    assert db.scalars(select(Member.id).where(Member.namespace_id.in_(ids))).all() == []
    assert db.scalars(select(Member.id).where(Member.project_id.in_(project_ids))).all() == []
    assert db.scalars(select(ProjectGroupLink.id)).all() == []
    assert db.scalars(select(GroupCustomAttribute.id)).all() == []
    assert db.get(Project, outside.id) is not None
    queued = db.execute(select(Job.kind, Job.payload).order_by(Job.id)).all()
    removals = sorted(payload["project_id"] for kind, payload in queued if kind == "projects.remove_files")
    assert removals == sorted(project_ids)
    assert [(k, sorted(p["namespace_ids"])) for k, p in queued if k == "groups.remove_files"] == [
        ("groups.remove_files", sorted(ids))
    ]
    assert api(u).get(f"/groups/{ids[0]}").status_code == 404


def test_queued_jobs_remove_the_repositories_of_a_deleted_group(api, make, settings, drain):
    u = make.user()
    g = make.group(path="g", owners=[u])
    p = make.project(namespace=g)
    repo = repository_path(settings.data_dir / "repositories", p.id)
    repo.mkdir(parents=True)
    (repo / "HEAD").write_text("ref: refs/heads/main\n")
    assert api(u).delete(f"/groups/{g.id}").status_code == 202
    assert repo.exists()  # nothing leaves before the job runs
    assert drain() >= 2
    assert not repo.exists()


def test_delete_is_403_for_a_maintainer(api, make, db):
    u = make.user()
    g = make.group(path="g", members={u: MAINTAINER})
    r = api(u).delete(f"/groups/{g.id}")
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert db.get(Namespace, g.id) is not None


def test_delete_of_a_hidden_group_is_404(api, make):
    g = make.group(path="g")
    r = api(make.user()).delete(f"/groups/{g.id}")
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_delete_of_a_subgroup_keeps_the_parent(api, make, db):
    u = make.user()
    top = make.group(path="top", owners=[u])
    child_id = make.group(path="child", parent=top).id
    assert api(u).delete("/groups/top%2Fchild").status_code == 202
    db.expire_all()
    assert (db.get(Namespace, child_id), db.get(Namespace, top.id) is not None) == (None, True)


def test_delete_with_an_adjourned_period_marks_the_group(api, make, db):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    g = make.group(path="g", owners=[u])
    assert api(u).delete(f"/groups/{g.id}").status_code == 202
    body = api(u).get(f"/groups/{g.id}").json()
    assert body["marked_for_deletion_on"] == date.today().isoformat()
    r = api(u).delete(f"/groups/{g.id}")
    assert (r.status_code, r.json()) == (400, {"message": "Group has been already marked for deletion"})
    assert db.scalars(select(Job.kind)).all() == ["groups.destroy_adjourned"]


@pytest.mark.committing
def test_a_delete_that_read_the_group_before_another_marked_it_is_refused_as_a_second(api, make, db, runtime):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    g = make.group(path="g", owners=[u])
    db.commit()
    actor = Actor(user=row_by_id(db, u.id), via="personal_access_token", scopes=None)
    with runtime.sessions() as second:
        assert second.get(Namespace, g.id).marked_for_deletion_on is None  # read before the first DELETE
        assert api(u).delete(f"/groups/{g.id}").status_code == 202

        with pytest.raises(BadRequest) as refused:
            groups.delete_group(second, actor, str(g.id))

    db.rollback()  # a fresh read
    assert refused.value.body() == {"message": "Group has been already marked for deletion"}
    assert db.scalars(select(Job.kind)).all() == ["groups.destroy_adjourned"]


def test_restore_unmarks_a_group(api, make, db):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    g = make.group(path="g", owners=[u])
    api(u).delete(f"/groups/{g.id}")
    r = api(u).post(f"/groups/{g.id}/restore")
    assert (r.status_code, r.json()["marked_for_deletion_on"]) == (201, None)
    r = api(u).post(f"/groups/{g.id}/restore")
    assert (r.status_code, r.json()) == (400, {"message": "Group has not been marked for deletion"})


def test_permanently_remove_needs_a_marked_subgroup_and_its_full_path(api, make, db):
    instance_settings.update(db, {"deletion_adjourned_period": 7})
    u = make.user()
    top = make.group(path="top", owners=[u])
    child = make.group(path="child", parent=top)
    r = api(u).delete(f"/groups/{top.id}?permanently_remove=true")
    assert (r.status_code, r.json()) == (
        400,
        {"message": "`permanently_remove` option is only available for subgroups."},
    )
    r = api(u).delete(f"/groups/{child.id}?permanently_remove=true&full_path=top/child")
    assert (r.status_code, r.json()) == (400, {"message": "Group must be marked for deletion first."})
    api(u).delete(f"/groups/{child.id}")
    r = api(u).delete(f"/groups/{child.id}?permanently_remove=true&full_path=top/wrong")
    assert (r.status_code, r.json()) == (
        400,
        {"message": "`full_path` is incorrect. You must enter the complete path for the subgroup."},
    )
    child_id = child.id
    r = api(u).delete(f"/groups/{child_id}?permanently_remove=true&full_path=top/child")
    assert r.status_code == 202
    db.expire_all()
    assert db.get(Namespace, child_id) is None


# ---------------------------------------------------------------------------- subgroups


def test_subgroups_lists_direct_children_only(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    child = make.group(path="child", parent=top)
    make.group(path="grand", parent=child)
    make.group(path="sibling", parent=top)
    r = api(u).get(f"/groups/{top.id}/subgroups")
    assert (r.status_code, names(r)) == (200, ["child", "sibling"])
    assert r.headers["X-Total"] == "2"


def test_descendant_groups_lists_every_level(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    child = make.group(path="child", parent=top)
    make.group(path="grand", parent=child)
    r = api(u).get("/groups/top/descendant_groups")
    assert (r.status_code, names(r)) == (200, ["child", "grand"])


@pytest.mark.parametrize(("route", "below"), [("subgroups", ["b1"]), ("descendant_groups", ["b1", "b2"])])
def test_the_same_subgroup_list_of_two_parents_shows_each_its_own(api, make, route, below):
    """One statement serves every parent; the third run is compiled, and still the parent's."""
    ada, bob = make.user(), make.user()
    adas = make.group(path="adas", owners=[ada])
    make.group(path="a1", parent=adas)
    bobs = make.group(path="bobs", owners=[bob])
    make.group(path="b2", parent=make.group(path="b1", parent=bobs))
    for caller, top, own in ((ada, adas, ["a1"]), (bob, bobs, below), (ada, adas, ["a1"])):
        assert names(api(caller).get(f"/groups/{top.id}/{route}")) == own


def test_anonymous_subgroups_are_the_public_ones(api, make):
    top = make.group(path="top", visibility="public")
    make.group(path="open", parent=top, visibility="public")
    make.group(path="closed", parent=top, visibility="private")
    assert names(api().get(f"/groups/{top.id}/subgroups")) == ["open"]


def test_subgroups_of_a_hidden_group_is_404(api, make):
    top = make.group(path="top")
    r = api(make.user()).get(f"/groups/{top.id}/subgroups")
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_subgroups_search_filter(api, make):
    u = make.user()
    top = make.group(path="top", owners=[u])
    make.group(path="backend", parent=top)
    make.group(path="frontend", parent=top)
    assert names(api(u).get(f"/groups/{top.id}/subgroups?search=back")) == ["backend"]


# ---------------------------------------------------------------------------- GET /groups/:id/projects


def test_group_projects_lists_projects_in_the_group(api, make):
    u = make.user()
    g = make.group(path="g", owners=[u])
    first = make.project(namespace=g, path="first")
    second = make.project(namespace=g, path="second")
    sub = make.group(path="sub", parent=g)
    make.project(namespace=sub, path="deep")
    r = api(u).get(f"/groups/{g.id}/projects")
    assert (r.status_code, [p["id"] for p in r.json()]) == (200, [second.id, first.id])
    assert r.headers["X-Total"] == "2"
    assert "permissions" not in r.json()[0]
    assert "_links" in r.json()[0]


def test_group_projects_include_subgroups(api, make):
    u = make.user()
    g = make.group(path="g", owners=[u])
    sub = make.group(path="sub", parent=g)
    make.project(namespace=g, path="top-level")
    make.project(namespace=sub, path="deep")
    r = api(u).get(f"/groups/{g.id}/projects?include_subgroups=true&order_by=path&sort=asc")
    assert [p["path_with_namespace"] for p in r.json()] == ["g/sub/deep", "g/top-level"]


def test_group_projects_include_shared_projects_unless_asked_not_to(api, make, db):
    u = make.user()
    g = make.group(path="g", owners=[u])
    make.project(namespace=g, path="own")
    other = make.group(path="other", visibility="public")
    shared = make.project(namespace=other, path="shared", visibility="public")
    db.add(ProjectGroupLink(project_id=shared.id, group_id=g.id, group_access=DEVELOPER))
    db.commit()
    paths = [p["path"] for p in api(u).get(f"/groups/{g.id}/projects?order_by=path&sort=asc").json()]
    assert paths == ["own", "shared"]
    assert [p["path"] for p in api(u).get(f"/groups/{g.id}/projects?with_shared=false").json()] == ["own"]


def test_group_projects_of_each_group_run_one_kept_statement_per_shape(api, make, db):
    """The group is a value of the list's statement: two groups' lists, with their subgroups,
    ancestors and shares, answer their own projects and keep no statement of their own."""
    u = make.user()
    paths: dict[int, list[str]] = {}
    for name in ("a", "b"):
        top = make.group(path=f"{name}-top", owners=[u])
        g = make.group(path=f"{name}", parent=top, owners=[u])
        sub = make.group(path="sub", parent=g)
        make.project(namespace=top, path="above")
        make.project(namespace=g, path="own")
        make.project(namespace=sub, path="deep")
        outside = make.project(namespace=make.group(path=f"{name}-out", owners=[u]), path="shared")
        db.add(ProjectGroupLink(project_id=outside.id, group_id=g.id, group_access=DEVELOPER))
        db.commit()
        paths[g.id] = [
            f"{name}-out/shared",
            f"{name}-top/{name}/own",
            f"{name}-top/{name}/sub/deep",
            f"{name}-top/above",
        ]
    asked = "order_by=path&sort=asc&include_subgroups=true&include_ancestor_groups=true"
    shapes = None
    for gid, expected in [*paths.items(), *paths.items()]:
        r = api(u).get(f"/groups/{gid}/projects?{asked}")
        assert sorted(p["path_with_namespace"] for p in r.json()) == sorted(expected)
        shapes = shapes or len(project_queries._LISTINGS._built)
    assert len(project_queries._LISTINGS._built) == shapes


def test_group_projects_hide_private_projects_from_outsiders(api, make):
    g = make.group(path="g", visibility="public")
    make.project(namespace=g, path="open", visibility="public")
    make.project(namespace=g, path="closed", visibility="private")
    r = api().get(f"/groups/{g.id}/projects")
    assert [p["path"] for p in r.json()] == ["open"]


def test_group_projects_simple_view(api, make):
    g = make.group(path="g", visibility="public")
    make.project(namespace=g, path="open", visibility="public")
    project = api().get(f"/groups/{g.id}/projects?simple=true").json()[0]
    assert "_links" not in project
    assert project["path_with_namespace"] == "g/open"


def test_group_projects_of_a_hidden_group_is_404(api, make):
    g = make.group(path="g")
    r = api(make.user()).get(f"/groups/{g.id}/projects")
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


def test_group_projects_are_paginated(api, make):
    g = make.group(path="g", visibility="public")
    for n in range(3):
        make.project(namespace=g, path=f"p{n}", visibility="public")
    r = api().get(f"/groups/{g.id}/projects?per_page=2&order_by=id&sort=asc")
    assert [p["path"] for p in r.json()] == ["p0", "p1"]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")


# ---------------------------------------------------------------------------- transfer


def test_transfer_moves_a_group_under_another(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    b = make.group(path="b", owners=[u])
    child = make.group(path="child", parent=a)
    make.group(path="grand", parent=child)
    r = api(u).post(f"/groups/{child.id}/transfer", json={"group_id": b.id})
    body = r.json()
    assert (r.status_code, body["full_path"], body["parent_id"]) == (201, "b/child", b.id)
    assert api(u).get("/groups/b%2Fchild%2Fgrand").status_code == 200
    assert names(api(u).get(f"/groups/{b.id}/descendant_groups")) == ["child", "grand"]
    assert names(api(u).get(f"/groups/{a.id}/descendant_groups")) == []


def test_transfer_without_group_id_makes_a_top_level_group(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    child = make.group(path="child", parent=a)
    r = api(u).post(f"/groups/{child.id}/transfer")
    assert (r.status_code, r.json()["full_path"], r.json()["parent_id"]) == (201, "child", None)


def test_transfer_of_a_root_group_to_the_top_is_400(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    r = api(u).post(f"/groups/{a.id}/transfer", json={})
    assert (r.status_code, r.json()) == (400, {"message": "Transfer failed: Group is already a root group."})


def test_transfer_into_own_subgroup_is_400(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    child = make.group(path="child", parent=a)
    r = api(u).post(f"/groups/{a.id}/transfer", json={"group_id": child.id})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Transfer failed: Cannot transfer group to one of its subgroup."},
    )


def test_transfer_needs_subgroup_creation_rights_on_the_target(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    target = make.group(path="target", members={u: DEVELOPER})
    r = api(u).post(f"/groups/{a.id}/transfer", json={"group_id": target.id})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Transfer failed: You don't have enough permissions."},
    )


def test_transfer_to_a_parent_with_the_same_path_is_400(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    b = make.group(path="b", owners=[u])
    make.group(path="dup", parent=b)
    dup = make.group(path="dup", parent=a)
    r = api(u).post(f"/groups/{dup.id}/transfer", json={"group_id": b.id})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "Transfer failed: The parent group already has a subgroup or a project with the same path."
        },
    )


def test_transfer_lowers_visibility_to_the_new_parent(api, make, db):
    u = make.user()
    a = make.group(path="a", owners=[u], visibility="public")
    child = make.group(path="child", parent=a, visibility="public")
    p = make.project(namespace=child, visibility="public")
    b = make.group(path="b", owners=[u], visibility="private")
    r = api(u).post(f"/groups/{child.id}/transfer", json={"group_id": b.id})
    assert (r.status_code, r.json()["visibility"]) == (201, "private")
    db.expire_all()
    assert db.get(Project, p.id).visibility == "private"


def test_transfer_is_403_for_a_maintainer(api, make):
    u = make.user()
    a = make.group(path="a", members={u: MAINTAINER})
    r = api(u).post(f"/groups/{a.id}/transfer")
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_transfer_to_a_hidden_group_is_404(api, make):
    u = make.user()
    a = make.group(path="a", owners=[u])
    hidden = make.group(path="hidden")
    r = api(u).post(f"/groups/{a.id}/transfer", json={"group_id": hidden.id})
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


@pytest.mark.parametrize("path", ["/groups/1x/subgroups", "/groups/%2F/projects"])
def test_odd_identifiers_are_404(api, path):
    r = api("root").get(path)
    assert (r.status_code, r.json()) == (404, GROUP_NOT_FOUND)


# ---------------------------------------------------------------------------- query budget


@pytest.mark.parametrize(
    "path",
    [
        "/groups?all_available=true&statistics=true&with_custom_attributes=true&per_page=3",
        "/groups/top/subgroups?per_page=3",
        "/groups/top/descendant_groups?per_page=3",
        "/groups/top/projects?include_subgroups=true&per_page=3",
        "/groups/top",
    ],
)
def test_lists_cost_the_same_whatever_their_length(api, make, db, runtime, path):
    u = make.admin()
    top = make.group(path="top", owners=[u])

    def grow(n: int) -> None:
        for _ in range(n):
            sub = make.group(parent=top, visibility="public")
            make.project(namespace=sub, visibility="public")
            make.project(namespace=top, visibility="public")
            db.add(GroupCustomAttribute(namespace_id=sub.id, key="k", value="v"))
        db.commit()

    grow(4)
    few = count(runtime, lambda: api(u).get(path))
    grow(10)
    assert count(runtime, lambda: api(u).get(path)) == few


def test_a_deleted_groups_id_is_never_handed_out_again(api, make):
    """The id itself is what is tested: GitLab never reuses one, and clients hold them, so a
    new group must not take the id of the newest deleted one."""
    u = make.user()
    first = make.group(path="first", owners=[u])
    assert api(u).delete(f"/groups/{first.id}").status_code == 202
    second = api("root").post("/groups", json={"name": "second", "path": "second"}).json()
    assert second["id"] > first.id
