"""Project labels: a project sees its own labels and those of its groups; Reporters create,
change, delete and promote them; anyone who sees the project reads them and subscribes."""

from __future__ import annotations

from urllib.parse import quote

from sqlalchemy import func, select

from kiln.models import Label, LabelLink, LabelPriority, Subscription
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.models.projects import FEATURE_PRIVATE
from tests.statements import count


def labels_url(project, label: object | None = None) -> str:
    base = f"/projects/{project.id}/labels"
    return base if label is None else f"{base}/{quote(str(label), safe='')}"


def setup(make, **project_fields):
    owner = make.user()
    g = make.group(owners=[owner], path=f"g{make.seq()}")
    p = make.project(namespace=g, owner=owner, **project_fields)
    return owner, g, p


def labels_in(db, **owner) -> list[str]:
    db.expire_all()
    stmt = select(Label.title).filter_by(**owner).order_by(Label.title)
    return list(db.scalars(stmt))


# ----------------------------------------------------------------------------- creating


def test_create_answers_the_label_with_its_text_colour_and_rendered_description(api, make):
    owner, _, p = setup(make)
    r = api(owner).post(labels_url(p), json={"name": "bug", "color": "#d9534f", "description": "a *b*"})
    assert r.status_code == 201
    view = r.json()
    assert view == {
        "id": view["id"],
        "name": "bug",
        "color": "#d9534f",
        "description": "a *b*",
        "description_html": "a <em>b</em>",
        "text_color": "#FFFFFF",
        "subscribed": False,
        "priority": None,
        "is_project_label": True,
        "archived": False,
    }


def test_a_css_colour_name_is_kept_as_its_hex(api, make):
    owner, _, p = setup(make)
    assert api(owner).post(labels_url(p), json={"name": "a", "color": "Red"}).json()["color"] == "#FF0000"
    assert (
        api(owner).post(labels_url(p), json={"name": "b", "color": "rebeccapurple"}).json()["color"]
        == "#663399"
    )


def test_a_three_digit_colour_is_kept_and_light_colours_get_dark_text(api, make):
    owner, _, p = setup(make)
    view = api(owner).post(labels_url(p), json={"name": "a", "color": "#ffe"}).json()
    assert (view["color"], view["text_color"]) == ("#ffe", "#333333")


def test_an_invalid_colour_is_refused_and_nothing_is_stored(api, make, db):
    owner, _, p = setup(make)
    for color in ("#12345", "blurple", "", "#ggg"):
        r = api(owner).post(labels_url(p), json={"name": "bug", "color": color})
        assert (r.status_code, r.json()) == (400, {"message": {"color": ["must be a valid color code"]}})
    assert labels_in(db, project_id=p.id) == []


def test_name_and_color_are_required(api, make):
    owner, _, p = setup(make)
    assert api(owner).post(labels_url(p), json={"color": "red"}).json() == {"error": "name is missing"}
    assert api(owner).post(labels_url(p), json={"name": "x"}).json() == {"error": "color is missing"}


def test_title_rules(api, make, db):
    owner, _, p = setup(make)
    for name, problem in (
        ("  ", "can't be blank"),
        ("a,b", "is invalid"),
        ("x" * 256, "is too long (maximum is 255 characters)"),
    ):
        r = api(owner).post(labels_url(p), json={"name": name, "color": "red"})
        assert (r.status_code, r.json()) == (400, {"message": {"title": [problem]}})
    assert labels_in(db, project_id=p.id) == []


def test_a_title_is_kept_without_markup_and_trimmed(api, make):
    owner, _, p = setup(make)
    assert api(owner).post(labels_url(p), json={"name": " <b>bold</b> & co ", "color": "red"}).json()[
        "name"
    ] == ("bold & co")


def test_a_title_the_project_already_sees_is_a_conflict(api, make, db):
    owner, g, p = setup(make)
    make.label(project=p, title="bug")
    make.label(group=g, title="feature")
    for name in ("bug", "feature"):
        r = api(owner).post(labels_url(p), json={"name": name, "color": "red"})
        assert (r.status_code, r.json()) == (409, {"message": "Label already exists"})
    assert labels_in(db, project_id=p.id) == ["bug"]


def test_the_same_title_in_another_project_is_fine(api, make, db):
    owner, g, p = setup(make)
    other = make.project(namespace=g, owner=owner)
    make.label(project=other, title="bug")
    assert api(owner).post(labels_url(p), json={"name": "bug", "color": "red"}).status_code == 201
    assert labels_in(db, project_id=p.id) == labels_in(db, project_id=other.id) == ["bug"]


def test_priority_is_stored_for_the_project(api, make, db):
    owner, _, p = setup(make)
    view = api(owner).post(labels_url(p), json={"name": "bug", "color": "red", "priority": 3}).json()
    assert view["priority"] == 3
    assert db.scalar(select(LabelPriority.priority).where(LabelPriority.label_id == view["id"])) == 3


def test_a_negative_priority_is_refused(api, make, db):
    owner, _, p = setup(make)
    r = api(owner).post(labels_url(p), json={"name": "bug", "color": "red", "priority": -1})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"priority": ["must be greater than or equal to 0"]}},
    )
    assert labels_in(db, project_id=p.id) == []


# ----------------------------------------------------------------------------- reading


def test_list_holds_the_projects_and_its_groups_labels_in_title_order(api, make):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    p = make.project(namespace=sub, owner=owner)
    make.label(group=top, title="c-top")
    make.label(group=sub, title="b-sub")
    make.label(project=p, title="a-own")
    make.label(project=make.project(namespace=sub, owner=owner), title="other project")
    listed = api(owner).get(labels_url(p)).json()
    assert [(label["name"], label["is_project_label"]) for label in listed] == [
        ("a-own", True),
        ("b-sub", False),
        ("c-top", False),
    ]


def test_without_ancestor_groups_the_list_holds_the_project_and_its_own_group(api, make):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    p = make.project(namespace=sub, owner=owner)
    make.label(group=top, title="top")
    make.label(group=sub, title="sub")
    make.label(project=p, title="own")
    listed = api(owner).get(labels_url(p), params={"include_ancestor_groups": "false"}).json()
    assert [label["name"] for label in listed] == ["own", "sub"]


def test_search_matches_title_or_description_ignoring_case(api, make):
    owner, _, p = setup(make)
    make.label(project=p, title="Backend")
    make.label(project=p, title="ui", description="Front END work")
    make.label(project=p, title="docs")
    listed = api(owner).get(labels_url(p), params={"search": "end"}).json()
    assert [label["name"] for label in listed] == ["Backend", "ui"]


def test_a_single_label_by_id_or_by_encoded_title(api, make):
    owner, g, p = setup(make)
    own = make.label(project=p, title="Label:that requires/encoding here")
    group_label = make.label(group=g, title="group one")
    assert api(owner).get(labels_url(p, own.id)).json()["name"] == own.title
    assert api(owner).get(labels_url(p, own.title)).json()["id"] == own.id
    assert api(owner).get(labels_url(p, "group one")).json()["id"] == group_label.id
    r = api(owner).get(labels_url(p, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Label Not Found"})


def test_a_label_of_another_project_is_not_found(api, make):
    owner, g, p = setup(make)
    elsewhere = make.project(namespace=g, owner=owner)
    other = make.label(project=elsewhere, title="elsewhere")
    assert api(owner).get(labels_url(elsewhere, other.id)).json()["id"] == other.id
    r = api(owner).get(labels_url(p, other.id))
    assert (r.status_code, r.json()) == (404, {"message": "404 Label Not Found"})


def test_counts_are_the_open_and_closed_issues_carrying_the_label(api, make):
    owner, _, p = setup(make)
    bug = make.label(project=p, title="bug")
    make.label(project=p, title="idle")
    make.issue(p, owner, labels=[bug])
    make.issue(p, owner, labels=[bug])
    make.issue(p, owner, labels=[bug], state="closed")
    listed = api(owner).get(labels_url(p), params={"with_counts": "true"}).json()
    counts = {
        label["name"]: (
            label["open_issues_count"],
            label["closed_issues_count"],
            label["open_merge_requests_count"],
        )
        for label in listed
    }
    assert counts == {"bug": (2, 1, 0), "idle": (0, 0, 0)}
    assert "open_issues_count" not in api(owner).get(labels_url(p)).json()[0]


def test_counts_leave_out_confidential_issues_the_caller_may_not_see(api, make):
    owner, _, p = setup(make, visibility="public")
    guest, author, reporter = make.user(), make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, author, GUEST)
    make.member(p, reporter, REPORTER)
    bug = make.label(project=p, title="bug")
    make.issue(p, owner, labels=[bug])
    make.issue(p, author, labels=[bug], confidential=True)

    def open_count(user) -> int:
        return api(user).get(labels_url(p), params={"with_counts": "true"}).json()[0]["open_issues_count"]

    assert open_count(guest) == 1
    assert open_count(make.user()) == 1
    assert open_count(author) == 2
    assert open_count(reporter) == 2


def test_a_group_labels_counts_cover_the_groups_projects(api, make):
    owner, g, p = setup(make)
    other = make.project(namespace=g, owner=owner)
    shared = make.label(group=g, title="shared")
    make.issue(p, owner, labels=[shared])
    make.issue(other, owner, labels=[shared], state="closed")
    view = api(owner).get(labels_url(p), params={"with_counts": "true"}).json()[0]
    assert (view["open_issues_count"], view["closed_issues_count"]) == (1, 1)


def test_open_merge_requests_count_is_the_open_merge_requests_carrying_the_label(api, make):
    owner = make.user()
    g = make.group(owners=[owner], path=f"g{make.seq()}")
    p = make.project_with_repository(namespace=g, owner=owner)
    bug = make.label(project=p, title="bug")
    make.merge_request(p, owner, labels=[bug])
    make.merge_request(p, owner, labels=[bug])
    make.merge_request(p, owner, labels=[bug], state="closed")
    make.merge_request(p, owner, labels=[bug], state="merged")
    make.merge_request(p, owner)
    make.issue(p, owner, labels=[bug])
    view = api(owner).get(labels_url(p), params={"with_counts": "true"}).json()[0]
    counts = (view["open_issues_count"], view["closed_issues_count"], view["open_merge_requests_count"])
    assert counts == (1, 0, 2)


def test_open_merge_requests_count_leaves_out_merge_requests_the_caller_may_not_read(api, make):
    owner = make.user()
    g = make.group(owners=[owner], path=f"g{make.seq()}")
    p = make.project_with_repository(
        namespace=g, owner=owner, visibility="public", merge_requests_access_level=FEATURE_PRIVATE
    )
    guest, reporter = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, reporter, REPORTER)
    bug = make.label(project=p, title="bug")
    make.merge_request(p, owner, labels=[bug])

    def open_count(user) -> int:
        view = api(user).get(labels_url(p), params={"with_counts": "true"}).json()[0]
        return view["open_merge_requests_count"]

    assert open_count(make.user()) == 0
    assert open_count(guest) == 0  # members-only merge requests are for Reporters and up
    assert open_count(reporter) == 1
    assert open_count(owner) == 1


def test_a_group_labels_open_merge_requests_are_those_of_the_groups_projects(api, make):
    owner = make.user()
    g = make.group(owners=[owner], path=f"g{make.seq()}")
    p = make.project_with_repository(namespace=g, owner=owner)
    other = make.project_with_repository(namespace=g, owner=owner)
    outside = make.project_with_repository(owner=owner)
    shared = make.label(group=g, title="shared")
    make.merge_request(p, owner, labels=[shared])
    make.merge_request(other, owner, labels=[shared])
    make.merge_request(other, owner, labels=[shared], state="closed")
    # A label link outside the group's projects (as a moved project would leave) is not counted.
    make.merge_request(outside, owner, labels=[shared])
    view = api(owner).get(labels_url(p), params={"with_counts": "true"}).json()[0]
    assert view["open_merge_requests_count"] == 2


def test_the_priority_shown_is_the_projects(api, make):
    owner, g, p = setup(make)
    other = make.project(namespace=g, owner=owner)
    shared = make.label(group=g, title="shared")
    assert api(owner).put(labels_url(other, shared.id), json={"priority": 5}).json()["priority"] == 5
    assert api(owner).get(labels_url(other, shared.id)).json()["priority"] == 5
    assert api(owner).get(labels_url(p, shared.id)).json()["priority"] is None


# ----------------------------------------------------------------------------- changing


def test_update_renames_and_recolours(api, make, db):
    owner, _, p = setup(make)
    bug = make.label(project=p, title="bug")
    r = api(owner).put(labels_url(p, "bug"), json={"new_name": "defect", "color": "navy"})
    assert r.status_code == 200
    assert (r.json()["name"], r.json()["color"], r.json()["id"]) == ("defect", "#000080", bug.id)
    assert labels_in(db, project_id=p.id) == ["defect"]


def test_update_needs_something_to_change(api, make):
    owner, _, p = setup(make)
    make.label(project=p, title="bug")
    r = api(owner).put(labels_url(p, "bug"), json={})
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": "new_name, color, description, priority are missing, at least one parameter must be provided"
        },
    )


def test_update_sets_and_removes_the_priority(api, make, db):
    owner, _, p = setup(make)
    bug = make.label(project=p, title="bug")
    assert api(owner).put(labels_url(p, bug.id), json={"priority": 4}).json()["priority"] == 4
    assert api(owner).put(labels_url(p, bug.id), json={"priority": None}).json()["priority"] is None
    assert db.scalar(select(func.count()).select_from(LabelPriority)) == 0


def test_a_rename_to_a_taken_title_is_refused(api, make, db):
    owner, g, p = setup(make)
    make.label(project=p, title="bug")
    make.label(project=p, title="defect")
    make.label(group=g, title="shared")
    r = api(owner).put(labels_url(p, "bug"), json={"new_name": "defect"})
    assert (r.status_code, r.json()) == (400, {"message": {"title": ["has already been taken"]}})
    r = api(owner).put(labels_url(p, "bug"), json={"new_name": "shared"})
    assert r.status_code == 400
    assert r.json()["message"]["title"][0].startswith("already exists at group level")
    assert labels_in(db, project_id=p.id) == ["bug", "defect"]


def test_an_invalid_colour_on_update_changes_nothing(api, make, db):
    owner, _, p = setup(make)
    bug = make.label(project=p, title="bug", color="#123456")
    r = api(owner).put(labels_url(p, bug.id), json={"new_name": "renamed", "color": "nope"})
    assert r.status_code == 400
    db.expire_all()
    assert (db.get(Label, bug.id).title, db.get(Label, bug.id).color) == ("bug", "#123456")


def test_the_deprecated_update_names_the_label_in_the_body(api, make, db):
    owner, _, p = setup(make)
    make.label(project=p, title="bug")
    r = api(owner).put(labels_url(p), json={"name": "bug", "description": "broken"})
    assert (r.status_code, r.json()["description"]) == (200, "broken")
    db.expire_all()
    assert db.scalar(select(Label.description).where(Label.project_id == p.id)) == "broken"
    r = api(owner).put(labels_url(p), json={"description": "broken"})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "label_id, name are missing, exactly one parameter must be provided"},
    )


def test_a_group_label_is_changed_only_by_those_who_may_change_the_groups_labels(api, make, db):
    owner, g, p = setup(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    shared = make.label(group=g, title="shared")
    r = api(reporter).put(labels_url(p, shared.id), json={"new_name": "mine"})
    assert r.status_code == 403
    assert labels_in(db, group_id=g.id) == ["shared"]
    assert api(owner).put(labels_url(p, shared.id), json={"new_name": "ours"}).json()["name"] == "ours"


def test_delete_removes_the_label_its_links_and_priorities(api, make, db):
    owner, _, p = setup(make)
    bug_id = make.label(project=p, title="bug").id
    issue_id = make.issue(p, owner, labels=[db.get(Label, bug_id)]).id
    api(owner).put(labels_url(p, bug_id), json={"priority": 1})
    api(owner).post(labels_url(p, bug_id) + "/subscribe")
    assert db.scalar(select(func.count()).select_from(LabelLink).where(LabelLink.target_id == issue_id)) == 1
    assert db.scalar(select(func.count()).select_from(LabelPriority)) == 1
    assert db.scalar(select(func.count()).select_from(Subscription)) == 1
    assert api(owner).delete(labels_url(p, "bug")).status_code == 204
    db.expire_all()
    assert db.get(Label, bug_id) is None
    assert db.scalar(select(func.count()).select_from(LabelLink).where(LabelLink.target_id == issue_id)) == 0
    assert db.scalar(select(func.count()).select_from(LabelPriority)) == 0
    assert db.scalar(select(func.count()).select_from(Subscription)) == 0


def test_the_deprecated_delete_names_the_label_in_the_query(api, make, db):
    owner, _, p = setup(make)
    make.label(project=p, title="bug")
    assert api(owner).delete(labels_url(p), params={"name": "bug"}).status_code == 204
    assert labels_in(db, project_id=p.id) == []


# ----------------------------------------------------------------------------- permissions


def test_reading_takes_sight_of_the_project_and_changing_a_reporter(api, make, db):
    _, _, p = setup(make)
    guest, stranger = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.label(project=p, title="bug")
    assert [label["name"] for label in api(guest).get(labels_url(p)).json()] == ["bug"]
    assert api(stranger).get(labels_url(p)).json() == {"message": "404 Project Not Found"}
    assert api(stranger).post(labels_url(p), json={"name": "x", "color": "red"}).status_code == 404
    for r in (
        api(guest).post(labels_url(p), json={"name": "x", "color": "red"}),
        api(guest).put(labels_url(p, "bug"), json={"color": "red"}),
        api(guest).delete(labels_url(p, "bug")),
    ):
        assert r.status_code == 403
    assert labels_in(db, project_id=p.id) == ["bug"]
    assert api().get(labels_url(p)).status_code == 401


def test_a_reporter_may_change_labels(api, make, db):
    _, _, p = setup(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    assert api(reporter).post(labels_url(p), json={"name": "x", "color": "red"}).status_code == 201
    assert api(reporter).put(labels_url(p, "x"), json={"new_name": "y"}).status_code == 200
    assert labels_in(db, project_id=p.id) == ["y"]
    assert api(reporter).delete(labels_url(p, "y")).status_code == 204
    assert labels_in(db, project_id=p.id) == []


# ----------------------------------------------------------------------------- promote


def test_promote_makes_the_label_the_groups_with_its_issues(api, make, db):
    owner, g, p = setup(make)
    sibling = make.project(namespace=g, owner=owner)
    bug = make.label(project=p, title="bug", color="#00ff00", description="broken")
    twin = make.label(project=sibling, title="bug")
    issue = make.issue(p, owner, labels=[bug])
    other_issue = make.issue(sibling, owner, labels=[twin])
    api(owner).put(labels_url(p, bug.id), json={"priority": 2})
    r = api(owner).put(labels_url(p, "bug") + "/promote")
    assert r.status_code == 200
    view = r.json()
    assert (view["name"], view["color"], view["description"]) == ("bug", "#00ff00", "broken")
    assert "is_project_label" not in view
    assert labels_in(db, group_id=g.id) == ["bug"]
    assert labels_in(db, project_id=p.id) == labels_in(db, project_id=sibling.id) == []
    carried = db.scalars(
        select(LabelLink.label_id).where(LabelLink.target_id.in_([issue.id, other_issue.id]))
    )
    assert set(carried) == {view["id"]}
    assert api(owner).get(labels_url(p, "bug")).json()["priority"] == 2


def test_promote_reuses_the_groups_label_of_that_title(api, make, db):
    owner, g, p = setup(make)
    group_label = make.label(group=g, title="bug-old")
    bug = make.label(project=p, title="bug")
    issue = make.issue(p, owner, labels=[bug])
    api(owner).put(f"/groups/{g.id}/labels/{group_label.id}", json={"new_name": "bug2"})
    # A group label and a project label may share a title when the group label came later.
    with_title = make.label(group=g, title="shared")
    sibling = make.project(namespace=g, owner=owner)
    make.label(project=sibling, title="shared")
    r = api(owner).put(labels_url(sibling, "shared") + "/promote")
    assert (r.status_code, r.json()["id"]) == (200, with_title.id)
    assert labels_in(db, group_id=g.id) == ["bug2", "shared"]
    bug_id, issue_id = bug.id, issue.id
    promoted = api(owner).put(labels_url(p, "bug") + "/promote").json()
    db.expire_all()
    assert (
        db.scalar(select(LabelLink.label_id).where(LabelLink.target_id == issue_id))
        == promoted["id"]
        != bug_id
    )


def test_promote_in_a_personal_project_is_refused(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    make.label(project=p, title="bug")
    r = api(u).put(labels_url(p, "bug") + "/promote")
    assert (r.status_code, r.json()) == (400, {"message": "Failed to promote project label to group label"})
    assert labels_in(db, project_id=p.id) == ["bug"]


def test_promote_takes_a_reporter_of_the_group(api, make, db):
    _, g, p = setup(make)
    developer = make.user()
    make.member(p, developer, DEVELOPER)
    make.label(project=p, title="bug")
    assert api(developer).put(labels_url(p, "bug") + "/promote").status_code == 403
    assert labels_in(db, project_id=p.id) == ["bug"]
    group_reporter = make.user()
    make.member(g, group_reporter, REPORTER)
    assert api(group_reporter).put(labels_url(p, "bug") + "/promote").status_code == 200
    assert (labels_in(db, project_id=p.id), labels_in(db, group_id=g.id)) == ([], ["bug"])


def test_promote_of_an_unknown_label_is_not_found(api, make):
    owner, _, p = setup(make)
    r = api(owner).put(labels_url(p, "nope") + "/promote")
    assert (r.status_code, r.json()) == (404, {"message": "404 Label Not Found"})


def test_the_deprecated_promote_names_the_label_in_the_body(api, make, db):
    owner, g, p = setup(make)
    make.label(project=p, title="bug")
    assert api(owner).put(labels_url(p) + "/promote", json={"name": "bug"}).status_code == 200
    assert labels_in(db, group_id=g.id) == ["bug"]


# ----------------------------------------------------------------------------- subscriptions


def test_subscribe_and_unsubscribe_answer_304_when_nothing_changes(api, make):
    owner, g, p = setup(make)
    guest = make.user()
    make.member(p, guest, GUEST)
    make.label(group=g, title="shared")
    url = labels_url(p, "shared")
    assert api(guest).post(url + "/unsubscribe").status_code == 304
    r = api(guest).post(url + "/subscribe")
    assert (r.status_code, r.json()["subscribed"]) == (201, True)
    assert api(guest).post(url + "/subscribe").status_code == 304
    assert api(guest).get(labels_url(p)).json()[0]["subscribed"] is True
    assert api(owner).get(labels_url(p)).json()[0]["subscribed"] is False
    r = api(guest).post(url + "/unsubscribe")
    assert (r.status_code, r.json()["subscribed"]) == (201, False)
    assert api(guest).get(url).json()["subscribed"] is False


# ----------------------------------------------------------------------------- statements


def test_list_with_counts_is_constant_in_labels_issues_and_merge_requests(api, make, runtime):
    owner = make.user()
    g = make.group(owners=[owner], path=f"g{make.seq()}")
    p = make.project_with_repository(namespace=g, owner=owner)
    first = make.label(project=p, title="l0")
    make.issue(p, owner, labels=[first])
    api(owner).post(labels_url(p, first.id) + "/subscribe")
    url, query = labels_url(p), {"with_counts": "true", "per_page": 100}
    few = count(runtime, lambda: api(owner).get(url, params=query))
    for n in range(1, 8):
        label = make.label(project=p, title=f"l{n}") if n % 2 else make.label(group=g, title=f"l{n}")
        make.issue(p, owner, labels=[label], confidential=n % 3 == 0)
        if n % 3 == 1:
            make.merge_request(p, owner, labels=[label])
        api(owner).put(labels_url(p, label.id), json={"priority": n})
        api(owner).post(labels_url(p, label.id) + "/subscribe")
    many = count(runtime, lambda: api(owner).get(url, params=query))
    assert len(api(owner).get(url, params=query).json()) == 8
    assert few == many
