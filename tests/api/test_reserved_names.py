"""Reserved names: GitLab's top-level routes, one list for usernames and top-level group
paths, in any letter case; names merely like them are free."""

from __future__ import annotations

import pytest

from kiln.services.namespaces import RESERVED_TOP_LEVEL_ROUTES, reserved_top_level


def new_user(username: str) -> dict[str, str]:
    return {
        "email": f"reserved-{username.lower()}@example.org",
        "name": "N",
        "username": username,
        "password": "secret-123",
    }


@pytest.mark.parametrize("name", ["admin", "API", "Help", "robots.txt", "Sitemap.XML.gz", "v2", "users"])
def test_reserved_username_is_refused(api, name):
    r = api("root").post("/users", data=new_user(name))
    assert (r.status_code, r.json()) == (400, {"message": {"username": [f"{name} is a reserved name"]}})


@pytest.mark.parametrize("name", ["user", "administrator", "apis", "helpdesk", "dashboards"])
def test_names_only_like_a_route_are_free(api, name):
    r = api("root").post("/users", data=new_user(name))
    assert r.status_code == 201, r.text
    assert r.json()["username"] == name


def test_renaming_a_user_to_a_reserved_name_is_refused(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", data={"username": "Explore"})
    assert (r.status_code, r.json()) == (400, {"message": {"username": ["Explore is a reserved name"]}})


@pytest.mark.parametrize("path", ["admin", "Groups", "sitemap.xml"])
def test_reserved_top_level_group_path_is_refused(api, make, path):
    r = api(make.user()).post("/groups", json={"name": "Reserved", "path": path})
    assert r.status_code == 400
    assert r.json() == {"message": f'Failed to save group {{:path=>["{path} is a reserved name"]}}'}


def test_a_subgroup_may_take_a_top_level_route_name(api, make):
    owner = make.user()
    parent = make.group(owners=[owner])
    r = api(owner).post("/groups", json={"name": "Admin", "path": "admin", "parent_id": parent.id})
    assert r.status_code == 201, r.text


def test_one_list_serves_users_and_groups():
    assert reserved_top_level("ADMIN")
    assert reserved_top_level("favicon.ico")
    assert not reserved_top_level("user")
    assert "user" not in RESERVED_TOP_LEVEL_ROUTES
