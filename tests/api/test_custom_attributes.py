"""Custom attributes of users, groups and projects (admin only), and the list filters and
views that read them."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from sqlalchemy import select

from kiln.db import transaction
from kiln.models import GroupCustomAttribute, ProjectCustomAttribute, UserCustomAttribute
from tests.bodies import FORBIDDEN, UNAUTHORIZED

KINDS = ["users", "groups", "projects"]
MODELS = {
    "users": (UserCustomAttribute, "user_id"),
    "groups": (GroupCustomAttribute, "namespace_id"),
    "projects": (ProjectCustomAttribute, "project_id"),
}
MISSING = {
    "users": "404 User Not Found",
    "groups": "404 Group Not Found",
    "projects": "404 Project Not Found",
}
ATTRIBUTE_NOT_FOUND = {"message": "404 Custom Attribute Not Found"}
# (method, path below the resource, JSON body) for each of the four routes.
ROUTES = [
    ("GET", "/custom_attributes", None),
    ("GET", "/custom_attributes/color", None),
    ("PUT", "/custom_attributes/color", {"value": "red"}),
    ("DELETE", "/custom_attributes/color", None),
]


def subject(make, kind):
    """A fresh user, group or project: its id."""
    if kind == "users":
        return make.user().id
    if kind == "groups":
        return make.group().id
    return make.project().id


def give(db, kind, owner_id, **pairs):
    model, column = MODELS[kind]
    with transaction(db):
        for key, value in pairs.items():
            db.add(model(**{column: owner_id, "key": key, "value": value}))


def stored(db, kind, owner_id):
    model, column = MODELS[kind]
    db.expire_all()
    rows = db.execute(
        select(model.key, model.value).where(getattr(model, column) == owner_id).order_by(model.id)
    )
    return [tuple(r) for r in rows]


def call(caller, method, path, body):
    return caller.request(method, path, json=body) if body is not None else caller.request(method, path)


@pytest.mark.parametrize("kind", KINDS)
def test_list_returns_the_attributes_sorted_by_key(api, make, db, kind):
    owner = subject(make, kind)
    give(db, kind, owner, zone="eu", color="red", mode="fast")
    give(db, kind, subject(make, kind), other="x")
    r = api("root").get(f"/{kind}/{owner}/custom_attributes")
    assert (r.status_code, r.json()) == (
        200,
        [{"key": "color", "value": "red"}, {"key": "mode", "value": "fast"}, {"key": "zone", "value": "eu"}],
    )


@pytest.mark.parametrize("kind", KINDS)
def test_list_is_empty_without_attributes(api, make, kind):
    r = api("root").get(f"/{kind}/{subject(make, kind)}/custom_attributes")
    assert (r.status_code, r.json()) == (200, [])


@pytest.mark.parametrize("kind", KINDS)
def test_get_returns_one_attribute(api, make, db, kind):
    owner = subject(make, kind)
    give(db, kind, owner, color="red", zone="eu")
    r = api("root").get(f"/{kind}/{owner}/custom_attributes/zone")
    assert (r.status_code, r.json()) == (200, {"key": "zone", "value": "eu"})


@pytest.mark.parametrize("kind", KINDS)
def test_get_of_an_unknown_key_is_404(api, make, db, kind):
    owner = subject(make, kind)
    give(db, kind, subject(make, kind), color="red")  # the key belongs to someone else
    r = api("root").get(f"/{kind}/{owner}/custom_attributes/color")
    assert (r.status_code, r.json()) == (404, ATTRIBUTE_NOT_FOUND)


@pytest.mark.parametrize("kind", KINDS)
def test_put_creates_the_attribute(api, make, db, kind):
    owner = subject(make, kind)
    r = api("root").put(f"/{kind}/{owner}/custom_attributes/color", json={"value": "red"})
    assert (r.status_code, r.json()) == (200, {"key": "color", "value": "red"})
    assert stored(db, kind, owner) == [("color", "red")]


@pytest.mark.parametrize("kind", KINDS)
def test_put_replaces_the_value_of_an_existing_key(api, make, db, kind):
    owner = subject(make, kind)
    give(db, kind, owner, color="red", zone="eu")
    r = api("root").put(f"/{kind}/{owner}/custom_attributes/color", data={"value": "blue"})
    assert (r.status_code, r.json()) == (200, {"key": "color", "value": "blue"})
    assert stored(db, kind, owner) == [("color", "blue"), ("zone", "eu")]


@pytest.mark.parametrize("kind", KINDS)
def test_put_without_value_is_400(api, make, db, kind):
    owner = subject(make, kind)
    r = api("root").put(f"/{kind}/{owner}/custom_attributes/color", json={})
    assert (r.status_code, r.json()) == (400, {"error": "value is missing"})
    assert stored(db, kind, owner) == []


@pytest.mark.parametrize("kind", KINDS)
def test_put_with_a_blank_value_is_400(api, make, db, kind):
    owner = subject(make, kind)
    r = api("root").put(f"/{kind}/{owner}/custom_attributes/color", json={"value": ""})
    assert (r.status_code, r.json()) == (400, {"message": {"value": ["can't be blank"]}})
    assert stored(db, kind, owner) == []


@pytest.mark.parametrize("kind", KINDS)
def test_put_with_a_key_over_255_characters_is_400(api, make, db, kind):
    owner = subject(make, kind)
    r = api("root").put(f"/{kind}/{owner}/custom_attributes/{'k' * 256}", json={"value": "v"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"key": ["is too long (maximum is 255 characters)"]}},
    )
    assert stored(db, kind, owner) == []


@pytest.mark.parametrize("kind", KINDS)
def test_delete_removes_the_attribute(api, make, db, kind):
    owner = subject(make, kind)
    give(db, kind, owner, color="red", zone="eu")
    r = api("root").delete(f"/{kind}/{owner}/custom_attributes/color")
    assert (r.status_code, r.content) == (204, b"")
    assert stored(db, kind, owner) == [("zone", "eu")]


@pytest.mark.parametrize("kind", KINDS)
def test_delete_of_an_unknown_key_is_404(api, make, kind):
    r = api("root").delete(f"/{kind}/{subject(make, kind)}/custom_attributes/color")
    assert (r.status_code, r.json()) == (404, ATTRIBUTE_NOT_FOUND)


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("kind", KINDS)
def test_non_admins_are_forbidden(api, make, db, kind, method, path, body):
    owner = subject(make, kind)
    give(db, kind, owner, color="red")
    r = call(api(make.user()), method, f"/{kind}/{owner}{path}", body)
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert stored(db, kind, owner) == [("color", "red")]


@pytest.mark.parametrize("kind", KINDS)
def test_non_admins_are_forbidden_before_parameters_and_lookup_are_checked(api, make, kind):
    r = api(make.user()).put(f"/{kind}/999999/custom_attributes/color", json={})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_owners_of_a_group_or_project_are_still_forbidden(api, make):
    owner = make.user()
    group = make.group(owners=[owner])
    project = make.project(owner=owner)
    for path in (f"/groups/{group.id}/custom_attributes", f"/projects/{project.id}/custom_attributes"):
        r = api(owner).get(path)
        assert (r.status_code, r.json()) == (403, FORBIDDEN), path


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("kind", KINDS)
def test_anonymous_callers_are_unauthorized(api, make, db, kind, method, path, body):
    owner = subject(make, kind)
    give(db, kind, owner, color="red")
    r = call(api(), method, f"/{kind}/{owner}{path}", body)
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    assert stored(db, kind, owner) == [("color", "red")]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
@pytest.mark.parametrize("kind", KINDS)
def test_an_unknown_resource_is_404(api, kind, method, path, body):
    r = call(api("root"), method, f"/{kind}/999999{path}", body)
    assert (r.status_code, r.json()) == (404, {"message": MISSING[kind]})


def test_a_user_namespace_is_not_a_group(api, make):
    user = make.user()
    r = api("root").get(f"/groups/{quote(user.username)}/custom_attributes")
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


def test_user_ids_are_numeric(api, make):
    user = make.user()
    r = api("root").get(f"/users/{user.username}/custom_attributes")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_keys_may_hold_slashes_and_percent_signs(api, make, db):
    user = make.user()
    path = f"/users/{user.id}/custom_attributes/{quote('team/a%b c', safe='')}"
    r = api("root").put(path, json={"value": "v"})
    assert (r.status_code, r.json()) == (200, {"key": "team/a%b c", "value": "v"})
    r = api("root").get(path)
    assert (r.status_code, r.json()) == (200, {"key": "team/a%b c", "value": "v"})
    assert stored(db, "users", user.id) == [("team/a%b c", "v")]


def test_groups_and_projects_are_found_by_full_path(api, make, db):
    parent = make.group(path="acme")
    child = make.group(path="tools", parent=parent)
    project = make.project(namespace=child, path="hammer")
    give(db, "groups", child.id, tier="gold")
    give(db, "projects", project.id, tier="silver")
    r = api("root").get(f"/groups/{quote('acme/tools', safe='')}/custom_attributes/tier")
    assert (r.status_code, r.json()) == (200, {"key": "tier", "value": "gold"})
    r = api("root").put(
        f"/projects/{quote('acme/tools/hammer', safe='')}/custom_attributes/tier", json={"value": "x"}
    )
    assert (r.status_code, r.json()) == (200, {"key": "tier", "value": "x"})
    assert stored(db, "projects", project.id) == [("tier", "x")]


def test_a_private_project_is_reachable_by_the_admin(api, make, db):
    project = make.project(owner=make.user(), visibility="private")
    give(db, "projects", project.id, tier="gold")
    r = api("root").get(f"/projects/{project.id}/custom_attributes")
    assert (r.status_code, r.json()) == (200, [{"key": "tier", "value": "gold"}])


# ------------------------------------------------------------------- list filters and views


def test_users_list_filters_by_custom_attributes_for_admins(api, make, db):
    tagged, other, half = make.user(), make.user(), make.user()
    give(db, "users", tagged.id, team="core", site="eu")
    give(db, "users", other.id, team="docs", site="eu")
    give(db, "users", half.id, team="core")
    r = api("root").get("/users", params={"custom_attributes[team]": "core", "custom_attributes[site]": "eu"})
    assert r.status_code == 200
    assert [u["id"] for u in r.json()] == [tagged.id]


def test_users_list_shows_custom_attributes_to_admins_when_asked(api, make, db):
    user = make.user()
    give(db, "users", user.id, team="core", site="eu")
    r = api("root").get("/users", params={"username": user.username, "with_custom_attributes": "true"})
    assert r.status_code == 200
    assert [u["custom_attributes"] for u in r.json()] == [
        [{"key": "site", "value": "eu"}, {"key": "team", "value": "core"}]
    ]


def test_projects_list_filters_by_custom_attributes_for_admins(api, make, db):
    tagged = make.project(visibility="public")
    other = make.project(visibility="public")
    give(db, "projects", tagged.id, tier="gold", zone="eu")
    give(db, "projects", other.id, tier="silver", zone="eu")
    r = api("root").get(
        "/projects", params={"custom_attributes[tier]": "gold", "custom_attributes[zone]": "eu"}
    )
    assert r.status_code == 200
    assert [p["id"] for p in r.json()] == [tagged.id]


def test_projects_list_ignores_the_custom_attributes_filter_of_non_admins(api, make, db):
    tagged = make.project(visibility="public")
    other = make.project(visibility="public")
    give(db, "projects", tagged.id, tier="gold")
    r = api(make.user()).get("/projects", params={"custom_attributes[tier]": "gold", "order_by": "id"})
    assert r.status_code == 200
    assert [p["id"] for p in r.json()] == [other.id, tagged.id]


def test_project_shows_custom_attributes_to_admins_when_asked(api, make, db):
    project = make.project(visibility="public")
    give(db, "projects", project.id, zone="eu", tier="gold")
    r = api("root").get(f"/projects/{project.id}", params={"with_custom_attributes": "true"})
    assert r.status_code == 200
    assert r.json()["custom_attributes"] == [{"key": "tier", "value": "gold"}, {"key": "zone", "value": "eu"}]
    r = api("root").get(f"/projects/{project.id}")
    assert r.status_code == 200
    assert "custom_attributes" not in r.json()


def test_project_hides_custom_attributes_from_non_admins(api, make, db):
    project = make.project(visibility="public")
    give(db, "projects", project.id, tier="gold")
    r = api(make.user()).get(f"/projects/{project.id}", params={"with_custom_attributes": "true"})
    assert r.status_code == 200
    assert "custom_attributes" not in r.json()


def test_groups_list_filters_by_custom_attributes_for_admins(api, make, db):
    tagged = make.group(visibility="public")
    other = make.group(visibility="public")
    give(db, "groups", tagged.id, tier="gold", zone="eu")
    give(db, "groups", other.id, tier="silver", zone="eu")
    r = api("root").get(
        "/groups", params={"custom_attributes[tier]": "gold", "custom_attributes[zone]": "eu"}
    )
    assert r.status_code == 200
    assert [g["id"] for g in r.json()] == [tagged.id]
