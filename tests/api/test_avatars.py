"""Avatars of projects and groups: uploaded on create and update (multipart `avatar`),
removed with `avatar=""`, shown as `avatar_url` and served at GitLab's paths to whoever may
see their project or group (GitLab's Projects and Groups APIs, UploadsController)."""

from __future__ import annotations

import pytest

from kiln import storage
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER
from kiln.services import instance_settings
from tests.api.test_users import PNG

BASE = "http://kiln.test"
NOT_SUPPORTED = (
    "file format is not supported. Please try one of the following supported formats: "
    "png, jpg, jpeg, gif, bmp, tiff, ico, webp"
)
TOO_BIG = "is too big (should be at most 200 KiB)"
BIG = PNG + b"\0" * (200 * 1024)


def stored(settings, kind: str, owner_id: int) -> list[str]:
    folder = settings.data_dir / "uploads" / storage.avatar_key(kind, owner_id)
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def every_avatar(settings, kind: str) -> list[str]:
    """Every avatar file of `kind` in the test's storage (temporary files included)."""
    folder = settings.data_dir / "uploads" / "-" / "system" / kind / "avatar"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def project_avatar_url(project_id: int, name: str) -> str:
    return f"{BASE}/uploads/-/system/project/avatar/{project_id}/{name}"


def group_avatar_url(group_id: int, name: str) -> str:
    return f"{BASE}/uploads/-/system/group/avatar/{group_id}/{name}"


# ------------------------------------------------------------------ projects


def test_a_project_created_with_an_avatar_shows_and_serves_it(api, make, client):
    u = make.user()
    r = api(u).post(
        "/projects", data={"name": "pictured", "visibility": "public"}, files={"avatar": ("logo.png", PNG)}
    )
    assert r.status_code == 201, r.text
    url = r.json()["avatar_url"]
    assert url == project_avatar_url(r.json()["id"], "logo.png")
    served = client.get(url)
    assert (served.status_code, served.content) == (200, PNG)
    assert served.headers["content-type"].startswith("image/png")
    assert served.headers["x-content-type-options"] == "nosniff"
    listed = api().get("/projects?search=pictured").json()
    assert [p["avatar_url"] for p in listed] == [url]


def test_an_avatar_is_replaced_by_update_and_the_old_file_goes(api, make, client, settings):
    u = make.user()
    p = make.project(owner=u, visibility="public")
    first = api(u).put(f"/projects/{p.id}", files={"avatar": ("one.png", PNG)})
    assert (first.status_code, first.json()["avatar_url"]) == (200, project_avatar_url(p.id, "one.png"))
    second = api(u).put(f"/projects/{p.id}", files={"avatar": ("two.jpg", PNG)})
    assert second.json()["avatar_url"] == project_avatar_url(p.id, "two.jpg")
    assert stored(settings, "project", p.id) == ["two.jpg"]
    assert client.get(project_avatar_url(p.id, "one.png")).status_code == 404


@pytest.mark.parametrize("how", ["json", "form"])
def test_an_empty_avatar_removes_it(api, make, client, settings, how):
    u = make.user()
    p = make.project(owner=u, visibility="public")
    url = api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)}).json()["avatar_url"]
    kw = {"json": {"avatar": ""}} if how == "json" else {"data": {"avatar": ""}}
    r = api(u).put(f"/projects/{p.id}", **kw)
    assert (r.status_code, r.json()["avatar_url"]) == (200, None)
    assert stored(settings, "project", p.id) == []
    assert client.get(url).status_code == 404


def test_other_settings_leave_the_avatar_alone(api, make):
    u = make.user()
    p = make.project(owner=u)
    url = api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)}).json()["avatar_url"]
    assert api(u).put(f"/projects/{p.id}", json={"description": "d"}).json()["avatar_url"] == url


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("a.txt", PNG, NOT_SUPPORTED),
        ("a.svg", b"<svg/>", NOT_SUPPORTED),
        ("noext", PNG, NOT_SUPPORTED),
        ("big.png", BIG, TOO_BIG),
    ],
)
def test_a_refused_avatar_changes_nothing_and_leaves_no_file(api, make, settings, name, data, message):
    u = make.user()
    p = make.project(owner=u)
    api(u).put(f"/projects/{p.id}", files={"avatar": ("kept.png", PNG)})
    r = api(u).put(f"/projects/{p.id}", data={"description": "changed"}, files={"avatar": (name, data)})
    assert (r.status_code, r.json()) == (400, {"message": {"avatar": [message]}})
    after = api(u).get(f"/projects/{p.id}").json()
    assert after["avatar_url"] == project_avatar_url(p.id, "kept.png")
    assert after["description"] is None
    assert stored(settings, "project", p.id) == ["kept.png"]


def test_a_create_refused_for_its_avatar_makes_no_project(api, make, settings):
    u = make.user()
    r = api(u).post("/projects", data={"name": "refused"}, files={"avatar": ("a.exe", b"MZ")})
    assert (r.status_code, r.json()) == (400, {"message": {"avatar": [NOT_SUPPORTED]}})
    assert api(u).get(f"/projects/{u.username}%2Frefused").status_code == 404
    assert every_avatar(settings, "project") == []


def test_a_create_refused_after_the_avatar_is_written_removes_it(api, make, settings):
    u = make.user()
    make.project(owner=u, path="taken")
    r = api(u).post("/projects", data={"name": "x", "path": "taken"}, files={"avatar": ("a.png", PNG)})
    assert r.status_code == 400
    assert every_avatar(settings, "project") == []


def test_an_avatar_that_is_no_file_is_400(api, make, settings):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).put(f"/projects/{p.id}", json={"avatar": "http://example.com/a.png"})
    assert (r.status_code, r.json()) == (400, {"error": "avatar is invalid"})
    assert api(u).get(f"/projects/{p.id}").json()["avatar_url"] is None
    assert stored(settings, "project", p.id) == []


@pytest.mark.parametrize("level", [GUEST, DEVELOPER])
def test_below_maintainer_an_avatar_may_not_be_changed(api, make, settings, level):
    owner, u = make.user(), make.user()
    p = make.project(owner=owner, members={u: level})
    r = api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api(owner).get(f"/projects/{p.id}").json()["avatar_url"] is None
    assert stored(settings, "project", p.id) == []


def test_a_maintainer_may_change_the_avatar(api, make):
    owner, u = make.user(), make.user()
    p = make.project(owner=owner, members={u: MAINTAINER})
    r = api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)})
    assert (r.status_code, r.json()["avatar_url"]) == (200, project_avatar_url(p.id, "a.png"))
    download = api(owner).get(f"/projects/{p.id}/avatar")
    assert (download.status_code, download.content) == (200, PNG)


@pytest.mark.parametrize(
    ("caller", "status"), [("anonymous", 404), ("stranger", 404), ("guest", 200), ("admin", 200)]
)
def test_a_private_projects_avatar_is_served_only_to_who_may_see_it(api, make, caller, status):
    owner, guest = make.user(), make.user()
    p = make.project(owner=owner, members={guest: GUEST})
    url = api(owner).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)}).json()["avatar_url"]
    who = {"anonymous": None, "stranger": make.user(), "guest": guest, "admin": "root"}[caller]
    assert api(who).get(url.removeprefix(BASE)).status_code == status


def test_an_avatar_url_with_another_name_or_project_is_404(api, make, client):
    u = make.user()
    p = make.project(owner=u, visibility="public")
    api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)})
    assert client.get(f"/uploads/-/system/project/avatar/{p.id}/b.png").status_code == 404
    assert client.get("/uploads/-/system/project/avatar/999999/a.png").status_code == 404


def test_the_project_avatar_is_downloaded_through_the_api(api, make):
    u = make.user()
    p = make.project(owner=u, visibility="public")
    api(u).put(f"/projects/{p.id}", files={"avatar": ("logo.png", PNG)})
    r = api().get(f"/projects/{p.id}/avatar")
    assert (r.status_code, r.content) == (200, PNG)
    assert r.headers["content-disposition"].startswith('attachment; filename="logo.png"')
    assert r.headers["content-type"].startswith("image/png")


def test_a_project_without_avatar_or_hidden_is_404_on_download(api, make):
    u = make.user()
    public = make.project(owner=u, visibility="public")
    hidden = make.project(owner=u)
    r = api().get(f"/projects/{public.id}/avatar")
    assert (r.status_code, r.json()) == (404, {"message": "404 Avatar Not Found"})
    r = api().get(f"/projects/{hidden.id}/avatar")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_deleting_a_project_removes_its_avatar(api, make, settings, drain):
    u = make.user()
    p = make.project(owner=u)
    api(u).put(f"/projects/{p.id}", files={"avatar": ("a.png", PNG)})
    assert api(u).delete(f"/projects/{p.id}").status_code == 202
    drain()
    assert stored(settings, "project", p.id) == []


# ------------------------------------------------------------------ groups


def test_a_group_created_with_an_avatar_shows_and_serves_it(api, make, client):
    u = make.user(can_create_group=True)
    r = api(u).post(
        "/groups",
        data={"name": "pics", "path": "pics", "visibility": "public"},
        files={"avatar": ("g.png", PNG)},
    )
    assert r.status_code == 201, r.text
    gid = r.json()["id"]
    assert r.json()["avatar_url"] == group_avatar_url(gid, "g.png")
    served = client.get(group_avatar_url(gid, "g.png"))
    assert (served.status_code, served.content) == (200, PNG)
    assert [g["avatar_url"] for g in api().get("/groups?search=pics").json()] == [
        group_avatar_url(gid, "g.png")
    ]


def test_a_group_create_refused_for_its_avatar_names_the_error_as_gitlab_does(api, make, settings):
    u = make.user(can_create_group=True)
    r = api(u).post("/groups", data={"name": "nopics", "path": "nopics"}, files={"avatar": ("g.gif", BIG)})
    assert (r.status_code, r.json()) == (
        400,
        {"message": 'Failed to save group {:avatar=>["is too big (should be at most 200 KiB)"]}'},
    )
    assert api(u).get("/groups/nopics").status_code == 404


def test_a_group_create_refused_after_the_avatar_is_written_removes_it(api, make, settings):
    u = make.user(can_create_group=True)
    make.group(path="taken-group")
    r = api(u).post(
        "/groups", data={"name": "taken-group", "path": "taken-group"}, files={"avatar": ("g.png", PNG)}
    )
    assert r.status_code == 400
    assert every_avatar(settings, "group") == []


def test_a_group_avatar_is_replaced_and_removed_by_update(api, make, settings):
    u = make.user()
    g = make.group(owners=[u])
    r = api(u).put(f"/groups/{g.id}", files={"avatar": ("one.png", PNG)})
    assert (r.status_code, r.json()["avatar_url"]) == (200, group_avatar_url(g.id, "one.png"))
    r = api(u).put(f"/groups/{g.id}", files={"avatar": ("two.png", PNG)})
    assert stored(settings, "group", g.id) == ["two.png"]
    r = api(u).put(f"/groups/{g.id}", json={"avatar": ""})
    assert (r.status_code, r.json()["avatar_url"]) == (200, None)
    assert stored(settings, "group", g.id) == []


def test_a_group_update_refused_for_its_avatar_is_a_field_error(api, make, settings):
    u = make.user()
    g = make.group(owners=[u])
    r = api(u).put(f"/groups/{g.id}", files={"avatar": ("g.pdf", b"%PDF")})
    assert (r.status_code, r.json()) == (400, {"message": {"avatar": [NOT_SUPPORTED]}})
    assert stored(settings, "group", g.id) == []


def test_only_group_owners_change_its_avatar(api, make, settings):
    u = make.user()
    g = make.group(members={u: MAINTAINER})
    r = api(u).put(f"/groups/{g.id}", files={"avatar": ("g.png", PNG)})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api(u).get(f"/groups/{g.id}").json()["avatar_url"] is None
    assert stored(settings, "group", g.id) == []


@pytest.mark.parametrize(
    ("caller", "status"), [("anonymous", 404), ("stranger", 404), ("guest", 200), ("admin", 200)]
)
def test_a_private_groups_avatar_is_served_only_to_who_may_see_it(api, make, caller, status):
    owner, guest = make.user(), make.user()
    g = make.group(owners=[owner], members={guest: GUEST})
    url = api(owner).put(f"/groups/{g.id}", files={"avatar": ("g.png", PNG)}).json()["avatar_url"]
    who = {"anonymous": None, "stranger": make.user(), "guest": guest, "admin": "root"}[caller]
    assert api(who).get(url.removeprefix(BASE)).status_code == status
    download = api(who).get(f"/groups/{g.id}/avatar")
    assert download.status_code == status
    if status == 200:
        assert download.content == PNG
        assert download.headers["content-disposition"].startswith('attachment; filename="g.png"')


def test_a_group_without_avatar_is_404_on_download(api, make):
    g = make.group(visibility="public")
    r = api().get(f"/groups/{g.id}/avatar")
    assert (r.status_code, r.json()) == (404, {"message": "404 Avatar Not Found"})


def test_a_group_projects_namespace_shows_the_group_avatar(api, make):
    u = make.user()
    g = make.group(owners=[u])
    url = api(u).put(f"/groups/{g.id}", files={"avatar": ("g.png", PNG)}).json()["avatar_url"]
    p = make.project(namespace=g)
    assert api(u).get(f"/projects/{p.id}").json()["namespace"]["avatar_url"] == url
    assert api(u).get(f"/projects/{p.id}/groups").json()[0]["avatar_url"] == url


def test_deleting_a_group_removes_its_avatar(api, make, db, settings, drain):
    instance_settings.update(db, {"deletion_adjourned_period": 0})
    u = make.user()
    g = make.group(owners=[u])
    api(u).put(f"/groups/{g.id}", files={"avatar": ("g.png", PNG)})
    assert api(u).delete(f"/groups/{g.id}").status_code == 202
    drain()
    assert api("root").get(f"/groups/{g.id}").status_code == 404
    assert stored(settings, "group", g.id) == []


def test_a_fork_gets_its_own_copy_of_the_avatar(api, make, client, settings):
    owner, forker = make.user(), make.user()
    source = make.project(owner=owner, visibility="public")
    api(owner).put(f"/projects/{source.id}", files={"avatar": ("src.png", PNG)})
    r = api(forker).post(f"/projects/{source.id}/fork")
    assert r.status_code == 201, r.text
    fork_id = r.json()["id"]
    assert r.json()["avatar_url"] == project_avatar_url(fork_id, "src.png")
    assert stored(settings, "project", fork_id) == ["src.png"]
    api(owner).put(f"/projects/{source.id}", json={"avatar": ""})
    served = client.get(project_avatar_url(fork_id, "src.png"))
    assert (served.status_code, served.content) == (200, PNG)


def test_a_refused_fork_leaves_no_avatar_copy(api, make, settings):
    owner, forker = make.user(), make.user()
    source = make.project(owner=owner, visibility="public", path="same-path")
    make.project(owner=forker, path="same-path")
    api(owner).put(f"/projects/{source.id}", files={"avatar": ("src.png", PNG)})
    assert api(forker).post(f"/projects/{source.id}/fork").status_code == 409
    assert every_avatar(settings, "project") == [f"{source.id}/src.png"]
