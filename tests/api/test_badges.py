"""Badges across groups and projects: a project shows its own badges and those of its group
and every group above it, each with its kind and rendered for the project; a group's badges
stay the group's business."""

from __future__ import annotations

from kiln.models.namespaces import MAINTAINER, OWNER
from tests.api.test_project_badges import BODY, IMAGE, LINK, add, badges_url
from tests.statements import count


def test_list_holds_the_projects_and_its_groups_badges_with_their_kind(api, make):
    owner = make.user()
    top = make.group(owners=[owner], path="top")
    mid = make.group(parent=top, path="mid")
    p = make.project(namespace=mid, path="app")
    unrelated = make.group(owners=[owner])
    top_badge = add(
        api, owner, f"/groups/{top.id}/badges", name="top", link_url="https://e.com/%{project_path}"
    )
    mid_badge = add(api, owner, f"/groups/{mid.id}/badges", name="mid")
    add(api, owner, f"/groups/{unrelated.id}/badges", name="unrelated")
    own = add(api, owner, badges_url(p), name="own")
    listed = api(owner).get(badges_url(p)).json()
    assert [(b["id"], b["kind"]) for b in listed] == [
        (top_badge["id"], "group"),
        (mid_badge["id"], "group"),
        (own["id"], "project"),
    ]
    assert listed[0]["rendered_link_url"] == "https://e.com/top/mid/app"


def test_name_filter_covers_group_badges(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project(namespace=g)
    add(api, owner, f"/groups/{g.id}/badges", name="Coverage")
    add(api, owner, badges_url(p), name="coverage")
    listed = api(owner).get(badges_url(p), params={"name": "Coverage"}).json()
    assert [(b["name"], b["kind"]) for b in listed] == [("Coverage", "group")]


def test_a_group_badge_cannot_be_read_or_changed_through_the_project(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project(namespace=g)
    group_badge = add(api, owner, f"/groups/{g.id}/badges")
    url = badges_url(p, group_badge["id"])
    for r in (
        api(owner).get(url),
        api(owner).put(url, json={"link_url": "https://e.com/other"}),
        api(owner).delete(url),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Badge Not Found"})
    assert api(owner).get(f"/groups/{g.id}/badges/{group_badge['id']}").json()["link_url"] == BODY["link_url"]


def test_a_personal_project_shows_only_its_own_badges(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER})
    own = add(api, u, badges_url(p))
    assert [b["id"] for b in api(u).get(badges_url(p)).json()] == [own["id"]]


def test_a_group_owner_is_needed_for_the_groups_badges_even_through_its_projects(api, make):
    m = make.user()
    g = make.group(members={m: MAINTAINER})
    make.project(namespace=g)
    r = api(m).post(f"/groups/{g.id}/badges", json=BODY)
    assert r.status_code == 403
    owner = make.user()
    make.member(g, owner, OWNER)
    assert add(api, owner, f"/groups/{g.id}/badges")["kind"] == "group"


# ----------------------------------------------------------------------------- statements


def test_list_is_constant_in_badges_and_ancestor_groups(api, make, runtime):
    owner = make.user()
    top = make.group(owners=[owner])
    p = make.project_with_repository(namespace=top, owner=owner)
    make.commit(p, {"y.txt": "y"}, branch=p.default_branch)
    add(api, owner, badges_url(p), link_url=LINK, image_url=IMAGE)
    add(api, owner, f"/groups/{top.id}/badges", link_url=LINK)
    few = count(runtime, lambda: api(owner).get(badges_url(p)))

    parent = top
    for _ in range(4):
        parent = make.group(parent=parent)
        add(api, owner, f"/groups/{parent.id}/badges", link_url=LINK, image_url=IMAGE)
    deep = make.project_with_repository(namespace=parent, owner=owner)
    for _ in range(10):
        add(api, owner, badges_url(deep), link_url=LINK, image_url=IMAGE)
    many = count(runtime, lambda: api(owner).get(badges_url(deep)))
    assert len(api(owner).get(badges_url(deep), params={"per_page": 100}).json()) == 15
    assert few == many
