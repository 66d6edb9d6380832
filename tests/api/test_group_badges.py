"""Group badges: GitLab's Group Badges API, one rule per test."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select

from kiln.models import Badge
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER
from tests.statements import count

LINK = "https://example.com/%{project_path}"
IMAGE = "https://shields.example/%{project_id}/%{default_branch}/%{commit_sha}.svg"


def badges_url(group, badge_id: int | str | None = None) -> str:
    base = f"/groups/{group.id}/badges"
    return base if badge_id is None else f"{base}/{badge_id}"


def owned_group(make, **kw):
    owner = make.user()
    return owner, make.group(owners=[owner], **kw)


def add(api, caller, group, **body):
    body = {"link_url": "https://example.com/a", "image_url": "https://example.com/a.svg", **body}
    r = api(caller).post(badges_url(group), json=body)
    assert r.status_code == 201, r.text
    return r.json()


def badge_count(db) -> int:
    return db.scalar(select(func.count()).select_from(Badge))


def stored_links(db) -> list[str]:
    db.expire_all()
    return list(db.scalars(select(Badge.link_url).order_by(Badge.id)))


# ----------------------------------------------------------------------------- creating


@pytest.mark.parametrize("body", ["json", "data"])
def test_owner_adds_a_badge(api, make, body):
    owner, g = owned_group(make)
    r = api(owner).post(
        badges_url(g),
        **{body: {"link_url": "https://example.com/x", "image_url": "https://example.com/x.svg"}},
    )
    assert r.status_code == 201
    created = r.json()
    assert created == {
        "id": created["id"],
        "link_url": "https://example.com/x",
        "image_url": "https://example.com/x.svg",
        "rendered_link_url": "https://example.com/x",
        "rendered_image_url": "https://example.com/x.svg",
        "kind": "group",
    }


def test_link_url_is_required(api, make, db):
    owner, g = owned_group(make)
    r = api(owner).post(badges_url(g), json={"image_url": "https://example.com/x.svg"})
    assert (r.status_code, r.json()) == (400, {"error": "link_url is missing"})
    assert badge_count(db) == 0


def test_image_url_is_required(api, make, db):
    owner, g = owned_group(make)
    r = api(owner).post(badges_url(g), json={"link_url": "https://example.com/x"})
    assert (r.status_code, r.json()) == (400, {"error": "image_url is missing"})
    assert badge_count(db) == 0


def test_name_is_optional_and_listed(api, make):
    owner, g = owned_group(make)
    add(api, owner, g, name="Coverage")
    add(api, owner, g)
    names = [b["name"] for b in api(owner).get(badges_url(g)).json()]
    assert names == ["Coverage", None]


def test_a_url_of_another_scheme_is_refused(api, make, db):
    owner, g = owned_group(make)
    r = api(owner).post(
        badges_url(g), json={"link_url": "ftp://example.com/x", "image_url": "javascript:alert(1)"}
    )
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "link_url": ["is blocked: Only allowed schemes are http, https"],
            "image_url": ["is blocked: Only allowed schemes are http, https"],
        }
    }
    assert badge_count(db) == 0


def test_a_blank_url_is_not_a_valid_url(api, make):
    owner, g = owned_group(make)
    r = api(owner).post(badges_url(g), json={"link_url": "  ", "image_url": "https://example.com/x.svg"})
    assert (r.status_code, r.json()) == (400, {"message": {"link_url": ["must be a valid URL"]}})


def test_a_url_without_host_is_invalid(api, make):
    owner, g = owned_group(make)
    r = api(owner).post(badges_url(g), json={"link_url": "https://", "image_url": "https://e.com/x.svg"})
    assert (r.status_code, r.json()) == (400, {"message": {"link_url": ["is blocked: URI is invalid"]}})


def test_urls_are_kept_without_surrounding_spaces(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g, link_url="  https://example.com/x  ")
    assert created["link_url"] == "https://example.com/x"


# ----------------------------------------------------------------------------- reading


def test_list_is_paginated(api, make):
    owner, g = owned_group(make)
    for _ in range(3):
        add(api, owner, g)
    r = api(owner).get(badges_url(g), params={"per_page": 2})
    assert (r.status_code, len(r.json())) == (200, 2)
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")


def test_list_items_carry_every_field(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g, name="Pipeline")
    assert api(owner).get(badges_url(g)).json() == [
        {
            "name": "Pipeline",
            "id": created["id"],
            "link_url": "https://example.com/a",
            "image_url": "https://example.com/a.svg",
            "rendered_link_url": "https://example.com/a",
            "rendered_image_url": "https://example.com/a.svg",
            "kind": "group",
        }
    ]


def test_name_filter_is_exact_and_case_sensitive(api, make):
    owner, g = owned_group(make)
    add(api, owner, g, name="Coverage")
    add(api, owner, g, name="coverage")
    add(api, owner, g, name="Coverage report")
    listed = api(owner).get(badges_url(g), params={"name": "Coverage"}).json()
    assert [b["name"] for b in listed] == ["Coverage"]


def test_get_one_badge(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g, name="x")
    r = api(owner).get(badges_url(g, created["id"]))
    assert (r.status_code, r.json()) == (200, created)


def test_a_missing_badge_is_404(api, make):
    owner, g = owned_group(make)
    r = api(owner).get(badges_url(g, 999999))
    assert (r.status_code, r.json()) == (404, {"message": "404 Badge Not Found"})


def test_a_badge_of_another_group_is_404(api, make):
    owner, g = owned_group(make)
    other = make.group(owners=[owner])
    created = add(api, owner, other)
    assert api(owner).get(badges_url(g, created["id"])).status_code == 404


def test_a_badge_id_must_be_an_integer(api, make):
    owner, g = owned_group(make)
    r = api(owner).get(badges_url(g, "abc"))
    assert (r.status_code, r.json()) == (400, {"error": "badge_id is invalid"})


def test_the_group_may_be_named_by_its_path(api, make):
    owner, g = owned_group(make)
    add(api, owner, g)
    r = api(owner).get(f"/groups/{g.full_path}/badges")
    assert (r.status_code, len(r.json())) == (200, 1)


# ----------------------------------------------------------------------------- changing


def test_update_changes_only_what_is_given(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g, name="keep")
    r = api(owner).put(badges_url(g, created["id"]), json={"link_url": "https://example.org/new"})
    assert r.status_code == 200
    assert r.json()["link_url"] == "https://example.org/new"
    assert r.json()["image_url"] == created["image_url"]
    listed = api(owner).get(badges_url(g)).json()
    assert [(b["name"], b["link_url"]) for b in listed] == [("keep", "https://example.org/new")]


def test_update_with_an_invalid_url_changes_nothing(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g)
    r = api(owner).put(badges_url(g, created["id"]), json={"image_url": "file:///etc/passwd"})
    assert r.status_code == 400
    assert r.json() == {"message": {"image_url": ["is blocked: Only allowed schemes are http, https"]}}
    assert api(owner).get(badges_url(g, created["id"])).json() == created


def test_update_of_a_missing_badge_is_404(api, make):
    owner, g = owned_group(make)
    r = api(owner).put(badges_url(g, 424242), json={"link_url": "https://example.org"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Badge Not Found"})


def test_delete_removes_the_badge(api, make, db):
    owner, g = owned_group(make)
    created = add(api, owner, g)
    r = api(owner).delete(badges_url(g, created["id"]))
    assert r.status_code == 204
    assert api(owner).get(badges_url(g, created["id"])).status_code == 404
    assert badge_count(db) == 0


def test_deleting_the_group_removes_its_badges(api, make, db):
    owner, g = owned_group(make)
    add(api, owner, g)
    db.delete(g)
    db.commit()
    assert badge_count(db) == 0


# ----------------------------------------------------------------------------- placeholders


def test_placeholders_are_filled_from_the_groups_first_project_by_creation_date(api, make):
    owner, g = owned_group(make)
    make.project(namespace=g, path="newer", created_at=datetime(2024, 5, 1, tzinfo=UTC))
    older = make.project_with_repository(
        namespace=g, path="older", owner=owner, created_at=datetime(2023, 1, 1, tzinfo=UTC)
    )
    head = make.commit(older, {"a.txt": "a"}, branch=older.default_branch)
    created = add(api, owner, g, link_url=LINK, image_url=IMAGE)
    assert created["rendered_link_url"] == f"https://example.com/{g.full_path}/older"
    assert created["rendered_image_url"] == (
        f"https://shields.example/{older.id}/{older.default_branch}/{head}.svg"
    )
    assert created["link_url"] == LINK


def test_without_a_project_the_urls_are_returned_as_written(api, make):
    owner, g = owned_group(make)
    created = add(api, owner, g, link_url=LINK, image_url=IMAGE)
    assert (created["rendered_link_url"], created["rendered_image_url"]) == (LINK, IMAGE)


def test_more_placeholders_as_gitlab_documents_them(api, make):
    owner, g = owned_group(make, path="team")
    p = make.project_with_repository(namespace=g, path="app", name="The App", owner=owner)
    sha = make.commit(p, {"b.txt": "b"}, branch=p.default_branch)
    make.tag(p, "v1.0", sha)
    link = "https://%{gitlab_server}/%{project_name}/%{project_title}/%{group_name}/%{latest_tag}/%{unknown}"
    created = add(api, owner, g, link_url=link)
    assert created["rendered_link_url"] == "https://kiln.test/app/The App/team/v1.0/%{unknown}"


def test_a_project_the_caller_cannot_see_fills_nothing(api, make):
    owner, g = owned_group(make, visibility="public")
    make.project(namespace=g, path="secret", visibility="private")
    add(api, owner, g, link_url=LINK)
    listed = api().get(badges_url(g)).json()
    assert listed[0]["rendered_link_url"] == LINK


def test_render_previews_a_badge_without_storing_it(api, make, db):
    owner, g = owned_group(make)
    p = make.project(namespace=g, path="only")
    r = api(owner).get(
        f"{badges_url(g)}/render", params={"link_url": LINK, "image_url": "https://e.com/b.svg"}
    )
    assert r.status_code == 200
    assert r.json() == {
        "link_url": LINK,
        "rendered_link_url": f"https://example.com/{g.full_path}/{p.path}",
        "image_url": "https://e.com/b.svg",
        "rendered_image_url": "https://e.com/b.svg",
    }
    assert badge_count(db) == 0


def test_render_requires_both_urls(api, make):
    owner, g = owned_group(make)
    r = api(owner).get(f"{badges_url(g)}/render", params={"link_url": LINK})
    assert (r.status_code, r.json()) == (400, {"error": "image_url is missing"})


def test_render_validates_the_urls(api, make):
    owner, g = owned_group(make)
    r = api(owner).get(f"{badges_url(g)}/render", params={"link_url": "nope", "image_url": "https://e.com/b"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"link_url": ["is blocked: Only allowed schemes are http, https"]}},
    )


# ----------------------------------------------------------------------------- authorization


def test_a_private_group_is_404_to_a_non_member(api, make, db):
    owner, g = owned_group(make)
    created = add(api, owner, g)
    outsider = make.user()
    for r in (
        api(outsider).get(badges_url(g)),
        api(outsider).get(badges_url(g, created["id"])),
        api(outsider).post(badges_url(g), json={"link_url": "https://e.com", "image_url": "https://e.com"}),
        api(outsider).delete(badges_url(g, created["id"])),
        api(outsider).get(f"{badges_url(g)}/render", params={"link_url": LINK, "image_url": LINK}),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})
    assert stored_links(db) == [created["link_url"]]


def test_anyone_reads_the_badges_of_a_public_group(api, make):
    owner, g = owned_group(make, visibility="public")
    created = add(api, owner, g)
    assert api().get(badges_url(g)).json()[0]["id"] == created["id"]
    assert api().get(badges_url(g, created["id"])).status_code == 200


def test_a_guest_member_reads_the_badges(api, make):
    owner, g = owned_group(make)
    add(api, owner, g)
    guest = make.user()
    make.member(g, guest, GUEST)
    assert len(api(guest).get(badges_url(g)).json()) == 1


@pytest.mark.parametrize("level", [DEVELOPER, MAINTAINER])
def test_managing_group_badges_takes_an_owner(api, make, db, level):
    owner, g = owned_group(make)
    created = add(api, owner, g)
    member = make.user()
    make.member(g, member, level)
    body = {"link_url": "https://e.com", "image_url": "https://e.com/i"}
    for r in (
        api(member).post(badges_url(g), json=body),
        api(member).put(badges_url(g, created["id"]), json=body),
        api(member).delete(badges_url(g, created["id"])),
        api(member).get(f"{badges_url(g)}/render", params=body),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert stored_links(db) == [created["link_url"]]


def test_an_owner_inherited_from_a_parent_group_manages_badges(api, make):
    owner, parent = owned_group(make)
    child = make.group(parent=parent)
    assert add(api, owner, child)["kind"] == "group"


def test_an_administrator_manages_any_groups_badges(api, make):
    _, g = owned_group(make)
    assert add(api, "root", g)["kind"] == "group"


def test_writes_need_authentication(api, make, db):
    owner, g = owned_group(make, visibility="public")
    created = add(api, owner, g)
    body = {"link_url": "https://e.com", "image_url": "https://e.com/i"}
    assert api().post(badges_url(g), json=body).status_code == 401
    assert api().put(badges_url(g, created["id"]), json=body).status_code == 401
    assert api().delete(badges_url(g, created["id"])).status_code == 401
    assert api().get(f"{badges_url(g)}/render", params=body).status_code == 401
    assert stored_links(db) == [created["link_url"]]


def test_a_read_only_token_cannot_add_badges(api, make, db):
    owner, g = owned_group(make)
    token = make.token(owner, scopes=["read_api"])
    r = api(token).post(badges_url(g), json={"link_url": "https://e.com", "image_url": "https://e.com/i"})
    assert r.status_code == 403
    assert badge_count(db) == 0


# ----------------------------------------------------------------------------- statements


def test_list_costs_the_same_for_few_and_many_badges(api, make, db, runtime):
    owner, g = owned_group(make)
    p = make.project_with_repository(namespace=g, owner=owner)
    make.commit(p, {"c.txt": "c"}, branch=p.default_branch)
    for _ in range(2):
        add(api, owner, g, link_url=LINK, image_url=IMAGE)
    assert len(api(owner).get(badges_url(g)).json()) == 2
    few = count(runtime, lambda: api(owner).get(badges_url(g)))
    for _ in range(15):
        add(api, owner, g, link_url=LINK, image_url=IMAGE)
    many = count(runtime, lambda: api(owner).get(badges_url(g)))
    assert few == many
    assert len(api(owner).get(badges_url(g)).json()) == 17


def test_a_deleted_badges_id_is_never_handed_out_again(api, make):
    owner, group = owned_group(make)
    newest = add(api, owner, group)
    assert api(owner).delete(badges_url(group, newest["id"])).status_code == 204
    assert add(api, owner, group)["id"] > newest["id"]


# ----------------------------------------------------------------------------- hostile names


def test_a_projects_tag_or_branch_name_cannot_move_a_group_badge_to_another_host(api, make):
    owner, g = owned_group(make, path="team")
    p = make.project_with_repository(namespace=g, path="app", owner=owner, default_branch="@evil.com")
    sha = make.commit(p, {"b.txt": "b"}, branch=p.default_branch)
    make.tag(p, "@evil.org", sha)
    link = "https://docs.example.com%{latest_tag}/x"
    image = "https://%{gitlab_server}:443@%{default_branch}/%{latest_tag}.svg"
    created = add(api, owner, g, link_url=link, image_url=image)
    assert created["rendered_link_url"] == link
    assert created["rendered_image_url"] == "https://kiln.test:443@%{default_branch}/@evil.org.svg"
    for url in (created["rendered_link_url"], created["rendered_image_url"]):
        assert urlsplit(url).hostname not in ("evil.com", "evil.org")
    listed = api(owner).get(badges_url(g)).json()[0]
    assert (listed["rendered_link_url"], listed["rendered_image_url"]) == (
        created["rendered_link_url"],
        created["rendered_image_url"],
    )
