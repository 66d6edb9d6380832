"""GET /uploads/-/system/user/avatar/:user_id/:filename: avatars are public files, as GitLab
serves them. Project uploads are tested with the project routes that store and serve them
(tests/api/test_projects.py)."""

from __future__ import annotations

from tests.api.test_users import PNG


def avatar_url(api, user) -> str:
    r = api("root").put(f"/users/{user.id}", files={"avatar": ("face.png", PNG)})
    assert r.status_code == 200
    return r.json()["avatar_url"]


def test_an_avatar_is_served_without_credentials_as_its_image_type(api, make, client):
    url = avatar_url(api, make.user())
    r = client.get(url)
    assert (r.status_code, r.content) == (200, PNG)
    assert r.headers["content-type"].startswith("image/png")
    assert r.headers["x-content-type-options"] == "nosniff"


def test_an_unknown_file_name_is_404(api, make, client):
    url = avatar_url(api, make.user())
    r = client.get(url.replace("/face.png", "/other.png"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_an_avatar_asked_for_under_another_user_is_404(api, make, client):
    owner, other = make.user(), make.user()
    url = avatar_url(api, owner)
    r = client.get(url.replace(f"/avatar/{owner.id}/", f"/avatar/{other.id}/"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_an_avatar_name_longer_than_a_file_system_takes_is_404(api, make, client):
    url = avatar_url(api, make.user())
    r = client.get(url.replace("/face.png", "/" + "x" * 5000 + ".png"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_an_upload_name_longer_than_a_file_system_takes_is_shortened_keeping_its_extension(api, make):
    owner = make.user()
    project = make.project(owner=owner)
    r = api(owner).post(f"/projects/{project.id}/uploads", files={"file": ("é" * 200 + ".png", b"x")})
    assert r.status_code == 201
    name = r.json()["url"].rsplit("/", 1)[1]
    assert (name, len(name.encode())) == ("é" * 125 + ".png", 254)
    served = api(owner).get(r.json()["full_path"])
    assert (served.status_code, served.content, served.headers["content-type"]) == (200, b"x", "image/png")
