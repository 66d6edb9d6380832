"""Project badges: GitLab's Project Badges API, one rule per test. A project shows its own
badges and those of its group and every group above it, rendered for the project."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from kiln.models.namespaces import DEVELOPER, MAINTAINER

LINK = "https://example.com/%{project_path}/-/commits/%{default_branch}"
IMAGE = "https://example.com/%{project_id}/%{commit_sha}.svg"
BODY = {"link_url": "https://e.com/l", "image_url": "https://e.com/i.svg"}
CHANGED = {"link_url": "https://e.com/changed", "image_url": "https://e.com/changed.svg"}


def badges_url(project, badge_id: int | str | None = None) -> str:
    base = f"/projects/{project.id}/badges"
    return base if badge_id is None else f"{base}/{badge_id}"


def add(api, caller, url: str, **body):
    r = api(caller).post(url, json={**BODY, **body})
    assert r.status_code == 201, r.text
    return r.json()


# ----------------------------------------------------------------------------- own badges


def test_maintainer_adds_a_badge(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    r = api(u).post(badges_url(p), json={**BODY, "name": "Docs"})
    assert r.status_code == 201
    created = r.json()
    assert created == {
        "name": "Docs",
        "id": created["id"],
        "link_url": BODY["link_url"],
        "image_url": BODY["image_url"],
        "rendered_link_url": BODY["link_url"],
        "rendered_image_url": BODY["image_url"],
        "kind": "project",
    }


def test_placeholders_are_filled_from_the_project(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u, members={u: MAINTAINER})
    head = make.commit(p, {"x.txt": "x"}, branch=p.default_branch)
    created = add(api, u, badges_url(p), link_url=LINK, image_url=IMAGE)
    assert (
        created["rendered_link_url"]
        == f"https://example.com/{u.username}/{p.path}/-/commits/{p.default_branch}"
    )
    assert created["rendered_image_url"] == f"https://example.com/{p.id}/{head}.svg"


def test_an_empty_repository_fills_its_commit_with_nothing(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    created = add(api, u, badges_url(p), image_url=IMAGE)
    assert created["rendered_image_url"] == f"https://example.com/{p.id}/.svg"


def test_required_urls(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    r = api(u).post(badges_url(p), json={"image_url": BODY["image_url"]})
    assert (r.status_code, r.json()) == (400, {"error": "link_url is missing"})
    assert api(u).get(badges_url(p)).json() == []


def test_url_validation(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    r = api(u).post(badges_url(p), json={**BODY, "link_url": "gopher://e.com"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"link_url": ["is blocked: Only allowed schemes are http, https"]}},
    )
    assert api(u).get(badges_url(p)).json() == []


def test_get_update_and_delete_a_project_badge(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    created = add(api, u, badges_url(p), name="a")
    assert api(u).get(badges_url(p, created["id"])).json() == created
    r = api(u).put(badges_url(p, created["id"]), json={"name": "b", "image_url": "https://e.com/new.svg"})
    assert (r.status_code, r.json()["name"], r.json()["image_url"]) == (200, "b", "https://e.com/new.svg")
    assert api(u).delete(badges_url(p, created["id"])).status_code == 204
    r = api(u).get(badges_url(p, created["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 Badge Not Found"})


def test_render(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    r = api(u).get(f"{badges_url(p)}/render", params={"link_url": LINK, "image_url": BODY["image_url"]})
    assert r.status_code == 200
    assert r.json()["rendered_link_url"] == f"https://example.com/{u.username}/{p.path}/-/commits/"
    assert set(r.json()) == {"link_url", "rendered_link_url", "image_url", "rendered_image_url"}


# ----------------------------------------------------------------------------- authorization


def test_a_private_project_is_404_to_a_non_member(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    created = add(api, u, badges_url(p))
    outsider = make.user()
    for r in (
        api(outsider).get(badges_url(p)),
        api(outsider).get(badges_url(p, created["id"])),
        api(outsider).post(badges_url(p), json=BODY),
        api(outsider).put(badges_url(p, created["id"]), json=CHANGED),
        api(outsider).delete(badges_url(p, created["id"])),
        api(outsider).get(f"{badges_url(p)}/render", params=BODY),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert [b["link_url"] for b in api(u).get(badges_url(p)).json()] == [created["link_url"]]


@pytest.mark.parametrize("level", [10, 20, DEVELOPER])
def test_managing_project_badges_takes_a_maintainer(api, make, level):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    created = add(api, u, badges_url(p))
    member = make.user()
    make.member(p, member, level)
    assert api(member).get(badges_url(p)).status_code == 200
    for r in (
        api(member).post(badges_url(p), json=BODY),
        api(member).put(badges_url(p, created["id"]), json=CHANGED),
        api(member).delete(badges_url(p, created["id"])),
        api(member).get(f"{badges_url(p)}/render", params=BODY),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert [b["link_url"] for b in api(u).get(badges_url(p)).json()] == [created["link_url"]]


def test_a_group_maintainer_manages_the_projects_badges(api, make):
    m = make.user()
    g = make.group(members={m: MAINTAINER})
    p = make.project(namespace=g)
    assert add(api, m, badges_url(p))["kind"] == "project"


def test_anyone_reads_the_badges_of_a_public_project(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER}, visibility="public")
    created = add(api, u, badges_url(p))
    assert [b["id"] for b in api().get(badges_url(p)).json()] == [created["id"]]
    assert api().post(badges_url(p), json=BODY).status_code == 401


# ----------------------------------------------------------------------------- hostile names


def host_of(url: str) -> str | None:
    return urlsplit(url).hostname


@pytest.mark.parametrize("tag", ["@evil.com", "-x.evil.com", "x@evil.com/y", "a#@evil.com"])
def test_a_tag_name_cannot_move_a_badge_to_another_host(api, make, tag):
    u = make.user()
    p = make.project_with_repository(owner=u, members={u: MAINTAINER})
    sha = make.commit(p, {"x.txt": "x"}, branch=p.default_branch)
    make.tag(p, tag, sha)
    link = "https://docs.example.com%{latest_tag}/release"
    image = "https://img.example.com/%{latest_tag}.svg"
    created = add(api, u, badges_url(p), link_url=link, image_url=image)
    assert created["rendered_link_url"] == link
    assert host_of(created["rendered_image_url"]) == "img.example.com"
    # In the path the name goes in as GitLab puts it.
    assert created["rendered_image_url"] == f"https://img.example.com/{tag}.svg"
    listed = api(u).get(badges_url(p)).json()[0]
    assert (host_of(listed["rendered_link_url"]), host_of(listed["rendered_image_url"])) == (
        "docs.example.com%{latest_tag}",
        "img.example.com",
    )


def test_a_default_branch_name_cannot_move_a_badge_to_another_host(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u, members={u: MAINTAINER}, default_branch="@evil.com")
    r = api(u).get(
        f"{badges_url(p)}/render",
        params={"link_url": "https://ci.example.com%{default_branch}", "image_url": IMAGE},
    )
    assert r.status_code == 200
    assert r.json()["rendered_link_url"] == "https://ci.example.com%{default_branch}"
    assert host_of(r.json()["rendered_link_url"]) != "evil.com"


def test_a_plain_name_still_fills_a_placeholder_in_the_host(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u, members={u: MAINTAINER})
    sha = make.commit(p, {"x.txt": "x"}, branch=p.default_branch)
    make.tag(p, "v2", sha)
    created = add(api, u, badges_url(p), link_url="https://%{latest_tag}-docs.example.com/%{latest_tag}")
    assert created["rendered_link_url"] == "https://v2-docs.example.com/v2"
