"""Group labels: a group sees its own labels and its ancestors', and on asking those of the
groups below and of the projects inside; a group's Reporters change them."""

from __future__ import annotations

from urllib.parse import quote

from sqlalchemy import func, select

from kiln.models import Label, LabelLink
from kiln.models.namespaces import GUEST, REPORTER
from tests.statements import count


def group_url(group, label: object | None = None) -> str:
    base = f"/groups/{group.id}/labels"
    return base if label is None else f"{base}/{quote(str(label), safe='')}"


def titles(db, group) -> list[str]:
    db.expire_all()
    return list(db.scalars(select(Label.title).where(Label.group_id == group.id).order_by(Label.title)))


def names(response) -> list[str]:
    return [label["name"] for label in response.json()]


def test_create_answers_the_group_label(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    r = api(owner).post(group_url(g), json={"name": "bug", "color": "#ffffff", "description": "broken"})
    assert r.status_code == 201
    view = r.json()
    assert view == {
        "id": view["id"],
        "name": "bug",
        "color": "#ffffff",
        "description": "broken",
        "description_html": "broken",
        "text_color": "#333333",
        "subscribed": False,
        "archived": False,
    }


def test_a_title_the_group_or_an_ancestor_has_is_a_conflict(api, make, db):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    make.label(group=top, title="bug")
    r = api(owner).post(group_url(sub), json={"name": "bug", "color": "red"})
    assert (r.status_code, r.json()) == (409, {"message": "Label already exists"})
    assert titles(db, sub) == []


def test_an_invalid_colour_is_refused(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner])
    r = api(owner).post(group_url(g), json={"name": "bug", "color": "#12"})
    assert (r.status_code, r.json()) == (400, {"message": {"color": ["must be a valid color code"]}})
    assert titles(db, g) == []


def test_list_holds_the_groups_and_its_ancestors_labels(api, make):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    below = make.group(parent=sub)
    make.label(group=top, title="top")
    make.label(group=sub, title="sub")
    make.label(group=below, title="below")
    make.label(project=make.project(namespace=sub, owner=owner), title="project")
    assert names(api(owner).get(group_url(sub))) == ["sub", "top"]
    assert names(api(owner).get(group_url(sub), params={"include_ancestor_groups": "false"})) == ["sub"]


def test_descendant_groups_and_project_labels_on_asking(api, make):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    make.label(group=top, title="top")
    make.label(group=sub, title="sub")
    make.label(project=make.project(namespace=top, owner=owner), title="in top")
    make.label(project=make.project(namespace=sub, owner=owner), title="in sub")
    url = group_url(top)
    assert names(api(owner).get(url, params={"include_descendant_groups": "true"})) == ["sub", "top"]
    assert names(api(owner).get(url, params={"only_group_labels": "false"})) == ["in top", "top"]
    both = {"only_group_labels": "false", "include_descendant_groups": "true"}
    assert names(api(owner).get(url, params=both)) == ["in sub", "in top", "sub", "top"]


def test_project_labels_listed_are_those_of_projects_the_caller_sees(api, make):
    owner, member = make.user(), make.user()
    g = make.group(owners=[owner], visibility="public")
    make.member(g, member, GUEST)
    hidden = make.project(namespace=g, owner=owner)
    make.label(project=hidden, title="hidden")
    make.label(project=make.project(namespace=g, owner=owner, visibility="public"), title="shown")
    stranger = make.user()
    params = {"only_group_labels": "false"}
    assert names(api(member).get(group_url(g), params=params)) == ["hidden", "shown"]
    assert names(api(stranger).get(group_url(g), params=params)) == ["shown"]


def test_search_and_get_by_title(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    bug = make.label(group=g, title="needs/triage now")
    make.label(group=g, title="docs")
    assert names(api(owner).get(group_url(g), params={"search": "TRIAGE"})) == ["needs/triage now"]
    assert api(owner).get(group_url(g, bug.title)).json()["id"] == bug.id
    r = api(owner).get(group_url(g, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Label Not Found"})


def test_counts_cover_the_projects_in_the_group_and_below(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    sub = make.group(parent=g)
    bug = make.label(group=g, title="bug")
    make.issue(make.project(namespace=g, owner=owner), owner, labels=[bug])
    make.issue(make.project(namespace=sub, owner=owner), owner, labels=[bug], state="closed")
    view = api(owner).get(group_url(g), params={"with_counts": "true"}).json()[0]
    assert (view["open_issues_count"], view["closed_issues_count"], view["open_merge_requests_count"]) == (
        1,
        1,
        0,
    )


def test_open_merge_requests_count_covers_the_projects_in_the_group_and_below(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    sub = make.group(parent=g)
    bug = make.label(group=g, title="bug")
    p = make.project_with_repository(namespace=g, owner=owner)
    below = make.project_with_repository(namespace=sub, owner=owner)
    make.merge_request(p, owner, labels=[bug])
    make.merge_request(below, owner, labels=[bug])
    make.merge_request(below, owner, labels=[bug], state="merged")
    view = api(owner).get(group_url(g), params={"with_counts": "true"}).json()[0]
    assert view["open_merge_requests_count"] == 2
    assert api(make.user()).get(group_url(g), params={"with_counts": "true"}).status_code == 404


def test_update_and_the_deprecated_update(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner])
    bug = make.label(group=g, title="bug")
    r = api(owner).put(group_url(g, bug.id), json={"new_name": "defect", "color": "teal"})
    assert (r.json()["name"], r.json()["color"]) == ("defect", "#008080")
    r = api(owner).put(group_url(g), json={"name": "defect", "description": "d"})
    assert (r.status_code, r.json()["description"]) == (200, "d")
    r = api(owner).put(group_url(g, bug.id), json={"priority": 1})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "new_name, color, description are missing, at least one parameter must be provided"},
    )
    assert titles(db, g) == ["defect"]


def test_an_ancestors_label_is_not_changed_through_a_subgroup(api, make, db):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    bug = make.label(group=top, title="bug")
    assert api(owner).put(group_url(sub, bug.id), json={"new_name": "x"}).status_code == 404
    assert api(owner).delete(group_url(sub, bug.id)).status_code == 404
    assert titles(db, top) == ["bug"]


def test_delete_and_the_deprecated_delete(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner])
    bug = make.label(group=g, title="bug")
    make.label(group=g, title="docs")
    assert api(owner).delete(group_url(g, bug.id)).status_code == 204
    assert api(owner).delete(group_url(g), params={"name": "docs"}).status_code == 204
    assert api(owner).delete(group_url(g)).json() == {"error": "name is missing"}
    assert titles(db, g) == []


def test_deleting_a_group_label_takes_it_off_the_issues(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner])
    p = make.project(namespace=g, owner=owner)
    bug = make.label(group=g, title="bug")
    issue_id = make.issue(p, owner, labels=[bug]).id
    assert api(owner).get(f"/projects/{p.id}/labels").json()[0]["name"] == "bug"
    assert api(owner).delete(group_url(g, "bug")).status_code == 204
    assert api(owner).get(f"/projects/{p.id}/labels").json() == []
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(LabelLink).where(LabelLink.target_id == issue_id)) == 0


def test_permissions(api, make, db):
    owner, guest, reporter, stranger = make.user(), make.user(), make.user(), make.user()
    g = make.group(owners=[owner], members={guest: GUEST, reporter: REPORTER})
    make.label(group=g, title="bug")
    assert names(api(guest).get(group_url(g))) == ["bug"]
    assert api(stranger).get(group_url(g)).json() == {"message": "404 Group Not Found"}
    assert api(guest).post(group_url(g), json={"name": "x", "color": "red"}).status_code == 403
    assert api(guest).delete(group_url(g, "bug")).status_code == 403
    assert api(stranger).post(group_url(g), json={"name": "x", "color": "red"}).status_code == 404
    assert titles(db, g) == ["bug"]
    assert api(reporter).post(group_url(g), json={"name": "x", "color": "red"}).status_code == 201
    assert titles(db, g) == ["bug", "x"]
    assert api().get(group_url(g)).status_code == 401


def test_subscribe_and_unsubscribe(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    make.label(group=g, title="bug")
    url = group_url(g, "bug")
    assert api(owner).post(url + "/subscribe").json()["subscribed"] is True
    assert api(owner).post(url + "/subscribe").status_code == 304
    assert api(owner).get(url).json()["subscribed"] is True
    assert api(owner).post(url + "/unsubscribe").status_code == 201
    assert api(owner).get(url).json()["subscribed"] is False
    assert api(owner).post(url + "/unsubscribe").status_code == 304


def test_list_is_constant_in_labels_and_groups(api, make, runtime):
    owner = make.user()
    top = make.group(owners=[owner])
    p = make.project(namespace=top, owner=owner)
    first = make.label(group=top, title="g0")
    make.issue(p, owner, labels=[first])
    query = {"with_counts": "true", "include_descendant_groups": "true", "only_group_labels": "false"}
    few = count(runtime, lambda: api(owner).get(group_url(top), params=query))
    parent = top
    for n in range(1, 5):
        parent = make.group(parent=parent)
        label = make.label(group=parent, title=f"g{n}")
        project = make.project(namespace=parent, owner=owner)
        make.label(project=project, title=f"p{n}")
        make.issue(project, owner, labels=[label])
        if n % 2:
            make.merge_request(
                make.project_with_repository(namespace=parent, owner=owner), owner, labels=[label]
            )
        api(owner).post(group_url(parent, label.id) + "/subscribe")
    many = count(runtime, lambda: api(owner).get(group_url(top), params=query))
    assert len(api(owner).get(group_url(top), params=query).json()) == 9
    assert few == many
