"""Group milestones (GitLab's group milestones API): the same routes as a project's under
/groups/:id, iids per group, titles unique across the group's whole hierarchy and its
projects, lists with the visible ancestors' and descendants' milestones, and the issues of
every project the caller sees."""

from __future__ import annotations

from datetime import date, timedelta

from sqlalchemy import func, select

from kiln.models import Issue, Milestone
from kiln.models.namespaces import GUEST, MAINTAINER, REPORTER
from kiln.models.projects import DISABLED
from tests.statements import count

EXTERNAL = "http://kiln.test"


def url(group, milestone=None, tail=""):
    base = f"/groups/{group.id}/milestones"
    return (
        base
        if milestone is None
        else f"{base}/{milestone if isinstance(milestone, int) else milestone.id}{tail}"
    )


def group_milestones(db, group):
    return db.scalar(select(func.count()).select_from(Milestone).where(Milestone.group_id == group.id))


def test_a_group_milestone_is_shown_with_its_group(api, make):
    user = make.user()
    g = make.group(members={user: REPORTER}, path="team")
    r = api(user).post(url(g), json={"title": "Q1", "due_date": "2030-03-31"})
    assert r.status_code == 201, r.text
    m = r.json()
    assert list(m)[:4] == ["id", "iid", "group_id", "title"]
    assert "project_id" not in m
    assert (m["group_id"], m["iid"], m["due_date"]) == (g.id, 1, "2030-03-31")
    assert m["web_url"] == f"{EXTERNAL}/groups/team/-/milestones/1"
    assert api(user).get(url(g, m["id"])).json() == m
    assert api(user).post(url(g), json={"title": "Q2"}).json()["iid"] == 2


def test_a_group_milestone_is_not_reached_through_another_group(api, make, db):
    user = make.user()
    g = make.group(members={user: REPORTER})
    other = make.group(members={user: REPORTER})
    m = make.milestone(group=other, title="theirs")
    assert api(user).get(url(other, m)).json()["id"] == m.id
    assert api(user).get(url(g, m)).json() == {"message": "404 Not found"}
    assert api(user).put(url(g, m), json={"title": "x"}).json() == {"message": "404 Not found"}
    assert api(user).delete(url(g, m)).json() == {"message": "404 Not found"}
    db.expire_all()
    assert db.get(Milestone, m.id).title == "theirs"


def test_titles_are_unique_across_the_hierarchy_and_its_projects(api, make, db):
    user = make.user()
    top = make.group(members={user: REPORTER})
    sub = make.group(parent=top)
    p = make.project(namespace=sub)
    make.milestone(group=top, title="top")
    make.milestone(group=sub, title="sub")
    make.milestone(project=p, title="project")
    for title in ("top", "sub", "project"):
        r = api(user).post(url(top), json={"title": title})
        assert r.status_code == 400, title
        assert "already being used for another group or project milestone." in r.json()["message"]
    assert group_milestones(db, top) == 1
    assert api(user).post(url(top), json={"title": "fresh"}).status_code == 201


def test_list_with_ancestors_and_descendants(api, make):
    user = make.user()
    top = make.group(members={user: REPORTER})
    mid = make.group(parent=top, members={user: REPORTER})
    low = make.group(parent=mid)
    p = make.project(namespace=low)
    hidden_project = make.project(
        namespace=low, issues_access_level=DISABLED, merge_requests_access_level=DISABLED
    )
    top_m, mid_m, low_m = (make.milestone(group=g) for g in (top, mid, low))
    project_m = make.milestone(project=p)
    make.milestone(project=hidden_project)

    def ids(**query):
        r = api(user).get(url(mid), params=query)
        assert r.status_code == 200, r.text
        return sorted(m["id"] for m in r.json())

    assert ids() == [mid_m.id]
    assert ids(include_ancestors="true") == sorted([top_m.id, mid_m.id])
    assert ids(include_descendants="true") == sorted([mid_m.id, low_m.id, project_m.id])
    assert ids(include_ancestors="true", include_descendants="true") == sorted(
        [top_m.id, mid_m.id, low_m.id, project_m.id]
    )


def test_descendants_hidden_from_the_caller_are_left_out(api, make):
    user = make.user()
    top = make.group(visibility="public")
    private_sub = make.group(parent=top)
    public_sub = make.group(parent=top, visibility="public")
    make.milestone(group=private_sub)
    shown = make.milestone(group=public_sub)
    own = make.milestone(group=top)
    listed = api(user).get(url(top), params={"include_descendants": "true"}).json()
    assert sorted(m["id"] for m in listed) == sorted([own.id, shown.id])


def test_group_milestone_changes_and_deletion(api, make, db):
    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project(namespace=g)
    m = make.milestone(group=g)
    assert (
        api(user).put(url(g, m), json={"state_event": "close", "title": "done"}).json()["state"] == "closed"
    )
    db.expire_all()
    assert (db.get(Milestone, m.id).title, db.get(Milestone, m.id).state) == ("done", "closed")
    m_id, issue_id = m.id, make.issue(p, user, milestone=m).id
    assert api(user).delete(url(g, m)).status_code == 204
    db.expire_all()
    assert db.get(Milestone, m_id) is None
    assert db.get(Issue, issue_id).milestone_id is None


def test_guests_read_reporters_change(api, make, db):
    guest = make.user()
    g = make.group(members={guest: GUEST})
    m = make.milestone(group=g)
    assert [listed["id"] for listed in api(guest).get(url(g)).json()] == [m.id]
    for r in (
        api(guest).post(url(g), json={"title": "x"}),
        api(guest).put(url(g, m), json={"title": "x"}),
        api(guest).delete(url(g, m)),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert group_milestones(db, g) == 1
    stranger = make.user()
    assert api(stranger).get(url(g, m)).json() == {"message": "404 Group Not Found"}
    assert api().get(url(make.group(visibility="public"))).status_code == 401


def test_issues_of_a_group_milestone_across_the_projects_the_caller_sees(api, make):
    owner = make.user()
    viewer = make.user()
    g = make.group(members={owner: MAINTAINER}, visibility="public")
    public = make.project(namespace=g, visibility="public")
    private = make.project(namespace=g)
    sub = make.group(parent=g, visibility="public")
    deep = make.project(namespace=make.group(parent=sub, visibility="public"), visibility="public")
    m = make.milestone(group=g)
    shown = make.issue(public, owner, milestone=m)
    secret = make.issue(public, owner, milestone=m, confidential=True)
    hidden = make.issue(private, owner, milestone=m)
    deeper = make.issue(deep, owner, milestone=m)
    as_viewer = api(viewer).get(url(g, m, "/issues"))
    assert as_viewer.status_code == 200, as_viewer.text
    assert sorted(i["id"] for i in as_viewer.json()) == sorted([shown.id, deeper.id])
    as_owner = api(owner).get(url(g, m, "/issues")).json()
    assert sorted(i["id"] for i in as_owner) == sorted([shown.id, secret.id, hidden.id, deeper.id])
    relative = {i["id"]: i["references"]["relative"] for i in as_owner}
    assert relative[shown.id] == f"{public.path}#{shown.iid}"


def test_group_burndown(api, make):
    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project(namespace=g)
    m = make.milestone(group=g, start_date=date.today() - timedelta(days=3), due_date=date.today())
    make.issue(p, user, milestone=m, weight=4)
    events = api(user).get(url(g, m, "/burndown_events")).json()
    assert [(e["action"], e["weight"]) for e in events] == [("created", 4)]


def test_group_milestone_merge_requests_are_those_the_caller_reads_in_every_project(api, make):
    owner, guest = make.user(), make.user()
    g = make.group(members={owner: MAINTAINER}, visibility="public")
    sub = make.group(parent=g, visibility="public")
    public = make.project_with_repository(
        namespace=g, visibility="public", path="app", members={guest: GUEST}
    )
    deeper = make.project_with_repository(namespace=sub, visibility="public")
    hidden = make.project_with_repository(namespace=g, visibility="private")
    closed = make.project_with_repository(
        namespace=g, visibility="public", merge_requests_access_level=DISABLED
    )
    m = make.milestone(group=g)
    shown = make.merge_request(public, owner, milestone=m)
    below = make.merge_request(deeper, owner, milestone=m)
    secret = make.merge_request(hidden, owner, milestone=m)
    make.merge_request(closed, owner, milestone=m)
    make.merge_request(public, owner)  # not planned
    as_owner = api(owner).get(url(g, m, "/merge_requests"))
    assert as_owner.status_code == 200, as_owner.text
    assert [v["id"] for v in as_owner.json()] == [secret.id, below.id, shown.id]
    relative = {v["id"]: v["references"]["relative"] for v in as_owner.json()}
    assert relative[shown.id] == f"app!{shown.iid}"
    as_guest = api(guest).get(url(g, m, "/merge_requests")).json()
    assert [v["id"] for v in as_guest] == [below.id, shown.id]
    assert [v["id"] for v in api(make.user()).get(url(g, m, "/merge_requests")).json()] == [
        below.id,
        shown.id,
    ]


def test_group_milestone_merge_requests_are_constant(api, make, runtime):
    user = make.user()
    g = make.group(members={user: REPORTER})
    m = make.milestone(group=g)
    p = make.project_with_repository(namespace=g)
    make.merge_request(p, user, milestone=m, labels=[make.label(group=g)])
    few = count(runtime, lambda: api(user).get(url(g, m, "/merge_requests")))
    for _ in range(3):
        other = make.project_with_repository(namespace=make.group(parent=g))
        make.merge_request(
            other, make.user(), milestone=m, labels=[make.label(project=other)], assignees=[user]
        )
    many = count(runtime, lambda: api(user).get(url(g, m, "/merge_requests")))
    assert few == many


def test_group_list_with_descendants_is_constant(api, make, runtime):
    user = make.user()
    top = make.group(members={user: REPORTER})
    sub = make.group(parent=top)
    make.milestone(group=top)
    query = {"include_descendants": "true", "include_ancestors": "true"}
    few = count(runtime, lambda: api(user).get(url(top), params=query))
    for _ in range(5):
        make.milestone(group=sub)
        make.milestone(project=make.project(namespace=sub))
    many = count(runtime, lambda: api(user).get(url(top), params=query))
    assert few == many


def test_group_milestone_issues_are_constant(api, make, runtime):
    user = make.user()
    g = make.group(members={user: REPORTER})
    m = make.milestone(group=g)
    make.issue(make.project(namespace=g), user, milestone=m)
    few = count(runtime, lambda: api(user).get(url(g, m, "/issues")))
    for _ in range(4):
        make.issue(make.project(namespace=g), make.user(), milestone=m, assignees=[make.user()])
    many = count(runtime, lambda: api(user).get(url(g, m, "/issues")))
    assert few == many
