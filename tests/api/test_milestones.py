"""Project milestones (GitLab's project milestones API): listed with filters and with their
groups' milestones, created with the project's next iid, changed, closed and reopened,
deleted (their issues lose them), promoted to the project's group, with the issues planned
against them and a burndown chart's events. Reporters change them; whoever sees the
project's issues or merge requests reads them."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import func, select

from kiln.models import Event, Issue, Milestone, ResourceMilestoneEvent, ResourceStateEvent
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.models.projects import DISABLED, FEATURE_PRIVATE
from tests.statements import count

EXTERNAL = "http://kiln.test"


def url(project, milestone=None, tail=""):
    base = f"/projects/{project.id}/milestones"
    return (
        base
        if milestone is None
        else f"{base}/{milestone if isinstance(milestone, int) else milestone.id}{tail}"
    )


def setup(make, level=MAINTAINER, **project):
    user = make.user()
    p = make.project(members={user: level}, **project)
    return user, p


def milestones_in(db, project):
    return db.scalar(select(func.count()).select_from(Milestone).where(Milestone.project_id == project.id))


# ----------------------------------------------------------------------------- the view


def test_a_created_milestone_is_shown_with_every_field(api, make):
    user, p = setup(make, REPORTER, path="app")
    r = api(user).post(
        url(p),
        json={"title": "v1.0", "description": "First", "start_date": "2030-01-01", "due_date": "2030-02-01"},
    )
    assert r.status_code == 201, r.text
    m = r.json()
    assert list(m) == [
        "id",
        "iid",
        "project_id",
        "title",
        "description",
        "state",
        "created_at",
        "updated_at",
        "due_date",
        "start_date",
        "expired",
        "web_url",
    ]
    assert m["iid"] == 1
    assert m["project_id"] == p.id
    assert (m["title"], m["description"], m["state"]) == ("v1.0", "First", "active")
    assert (m["start_date"], m["due_date"], m["expired"]) == ("2030-01-01", "2030-02-01", False)
    assert m["web_url"] == f"{EXTERNAL}/root/app/-/milestones/1"
    assert m["created_at"].endswith("Z")
    assert api(user).get(url(p, m["id"])).json() == m


def test_a_milestone_past_its_due_date_is_expired(api, make):
    user, p = setup(make)
    m = make.milestone(project=p, due_date=date.today() - timedelta(days=2))
    assert api(user).get(url(p, m)).json()["expired"] is True
    undated = make.milestone(project=p)
    assert api(user).get(url(p, undated)).json()["expired"] is False


def test_iids_count_per_project(api, make):
    user, p = setup(make)
    other = make.project(members={user: MAINTAINER})
    make.milestone(project=other)
    iids = [api(user).post(url(p), json={"title": f"m{n}"}).json()["iid"] for n in range(3)]
    assert iids == [1, 2, 3]


def test_a_milestone_of_another_project_is_not_found(api, make):
    user, p = setup(make)
    other = make.project(members={user: MAINTAINER})
    m = make.milestone(project=other)
    for r in (
        api(user).get(url(p, m)),
        api(user).put(url(p, m), json={"title": "x"}),
        api(user).delete(url(p, m)),
        api(user).get(url(p, m, "/issues")),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


# ----------------------------------------------------------------------------- lists


def test_list_orders_by_due_date_none_last_then_newest(api, make):
    user, p = setup(make)
    late = make.milestone(project=p, title="late", due_date=date(2031, 1, 1))
    undated_old = make.milestone(project=p, title="undated-old")
    soon = make.milestone(project=p, title="soon", due_date=date(2030, 1, 1))
    undated_new = make.milestone(project=p, title="undated-new")
    r = api(user).get(url(p))
    assert [m["id"] for m in r.json()] == [soon.id, late.id, undated_new.id, undated_old.id]
    assert r.headers["X-Total"] == "4"


def test_list_filters_by_state_title_iids_and_search(api, make):
    user, p = setup(make)
    a = make.milestone(project=p, title="Release 1.0", description="The first")
    b = make.milestone(project=p, title="Release 2.0", state="closed")
    c = make.milestone(project=p, title="Backlog", description="release someday")

    def ids(**query):
        r = api(user).get(url(p), params=query)
        assert r.status_code == 200, r.text
        return sorted(m["id"] for m in r.json())

    assert ids(state="active") == sorted([a.id, c.id])
    assert ids(state="closed") == [b.id]
    assert ids(state="all") == sorted([a.id, b.id, c.id])
    assert ids(title="Release 1.0") == [a.id]
    assert ids(title="release 1.0") == []
    assert ids(**{"iids[]": [a.iid, b.iid]}) == sorted([a.id, b.id])
    assert ids(search="RELEASE") == sorted([a.id, b.id, c.id])
    assert ids(search="first") == [a.id]
    assert ids(search="someday release") == [c.id]
    assert ids(search="release first") == []  # every word in one of the two
    assert ids(search_title="release") == sorted([a.id, b.id])
    assert ids(search_title="release 2.0") == [b.id]


def test_search_wildcards_match_only_themselves_and_a_blank_title_filters_nothing(api, make):
    user, p = setup(make)
    percent = make.milestone(project=p, title="100% done")
    make.milestone(project=p, title="other")

    def ids(**query):
        return sorted(m["id"] for m in api(user).get(url(p), params=query).json())

    assert ids(search="0%") == [percent.id]
    assert ids(search_title="_") == []
    assert len(ids(title="")) == 2


def test_list_filters_by_update_time_and_dates(api, make, db):
    user, p = setup(make)
    old = make.milestone(project=p, start_date=date(2030, 1, 1), due_date=date(2030, 1, 31))
    new = make.milestone(project=p, start_date=date(2030, 3, 1), due_date=date(2030, 3, 31))
    undated = make.milestone(project=p)  # no dates: in no time frame
    with db.begin_nested():
        db.get(Milestone, old.id).updated_at = datetime(2020, 1, 1, tzinfo=UTC)
    db.commit()

    def ids(**query):
        return sorted(m["id"] for m in api(user).get(url(p), params=query).json())

    assert ids(updated_after="2021-01-01T00:00:00Z") == sorted([new.id, undated.id])
    assert ids(updated_before="2021-01-01T00:00:00Z") == [old.id]
    assert ids(containing_date="2030-01-15") == [old.id]
    assert ids(start_date="2030-01-20", end_date="2030-03-05") == sorted([old.id, new.id])


def test_include_ancestors_adds_the_groups_milestones_and_ignores_iids(api, make):
    user = make.user()
    top = make.group(members={user: REPORTER})
    sub = make.group(parent=top)
    p = make.project(namespace=sub)
    own = make.milestone(project=p)
    top_m = make.milestone(group=top)
    sub_m = make.milestone(group=sub)
    make.milestone(group=make.group(members={user: REPORTER}))
    plain = api(user).get(url(p)).json()
    assert [m["id"] for m in plain] == [own.id]
    for flag in ("include_ancestors", "include_parent_milestones"):
        listed = api(user).get(url(p), params={flag: "true", "iids[]": [own.iid]}).json()
        assert sorted(m["id"] for m in listed) == sorted([own.id, top_m.id, sub_m.id])
    group_view = next(m for m in listed if m["id"] == top_m.id)
    assert group_view["group_id"] == top.id
    assert "project_id" not in group_view
    assert group_view["web_url"] == f"{EXTERNAL}/groups/{top.full_path}/-/milestones/{top_m.iid}"


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"state": "opened"}, "state does not have a valid value"),
        ({"iids[]": "abc"}, "iids is invalid"),
        ({"updated_before": "yesterday"}, "updated_before is invalid"),
        ({"containing_date": "2030-02-30"}, "containing_date is invalid"),
        (
            {"include_ancestors": "true", "include_parent_milestones": "true"},
            "include_ancestors, include_parent_milestones are mutually exclusive",
        ),
    ],
)
def test_bad_list_parameters_are_refused(api, make, query, error):
    user, p = setup(make)
    r = api(user).get(url(p), params=query)
    assert (r.status_code, r.json()) == (400, {"error": error})


# ----------------------------------------------------------------------------- creating


def test_start_after_due_is_refused_and_nothing_is_written(api, make, db):
    user, p = setup(make)
    for start in ("2030-02-01", "2030-01-01"):
        r = api(user).post(url(p), json={"title": "v1", "start_date": start, "due_date": "2030-01-01"})
        assert r.status_code == 400
        assert r.json() == {
            "message": 'Failed to create milestone {:due_date=>["must be greater than start date"]}'
        }
    assert milestones_in(db, p) == 0


def test_a_title_taken_in_the_project_or_its_groups_is_refused(api, make, db):
    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project(namespace=g)
    make.milestone(project=p, title="v1")
    make.milestone(group=g, title="v2")
    for title in ("v1", "v2"):
        r = api(user).post(url(p), json={"title": title})
        assert r.status_code == 400
        assert r.json() == {
            "message": 'Failed to create milestone {:title=>["already being used for another group or project milestone."]}'
        }
    assert milestones_in(db, p) == 1
    assert api(user).post(url(p), json={"title": "V1"}).status_code == 201


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 400, {"error": "title is missing"}),
        ({"title": "v1", "due_date": "2030-13-01"}, 400, {"error": "due_date is invalid"}),
        ({"title": ""}, 400, {"message": 'Failed to create milestone {:title=>["can\'t be blank"]}'}),
        (
            {"title": "x" * 256},
            400,
            {"message": 'Failed to create milestone {:title=>["is too long (maximum is 255 characters)"]}'},
        ),
    ],
)
def test_bad_milestones_are_refused(api, make, db, body, status, message):
    user, p = setup(make)
    r = api(user).post(url(p), json=body)
    assert (r.status_code, r.json()) == (status, message)
    assert milestones_in(db, p) == 0


def test_markup_is_taken_out_of_a_title(api, make):
    user, p = setup(make)
    assert api(user).post(url(p), json={"title": "<b>v1</b> &amp; more"}).json()["title"] == "v1 & more"


def test_creating_records_an_event(api, make, db):
    user, p = setup(make)
    m = api(user).post(url(p), json={"title": "v1"}).json()
    event = db.scalars(
        select(Event).where(Event.target_type == "Milestone", Event.target_id == m["id"])
    ).one()
    assert (event.action, event.project_id, event.author_id) == ("created", p.id, user.id)


# ----------------------------------------------------------------------------- changing


def test_update_changes_what_it_says(api, make):
    user, p = setup(make)
    m = make.milestone(project=p, title="v1", description="d", due_date=date(2030, 1, 1))
    r = api(user).put(url(p, m), json={"title": "v1.1", "start_date": "2029-12-01"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["title"], body["description"], body["start_date"], body["due_date"]) == (
        "v1.1",
        "d",
        "2029-12-01",
        "2030-01-01",
    )
    cleared = api(user).put(url(p, m), json={"due_date": None, "description": None}).json()
    assert (cleared["due_date"], cleared["description"], cleared["start_date"]) == (None, None, "2029-12-01")


def test_close_and_activate(api, make, db):
    user, p = setup(make)
    m = make.milestone(project=p)
    assert api(user).put(url(p, m), json={"state_event": "close"}).json()["state"] == "closed"
    assert api(user).get(url(p), params={"state": "closed"}).json()[0]["id"] == m.id
    assert api(user).put(url(p, m), json={"state_event": "activate"}).json()["state"] == "active"
    actions = db.scalars(
        select(Event.action)
        .where(Event.target_type == "Milestone", Event.target_id == m.id)
        .order_by(Event.id)
    ).all()
    assert actions == ["closed", "reopened"]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            {},
            "title, description, start_date, due_date, state_event are missing, at least one parameter must be provided",
        ),
        ({"state_event": "reopen"}, "state_event does not have a valid value"),
        ({"start_date": "soon"}, "start_date is invalid"),
    ],
)
def test_bad_updates_are_refused(api, make, db, body, error):
    user, p = setup(make)
    m = make.milestone(project=p, title="v1")
    r = api(user).put(url(p, m), json=body)
    assert (r.status_code, r.json()) == (400, {"error": error})
    db.expire_all()
    kept = db.get(Milestone, m.id)
    assert (kept.title, kept.state, kept.start_date) == ("v1", "active", None)


def test_an_invalid_update_writes_nothing_not_even_the_state(api, make, db):
    user, p = setup(make)
    make.milestone(project=p, title="taken")
    m = make.milestone(project=p, title="v1")
    r = api(user).put(url(p, m), json={"title": "taken", "state_event": "close"})
    assert r.status_code == 400
    assert r.json()["message"].startswith("Failed to update milestone {:title=>")
    db.expire_all()
    assert (db.get(Milestone, m.id).title, db.get(Milestone, m.id).state) == ("v1", "active")
    r = api(user).put(url(p, m), json={"due_date": "2030-01-01", "start_date": "2030-02-01"})
    assert r.json() == {
        "message": 'Failed to update milestone {:due_date=>["must be greater than start date"]}'
    }
    db.expire_all()
    assert (db.get(Milestone, m.id).start_date, db.get(Milestone, m.id).due_date) == (None, None)


def test_delete_takes_the_milestone_off_its_issues(api, make, db):
    user, p = setup(make)
    m = make.milestone(project=p)
    m_id, issue_id = m.id, make.issue(p, user, milestone=m).id
    assert api(user).delete(url(p, m)).status_code == 204
    db.expire_all()
    assert db.get(Milestone, m_id) is None
    assert db.get(Issue, issue_id).milestone_id is None
    event = db.scalars(
        select(ResourceMilestoneEvent).where(ResourceMilestoneEvent.target_id == issue_id)
    ).one()
    assert (event.action, event.state) == ("remove", "opened")
    updated = db.scalars(select(Event).where(Event.target_type == "Issue", Event.target_id == issue_id)).one()
    assert updated.data["changes"] == {"milestone_id": {"previous": m_id, "current": None}}


# ----------------------------------------------------------------------------- permissions


def test_reporters_change_milestones_guests_only_read(api, make, db):
    guest, p = setup(make, GUEST)
    m = make.milestone(project=p)
    assert api(guest).get(url(p, m)).status_code == 200
    for r in (
        api(guest).post(url(p), json={"title": "x"}),
        api(guest).put(url(p, m), json={"title": "x"}),
        api(guest).delete(url(p, m)),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert milestones_in(db, p) == 1
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    assert api(reporter).post(url(p), json={"title": "x"}).status_code == 201
    assert milestones_in(db, p) == 2


def test_an_archived_projects_milestones_are_read_only(api, make, db):
    user, p = setup(make, archived=True)
    m = make.milestone(project=p)
    assert api(user).get(url(p, m)).status_code == 200
    assert api(user).post(url(p), json={"title": "x"}).status_code == 403
    assert api(user).put(url(p, m), json={"state_event": "close"}).status_code == 403
    assert api(user).delete(url(p, m)).status_code == 403
    assert milestones_in(db, p) == 1
    db.expire_all()
    assert db.get(Milestone, m.id).state == "active"


def test_a_hidden_project_is_not_found_and_anonymous_callers_must_sign_in(api, make, db):
    _, p = setup(make)
    m = make.milestone(project=p)
    stranger = make.user()
    assert api(stranger).get(url(p, m)).json() == {"message": "404 Project Not Found"}
    assert api(stranger).post(url(p), json={"title": "x"}).status_code == 404
    public = make.project(visibility="public")
    assert api().get(url(public)).status_code == 401
    assert api(stranger).get(url(public)).status_code == 200
    assert api(stranger).post(url(public), json={"title": "x"}).status_code == 403
    assert (milestones_in(db, p), milestones_in(db, public)) == (1, 0)


def test_milestones_are_read_while_issues_or_merge_requests_are_open(api, make):
    owner = make.user()
    stranger = make.user()
    mr_only = make.project(visibility="public", issues_access_level=DISABLED, members={owner: MAINTAINER})
    assert api(stranger).get(url(mr_only)).status_code == 200
    neither = make.project(
        visibility="public",
        issues_access_level=DISABLED,
        merge_requests_access_level=FEATURE_PRIVATE,
        members={owner: MAINTAINER},
    )
    assert api(stranger).get(url(neither)).json() == {"message": "403 Forbidden"}
    assert api(owner).get(url(neither)).status_code == 200
    m = make.milestone(project=mr_only)
    make.issue(mr_only, owner, milestone=m)
    assert api(owner).get(url(mr_only, m, "/issues")).json() == []


# ----------------------------------------------------------------------------- issues


def test_issues_of_a_milestone_are_those_the_caller_may_see(api, make):
    owner = make.user()
    guest = make.user()
    p = make.project(visibility="public", members={owner: MAINTAINER, guest: GUEST})
    m = make.milestone(project=p)
    open_issue = make.issue(p, owner, milestone=m)
    secret = make.issue(p, owner, milestone=m, confidential=True)
    own_secret = make.issue(p, guest, milestone=m, confidential=True)
    make.issue(p, owner)  # not planned
    r = api(owner).get(url(p, m, "/issues"))
    assert r.status_code == 200, r.text
    assert sorted(i["id"] for i in r.json()) == sorted([open_issue.id, secret.id, own_secret.id])
    assert r.headers["X-Total"] == "3"
    first = r.json()[0]
    assert first["milestone"]["id"] == m.id
    assert first["references"]["relative"].startswith("#")
    assert sorted(i["id"] for i in api(guest).get(url(p, m, "/issues")).json()) == sorted(
        [open_issue.id, own_secret.id]
    )


def test_issues_are_ordered_by_label_priority_then_newest(api, make, db):
    from kiln.models import LabelPriority

    user, p = setup(make)
    m = make.milestone(project=p)
    urgent = make.label(project=p, title="urgent")
    later = make.label(project=p, title="later")
    with db.begin_nested():
        db.add(LabelPriority(project_id=p.id, label_id=urgent.id, priority=0))
        db.add(LabelPriority(project_id=p.id, label_id=later.id, priority=5))
    db.commit()
    plain_old = make.issue(p, user, milestone=m)
    low = make.issue(p, user, milestone=m, labels=[later])
    high = make.issue(p, user, milestone=m, labels=[urgent])
    plain_new = make.issue(p, user, milestone=m)
    listed = [i["id"] for i in api(user).get(url(p, m, "/issues")).json()]
    assert listed == [high.id, low.id, plain_new.id, plain_old.id]


def test_merge_requests_of_a_milestone_are_those_planned_against_it_as_the_list_shows_them(api, make):
    user = make.user()
    p = make.project_with_repository(members={user: MAINTAINER})
    m = make.milestone(project=p, title="v1")
    first = make.merge_request(p, user, milestone=m, labels=[make.label(project=p)])
    second = make.merge_request(p, user, milestone=m, assignees=[user])
    make.merge_request(p, user)  # not planned
    r = api(user).get(url(p, m, "/merge_requests"))
    assert r.status_code == 200, r.text
    assert [mr["id"] for mr in r.json()] == [second.id, first.id]
    assert r.headers["X-Total"] == "2"
    listed = api(user).get(f"/projects/{p.id}/merge_requests", params={"milestone": "v1"}).json()
    assert r.json() == listed
    assert r.json()[0]["milestone"]["id"] == m.id
    assert r.json()[0]["references"]["relative"] == f"!{second.iid}"


def test_merge_requests_of_a_milestone_are_ordered_by_label_priority_then_newest(api, make, db):
    from kiln.models import LabelPriority

    user = make.user()
    p = make.project_with_repository(members={user: MAINTAINER})
    m = make.milestone(project=p)
    urgent = make.label(project=p, title="urgent")
    later = make.label(project=p, title="later")
    with db.begin_nested():
        db.add(LabelPriority(project_id=p.id, label_id=urgent.id, priority=0))
        db.add(LabelPriority(project_id=p.id, label_id=later.id, priority=5))
    db.commit()
    plain_old = make.merge_request(p, user, milestone=m)
    low = make.merge_request(p, user, milestone=m, labels=[later])
    high = make.merge_request(p, user, milestone=m, labels=[urgent])
    plain_new = make.merge_request(p, user, milestone=m)
    listed = [mr["id"] for mr in api(user).get(url(p, m, "/merge_requests")).json()]
    assert listed == [high.id, low.id, plain_new.id, plain_old.id]


def test_merge_requests_of_a_milestone_only_for_those_who_read_them(api, make):
    owner, stranger = make.user(), make.user()
    p = make.project_with_repository(
        visibility="public", merge_requests_access_level=FEATURE_PRIVATE, members={owner: MAINTAINER}
    )
    m = make.milestone(project=p)
    mr = make.merge_request(p, owner, milestone=m)
    r = api(stranger).get(url(p, m, "/merge_requests"))
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")
    assert [v["id"] for v in api(owner).get(url(p, m, "/merge_requests")).json()] == [mr.id]


def test_merge_requests_of_another_projects_milestone_are_not_found(api, make):
    user = make.user()
    p = make.project(members={user: MAINTAINER})
    other = make.milestone(project=make.project(members={user: MAINTAINER}))
    r = api(user).get(url(p, other, "/merge_requests"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_delete_takes_the_milestone_off_its_merge_requests(api, make, db):
    from kiln.models import MergeRequest

    user = make.user()
    p = make.project_with_repository(members={user: MAINTAINER})
    m = make.milestone(project=p)
    m_id, mr_id = m.id, make.merge_request(p, user, milestone=m).id
    assert api(user).delete(url(p, m)).status_code == 204
    db.expire_all()
    assert db.get(MergeRequest, mr_id).milestone_id is None
    event = db.scalars(
        select(ResourceMilestoneEvent).where(
            ResourceMilestoneEvent.target_type == "MergeRequest", ResourceMilestoneEvent.target_id == mr_id
        )
    ).one()
    assert (event.action, event.state) == ("remove", "opened")
    updated = db.scalars(
        select(Event).where(Event.target_type == "MergeRequest", Event.target_id == mr_id)
    ).all()[-1]
    assert updated.data["changes"] == {"milestone_id": {"previous": m_id, "current": None}}


# ----------------------------------------------------------------------------- promotion


def test_promotion_makes_a_group_milestone_that_keeps_the_issues(api, make, db):
    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project(namespace=g)
    sibling = make.project(namespace=g)
    make.milestone(group=g, title="earlier")
    m = make.milestone(project=p, title="v1", description="d", due_date=date(2030, 1, 1))
    twin = make.milestone(project=sibling, title="v1")
    issue = make.issue(p, user, milestone=m)
    twin_issue = make.issue(sibling, user, milestone=twin)
    gone = (m.id, twin.id)
    r = api(user).post(url(p, m, "/promote"))
    assert r.status_code == 200, r.text
    promoted = r.json()
    assert (promoted["group_id"], promoted["iid"], promoted["title"]) == (g.id, 2, "v1")
    assert (promoted["description"], promoted["due_date"]) == ("d", "2030-01-01")
    db.expire_all()
    assert [db.get(Milestone, i) for i in gone] == [None, None]
    assert db.get(Issue, issue.id).milestone_id == promoted["id"]
    assert db.get(Issue, twin_issue.id).milestone_id == promoted["id"]


def test_promotion_keeps_the_merge_requests(api, make, db):
    from kiln.models import MergeRequest

    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project_with_repository(namespace=g)
    sibling = make.project_with_repository(namespace=g)
    m = make.milestone(project=p, title="v1")
    twin = make.milestone(project=sibling, title="v1")
    mr = make.merge_request(p, user, milestone=m)
    twin_mr = make.merge_request(sibling, user, milestone=twin)
    r = api(user).post(url(p, m, "/promote"))
    assert r.status_code == 200, r.text
    db.expire_all()
    assert db.get(MergeRequest, mr.id).milestone_id == r.json()["id"]
    assert db.get(MergeRequest, twin_mr.id).milestone_id == r.json()["id"]


def test_promotion_needs_a_group_and_a_reporter_there(api, make, db):
    user, personal = setup(make)
    m = make.milestone(project=personal)
    r = api(user).post(url(personal, m, "/promote"))
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Promotion failed - Project does not belong to a group."},
    )
    g = make.group(visibility="public")
    p = make.project(namespace=g, members={user: REPORTER})
    m = make.milestone(project=p)
    assert api(user).post(url(p, m, "/promote")).status_code == 403
    assert milestones_in(db, p) == 1
    assert db.scalar(select(func.count()).select_from(Milestone).where(Milestone.group_id == g.id)) == 0


# ----------------------------------------------------------------------------- burndown


def test_burndown_events_follow_the_issues_states(api, make, db):
    user, p = setup(make, DEVELOPER)
    start = date.today() - timedelta(days=10)
    m = make.milestone(project=p, start_date=start, due_date=date.today() + timedelta(days=5))
    created = datetime.now(UTC) - timedelta(days=5)
    reopened = make.issue(p, user, milestone=m, weight=3, created_at=created)
    legacy = make.issue(p, user, milestone=m, weight=2, created_at=created, state="closed")
    make.issue(p, user, milestone=m, created_at=datetime.now(UTC) + timedelta(days=1))  # after the chart
    with db.begin_nested():
        for state, days in (("closed", 4), ("closed", 3), ("reopened", 2)):
            db.add(
                ResourceStateEvent(
                    target_type="Issue",
                    target_id=reopened.id,
                    state=state,
                    created_at=datetime.now(UTC) - timedelta(days=days),
                )
            )
    db.commit()
    r = api(user).get(url(p, m, "/burndown_events"))
    assert r.status_code == 200, r.text
    events = [(e["action"], e["weight"]) for e in r.json()]
    assert events == [("created", 3), ("closed", 3), ("reopened", 3), ("created", 2), ("closed", 2)]
    assert r.json()[-1]["created_at"] == f"{start.isoformat()}T00:00:00.000Z"
    assert legacy.id


def test_burndown_without_both_dates_is_empty(api, make):
    user, p = setup(make)
    m = make.milestone(project=p, due_date=date.today())
    make.issue(p, user, milestone=m)
    assert api(user).get(url(p, m, "/burndown_events")).json() == []


# ----------------------------------------------------------------------------- statements


def test_list_is_constant_in_milestones(api, make, runtime):
    user = make.user()
    g = make.group(members={user: REPORTER})
    p = make.project(namespace=g)
    make.milestone(project=p)
    few = count(runtime, lambda: api(user).get(url(p), params={"include_ancestors": "true"}))
    for _ in range(8):
        make.milestone(project=p)
        make.milestone(group=g)
    many = count(runtime, lambda: api(user).get(url(p), params={"include_ancestors": "true"}))
    assert few == many


def test_issues_of_a_milestone_are_constant_in_issues(api, make, runtime):
    user, p = setup(make)
    m = make.milestone(project=p)
    label = make.label(project=p)
    make.issue(p, user, milestone=m, labels=[label], assignees=[user])
    few = count(runtime, lambda: api(user).get(url(p, m, "/issues")))
    for _ in range(6):
        make.issue(p, make.user(), milestone=m, labels=[make.label(project=p)], assignees=[make.user()])
    many = count(runtime, lambda: api(user).get(url(p, m, "/issues")))
    assert few == many


def test_merge_requests_of_a_milestone_are_constant_in_merge_requests(api, make, runtime):
    user = make.user()
    p = make.project_with_repository(members={user: MAINTAINER})
    m = make.milestone(project=p)
    make.merge_request(p, user, milestone=m, labels=[make.label(project=p)], assignees=[user])
    few = count(runtime, lambda: api(user).get(url(p, m, "/merge_requests")))
    for _ in range(4):
        make.merge_request(
            p,
            make.user(),
            milestone=m,
            labels=[make.label(project=p)],
            assignees=[make.user()],
            reviewers=[make.user()],
        )
    many = count(runtime, lambda: api(user).get(url(p, m, "/merge_requests")))
    assert few == many
