"""The issues of an epic: GitLab's Epic Issues API, one rule per test."""

from __future__ import annotations

from datetime import date

from sqlalchemy import select

from kiln.db import transaction
from kiln.models import Epic, EpicIssue, Note
from kiln.models.namespaces import GUEST, REPORTER
from tests.statements import count

BASE = "http://kiln.test"


def issues_url(group, iid: int = 1, tail: str = "") -> str:
    return f"/groups/{group.id}/epics/{iid}/issues{tail}"


def setup(make, **kw):
    """An Owner's group holding a project and an epic."""
    owner = make.user()
    g = make.group(owners=[owner], **kw)
    project = make.project(namespace=g, owner=owner, path="app")
    epic = make.epic(g, owner)
    return owner, g, project, epic


def assign(api, caller, group, issue, iid: int = 1):
    r = api(caller).post(issues_url(group, iid, f"/{issue.id}"))
    assert r.status_code == 201, r.text
    return r.json()


def links(db) -> list[tuple[int, int]]:
    db.expire_all()
    return [(link.epic_id, link.issue_id) for link in db.scalars(select(EpicIssue).order_by(EpicIssue.id))]


def test_an_issue_is_assigned_by_its_global_id(api, make, db):
    owner, g, project, epic = setup(make, path="grp")
    issue = make.issue(project, owner, title="Fix it")
    view = assign(api, owner, g, issue)
    assert set(view) == {"id", "relative_position", "epic", "issue"}
    assert (view["epic"]["id"], view["epic"]["iid"]) == (epic.id, 1)
    assert (view["issue"]["id"], view["issue"]["title"]) == (issue.id, "Fix it")
    assert view["issue"]["references"]["full"] == "grp/app#1"
    assert links(db) == [(epic.id, issue.id)]


def test_the_list_shows_the_epics_issues_with_their_link(api, make):
    owner, g, project, _ = setup(make)
    first, second = make.issue(project, owner, title="first"), make.issue(project, owner, title="second")
    link_one = assign(api, owner, g, first)
    assign(api, owner, g, second)
    views = api(owner).get(issues_url(g)).json()
    # A newly assigned issue goes first.
    assert [v["title"] for v in views] == ["second", "first"]
    assert views[1]["epic_issue_id"] == link_one["id"]
    assert views[1]["relative_position"] == link_one["relative_position"]
    assert views[0]["epic_iid"] == 1


def test_the_list_is_paginated(api, make):
    owner, g, project, _epic = setup(make)
    for _ in range(3):
        assign(api, owner, g, make.issue(project, owner))
    r = api(owner).get(issues_url(g), params={"per_page": 2})
    assert len(r.json()) == 2
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    rest = api(owner).get(issues_url(g), params={"per_page": 2, "page": 2}).json()
    assert len({v["id"] for v in r.json() + rest}) == 3


def test_an_issue_outside_the_groups_hierarchy_is_not_found(api, make, db):
    owner, g, _, _ = setup(make)
    elsewhere = make.project(owner=owner)
    issue = make.issue(elsewhere, owner)
    r = api(owner).post(issues_url(g, 1, f"/{issue.id}"))
    assert (r.status_code, r.json()) == (
        404,
        {"message": "No matching issue found. Make sure that you are adding a valid issue URL."},
    )
    assert links(db) == []


def test_an_issue_of_a_subgroup_project_may_be_assigned(api, make, db):
    owner, g, _, epic = setup(make)
    sub = make.group(parent=g)
    project = make.project(namespace=sub, owner=owner)
    issue = make.issue(project, owner)
    assign(api, owner, g, issue)
    assert links(db) == [(epic.id, issue.id)]


def test_a_missing_issue_is_not_found(api, make, db):
    owner, g, _, _ = setup(make)
    assert api(owner).post(issues_url(g, 1, "/999999")).status_code == 404
    assert links(db) == []


def test_assigning_twice_conflicts(api, make, db):
    owner, g, project, epic = setup(make)
    issue = make.issue(project, owner)
    assign(api, owner, g, issue)
    r = api(owner).post(issues_url(g, 1, f"/{issue.id}"))
    assert (r.status_code, r.json()) == (409, {"message": "Issue(s) already assigned"})
    assert links(db) == [(epic.id, issue.id)]


def test_an_issue_moves_from_its_other_epic(api, make, db):
    owner, g, project, first = setup(make)
    second = make.epic(g, owner)
    issue = make.issue(project, owner)
    assign(api, owner, g, issue, 1)
    assign(api, owner, g, issue, 2)
    assert links(db) == [(second.id, issue.id)]
    bodies = list(
        db.scalars(select(Note.body).where(Note.noteable_type == "Epic", Note.noteable_id == first.id))
    )
    assert bodies == [f"added issue {g.path}/app#1", f"removed issue {g.path}/app#1"]


def test_assigning_writes_notes_on_both(api, make, db):
    owner, g, project, epic = setup(make)
    issue = make.issue(project, owner)
    assign(api, owner, g, issue)
    on_issue = db.scalars(
        select(Note.body).where(Note.noteable_type == "Issue", Note.noteable_id == issue.id)
    )
    assert list(on_issue) == ["added to epic &1"]
    on_epic = db.scalars(select(Note.body).where(Note.noteable_type == "Epic", Note.noteable_id == epic.id))
    assert list(on_epic) == [f"added issue {g.path}/app#1"]


def test_a_guest_may_not_assign_issues(api, make, db):
    guest = make.user()
    owner, g, project, _ = setup(make, members={guest: GUEST})
    issue = make.issue(project, owner)
    assert api(guest).post(issues_url(g, 1, f"/{issue.id}")).status_code == 403
    assert links(db) == []


def test_confidential_issues_are_listed_only_for_those_who_see_them(api, make):
    owner = make.user()
    guest, reporter = make.user(), make.user()
    g = make.group(owners=[owner], members={guest: GUEST, reporter: REPORTER})
    project = make.project(namespace=g, owner=owner)
    make.epic(
        g,
        owner,
        issues=[
            make.issue(project, owner, title="open"),
            make.issue(project, owner, title="secret", confidential=True),
        ],
    )
    assert sorted(v["title"] for v in api(guest).get(issues_url(g)).json()) == ["open"]
    assert sorted(v["title"] for v in api(reporter).get(issues_url(g)).json()) == ["open", "secret"]


def test_issues_of_projects_hidden_from_the_caller_are_left_out(api, make):
    owner = make.user()
    viewer = make.user()
    g = make.group(owners=[owner], visibility="public")
    public = make.project(namespace=g, owner=owner, visibility="public")
    private = make.project(namespace=g, owner=owner, visibility="private")
    make.epic(
        g, owner, issues=[make.issue(public, owner, title="seen"), make.issue(private, owner, title="hidden")]
    )
    assert sorted(v["title"] for v in api(owner).get(issues_url(g)).json()) == ["hidden", "seen"]
    assert [v["title"] for v in api(viewer).get(issues_url(g)).json()] == ["seen"]


def test_issues_are_moved_among_the_others(api, make):
    owner, g, project, _ = setup(make)
    a, b, c = (make.issue(project, owner, title=t) for t in "abc")
    ids = {}
    for issue in (a, b, c):
        ids[issue.title] = assign(api, owner, g, issue)["id"]
    # Order now: c, b, a. Put c after a.
    r = api(owner).put(issues_url(g, 1, f"/{ids['c']}"), json={"move_before_id": ids["a"]})
    assert r.status_code == 200
    assert [v["title"] for v in r.json()] == ["b", "a", "c"]
    assert [v["title"] for v in api(owner).get(issues_url(g)).json()] == ["b", "a", "c"]
    r = api(owner).put(issues_url(g, 1, f"/{ids['c']}"), json={"move_after_id": ids["b"]})
    assert [v["title"] for v in r.json()] == ["c", "b", "a"]
    assert [v["title"] for v in api(owner).get(issues_url(g)).json()] == ["c", "b", "a"]


def test_a_move_without_a_neighbour_is_refused(api, make):
    owner, g, project, _ = setup(make)
    link = assign(api, owner, g, make.issue(project, owner))
    r = api(owner).put(issues_url(g, 1, f"/{link['id']}"), json={"move_before_id": 999999})
    assert (r.status_code, r.json()) == (400, {"message": {"error": "Issue could not be moved!"}})
    assert api(owner).get(issues_url(g)).json()[0]["relative_position"] == link["relative_position"]


def test_an_issue_is_removed_from_the_epic(api, make, db):
    owner, g, project, epic = setup(make)
    issue = make.issue(project, owner)
    link = assign(api, owner, g, issue)
    r = api(owner).delete(issues_url(g, 1, f"/{link['id']}"))
    assert r.status_code == 200
    assert (r.json()["id"], r.json()["issue"]["id"], r.json()["epic"]["id"]) == (
        link["id"],
        issue.id,
        epic.id,
    )
    assert links(db) == []
    assert api(owner).delete(issues_url(g, 1, f"/{link['id']}")).status_code == 404


def test_a_link_of_another_epic_is_not_found(api, make, db):
    owner, g, project, _ = setup(make)
    make.epic(g, owner)
    link = assign(api, owner, g, make.issue(project, owner), 2)
    assert api(owner).delete(issues_url(g, 1, f"/{link['id']}")).status_code == 404
    assert len(links(db)) == 1


def test_assigning_and_removing_keep_the_epics_dates(api, make, db):
    owner, g, project, epic = setup(make)
    milestone = make.milestone(project=project, start_date=date(2024, 4, 1), due_date=date(2024, 5, 1))
    issue = make.issue(project, owner, milestone=milestone)
    link = assign(api, owner, g, issue)
    assert (link["epic"]["start_date"], link["epic"]["due_date"]) == ("2024-04-01", "2024-05-01")
    assert api(owner).delete(issues_url(g, 1, f"/{link['id']}")).status_code == 200
    db.expire_all()
    stored = db.get(Epic, epic.id)
    assert (stored.start_date, stored.due_date) == (None, None)


def test_a_list_costs_the_same_for_one_and_many_issues(api, make, runtime):
    owner, g, project, epic = setup(make)
    other = make.project(namespace=g, owner=owner)
    label = make.label(project=project)
    milestone = make.milestone(project=project)
    first = make.issue(project, owner, labels=[label], milestone=milestone)

    def call():
        return api(owner).get(issues_url(g))

    with transaction(make.db):
        make.db.add(EpicIssue(epic_id=epic.id, issue_id=first.id))
    one = count(runtime, call)
    with transaction(make.db):
        for n in range(6):
            issue = make.issue(other if n % 2 else project, make.user(), labels=[label], milestone=milestone)
            make.db.add(EpicIssue(epic_id=epic.id, issue_id=issue.id))
    assert len(call().json()) == 7
    assert count(runtime, call) == one
