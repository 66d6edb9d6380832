"""Single issues: the view, opening, changing, closing, deleting, subscriptions,
participants, moving, cloning and ordering."""

from __future__ import annotations

import threading
from datetime import date

import pytest
from sqlalchemy import func, select

from kiln.auth.actor import Actor
from kiln.models import (
    AwardEmoji,
    EpicIssue,
    Event,
    Issue,
    IssueAssignee,
    Label,
    LabelLink,
    Note,
    ResourceLabelEvent,
    ResourceMilestoneEvent,
    ResourceStateEvent,
    ResourceWeightEvent,
    Subscription,
    Todo,
)
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.models.notes import ISSUE
from kiln.models.todos import ASSIGNED, DONE, MENTIONED, PENDING
from kiln.queries.users import row_by_id
from kiln.schemas.issues import IssueCreate
from kiln.services import issues as issue_service
from tests.statements import count

ISSUE_FIELDS = {
    "id",
    "iid",
    "project_id",
    "title",
    "description",
    "state",
    "created_at",
    "updated_at",
    "closed_at",
    "closed_by",
    "labels",
    "milestone",
    "assignees",
    "assignee",
    "author",
    "type",
    "issue_type",
    "user_notes_count",
    "merge_requests_count",
    "upvotes",
    "downvotes",
    "due_date",
    "confidential",
    "discussion_locked",
    "web_url",
    "time_stats",
    "task_completion_status",
    "has_tasks",
    "task_status",
    "_links",
    "references",
    "moved_to_id",
    "weight",
    "epic_iid",
    "epic",
    "severity",
    "service_desk_reply_to",
    "blocking_issues_count",
}


def url(p, iid=None, rest="") -> str:
    base = f"/projects/{p.id}/issues"
    return base if iid is None else f"{base}/{iid}{rest}"


def notes_of(db, issue_id) -> list[str]:
    return list(
        db.scalars(
            select(Note.body)
            .where(Note.noteable_type == ISSUE, Note.noteable_id == issue_id, Note.system.is_(True))
            .order_by(Note.id)
        )
    )


def counted(db, model) -> int:
    return db.scalar(select(func.count()).select_from(model))


# ----------------------------------------------------------------------------- the view


def test_the_view_holds_every_field_of_the_spec(api, make, settings):
    u = make.user()
    g = make.group(owners=[u], path="team")
    p = make.project(namespace=g, path="app")
    m = make.milestone(project=p, title="v1", due_date=date(2030, 1, 31))
    bug = make.label(project=p, title="bug")
    helper = make.user()
    issue = make.issue(
        p,
        u,
        title="Crash",
        description="* [x] one\n1. [ ] two\n- [X] three",
        labels=[bug],
        assignees=[helper],
        milestone=m,
        due_date=date(2030, 1, 1),
        weight=2,
        time_estimate=3600 * 9 + 1800,
        upvotes=2,
        downvotes=1,
    )
    epic = make.epic(g, u, issues=[issue])
    v = api(u).get(url(p, 1)).json()
    assert set(v) >= ISSUE_FIELDS
    base = settings.external_url
    assert v["type"] == "ISSUE"
    assert v["issue_type"] == "issue"
    assert v["labels"] == ["bug"]
    assert v["milestone"]["title"] == "v1"
    assert v["milestone"]["project_id"] == p.id
    assert v["milestone"]["web_url"] == f"{base}/team/app/-/milestones/1"
    assert [a["id"] for a in v["assignees"]] == [helper.id]
    assert v["assignee"]["id"] == helper.id
    assert v["author"]["username"] == u.username
    assert (v["upvotes"], v["downvotes"], v["merge_requests_count"]) == (2, 1, 0)
    assert v["task_completion_status"] == {"count": 3, "completed_count": 2}
    assert (v["has_tasks"], v["task_status"]) == (True, "2 of 3 checklist items completed")
    assert v["time_stats"] == {
        "time_estimate": 34200,
        "total_time_spent": 0,
        "human_time_estimate": "1d 1h 30m",
        "human_total_time_spent": None,
    }
    assert v["web_url"] == f"{base}/team/app/-/issues/1"
    assert v["references"] == {"short": "#1", "relative": "#1", "full": "team/app#1"}
    assert v["_links"]["self"] == f"{base}/api/v4/projects/{p.id}/issues/1"
    assert v["_links"]["notes"].endswith("/issues/1/notes")
    assert v["_links"]["award_emoji"].endswith("/issues/1/award_emoji")
    assert v["_links"]["project"] == f"{base}/api/v4/projects/{p.id}"
    assert (v["epic_iid"], v["epic"]["id"], v["epic"]["url"]) == (epic.iid, epic.id, "/groups/team/-/epics/1")
    assert (v["due_date"], v["weight"], v["severity"]) == ("2030-01-01", 2, "UNKNOWN")
    assert v["subscribed"] is True  # the author takes part


def test_lists_carry_no_subscribed_field(api, make):
    u = make.user()
    p = make.project(owner=u)
    make.issue(p, u)
    assert "subscribed" not in api(u).get(url(p)).json()[0]
    assert api(u).get(url(p, 1)).json()["subscribed"] is True  # the single view does carry it


def test_a_missing_issue_and_a_hidden_confidential_one_are_404(api, make):
    u, guest = make.user(), make.user()
    p = make.project(owner=u, members={guest: GUEST})
    make.issue(p, u, confidential=True)
    for r in (api(guest).get(url(p, 1)), api(u).get(url(p, 9))):
        assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert api(u).get(url(p, 1)).status_code == 200


def test_an_issue_of_a_private_project_is_hidden_from_strangers(api, make):
    u = make.user()
    p = make.project(owner=u)
    make.issue(p, u)
    r = api(make.user()).get(url(p, 1))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api().get(url(p, 1)).status_code == 404


def test_issue_by_global_id_is_for_administrators(api, make):
    u = make.user()
    p = make.project(owner=u)
    issue = make.issue(p, u)
    assert api(u).get(f"/issues/{issue.id}").status_code == 403
    r = api("root").get(f"/issues/{issue.id}")
    assert (r.status_code, r.json()["iid"]) == (200, 1)
    assert api("root").get("/issues/999999").json() == {"message": "404 Issue Not Found"}


def test_a_single_view_costs_a_constant_number_of_statements(api, make, runtime):
    u = make.user()
    p = make.project(owner=u)
    make.issue(p, u)
    few = count(runtime, lambda: api(u).get(url(p, 1)))
    labels = [make.label(project=p) for _ in range(4)]
    make.issue(
        p, u, labels=labels, assignees=[make.user() for _ in range(4)], milestone=make.milestone(project=p)
    )
    assert count(runtime, lambda: api(u).get(url(p, 2))) <= few + 1  # the milestone


# ----------------------------------------------------------------------------- opening


def test_create_with_everything(api, make, db):
    u = make.user()
    helper = make.user()
    g = make.group(owners=[u])
    p = make.project(namespace=g, members={helper: DEVELOPER})
    m = make.milestone(project=p, title="v1")
    make.label(project=p, title="bug")
    epic = make.epic(g, u)
    r = api(u).post(
        url(p),
        json={
            "title": "New",
            "description": "hello @" + helper.username,
            "labels": "bug,fresh",
            "assignee_ids": [helper.id],
            "milestone_id": m.id,
            "due_date": "2030-02-03",
            "weight": 4,
            "confidential": True,
            "issue_type": "incident",
            "discussion_locked": True,
            "epic_iid": epic.iid,
        },
    )
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["iid"], v["title"], v["labels"], v["milestone"]["id"]) == (1, "New", ["bug", "fresh"], m.id)
    assert [a["id"] for a in v["assignees"]] == [helper.id]
    assert (v["due_date"], v["weight"], v["confidential"], v["issue_type"], v["type"]) == (
        "2030-02-03",
        4,
        True,
        "incident",
        "INCIDENT",
    )
    assert (v["discussion_locked"], v["epic_iid"]) == (True, epic.iid)
    assert db.scalar(select(Label.color).where(Label.title == "fresh", Label.project_id == p.id)) == "#6699cc"
    todo_actions = sorted(db.scalars(select(Todo.action).where(Todo.user_id == helper.id)))
    assert todo_actions == [ASSIGNED, MENTIONED]
    event = db.scalars(select(Event).where(Event.target_type == "Issue")).one()
    assert (event.action, event.data["hook"], event.data["hook_action"]) == (
        "opened",
        "confidential_issue",
        "open",
    )
    assert counted(db, ResourceLabelEvent) == 2


def test_labels_as_an_array_and_assignee_id(api, make):
    u = make.user()
    p = make.project(owner=u)
    v = api(u).post(url(p), json={"title": "t", "labels": ["a", "b"], "assignee_id": u.id}).json()
    assert (v["labels"], v["assignee"]["id"]) == (["a", "b"], u.id)


def test_iids_follow_each_other_per_project(api, make):
    u = make.user()
    p, q = make.project(owner=u), make.project(owner=u)
    assert [api(u).post(url(p), json={"title": "x"}).json()["iid"] for _ in range(3)] == [1, 2, 3]
    assert api(u).post(url(q), json={"title": "x"}).json()["iid"] == 1


def test_title_is_required_and_bad_input_writes_nothing(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(url(p), json={"description": "no title"})
    assert (r.status_code, r.json()) == (400, {"error": "title is missing"})
    r = api(u).post(url(p), json={"title": "  "})
    assert (r.status_code, r.json()) == (400, {"message": {"title": ["can't be blank"]}})
    r = api(u).post(url(p), json={"title": "t", "description": "x" * 1_048_577})
    assert r.status_code == 400
    assert r.json()["message"]["description"] == ["is too long (maximum is 1048576 characters)"]
    r = api(u).post(url(p), json={"title": "t", "weight": -1})
    assert r.status_code == 400
    r = api(u).post(url(p), json={"title": "t", "due_date": "soon"})
    assert (r.status_code, r.json()) == (400, {"error": "due_date is invalid"})
    assert counted(db, Issue) == 0
    assert counted(db, Event) == 0
    assert api(u).post(url(p), json={"title": "t"}).json()["iid"] == 1


def test_guests_may_open_issues_but_not_plan_them(api, make, db):
    owner, guest = make.user(), make.user()
    p = make.project(owner=owner, visibility="public", members={guest: GUEST})
    make.label(project=p, title="bug")
    m = make.milestone(project=p)
    body = {"title": "t", "labels": "bug", "milestone_id": m.id, "assignee_ids": [owner.id], "weight": 3}
    for caller in (guest, make.user()):
        v = api(caller).post(url(p), json=body).json()
        assert (v["labels"], v["milestone"], v["assignees"], v["weight"]) == ([], None, [], None)
    assert counted(db, Label) == 1
    rows = db.scalars(select(Issue).where(Issue.project_id == p.id)).all()
    assert [(i.milestone_id, i.weight) for i in rows] == [(None, None), (None, None)]
    assert counted(db, IssueAssignee) == 0
    assert db.scalars(select(LabelLink)).all() == []


def test_reporters_plan_but_create_labels_only_where_they_may(api, make, db):
    owner, reporter = make.user(), make.user()
    p = make.project(owner=owner, members={reporter: REPORTER})
    m = make.milestone(project=p)
    v = (
        api(reporter)
        .post(url(p), json={"title": "t", "labels": "new", "milestone_id": m.id, "weight": 2})
        .json()
    )
    assert (v["labels"], v["milestone"]["id"], v["weight"]) == (["new"], m.id, 2)
    assert db.scalars(select(Label.project_id).where(Label.title == "new")).all() == [p.id]


def test_created_at_is_for_owners_and_administrators(api, make):
    owner, dev = make.user(), make.user()
    p = make.project(owner=owner, members={dev: DEVELOPER})
    when = "2020-05-06T07:08:09.000Z"
    assert api(owner).post(url(p), json={"title": "t", "created_at": when}).json()["created_at"] == when
    assert api(dev).post(url(p), json={"title": "t", "created_at": when}).json()["created_at"] != when
    assert api("root").post(url(p), json={"title": "t", "created_at": when}).json()["created_at"] == when


def test_nobody_without_sight_creates(api, make, db):
    owner = make.user()
    private = make.project(owner=owner)
    r = api(make.user()).post(url(private), json={"title": "t"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    archived = make.project(owner=owner, archived=True)
    assert api(owner).post(url(archived), json={"title": "t"}).status_code == 403
    assert api().post(url(private), json={"title": "t"}).status_code == 401
    assert counted(db, Issue) == 0


@pytest.mark.committing
def test_concurrent_creators_get_unique_gap_free_iids(make, runtime, db):
    u = make.user()
    pid = make.project(owner=u).id
    db.commit()
    errors: list[BaseException] = []

    def create() -> None:
        try:
            with runtime.sessions() as session:
                actor = Actor(user=row_by_id(session, u.id), via="personal_access_token", scopes=None)
                issue_service.create_issue(
                    session, actor, IssueCreate.model_validate({"id": str(pid), "title": "x"})
                )
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    db.rollback()
    assert sorted(db.scalars(select(Issue.iid).where(Issue.project_id == pid))) == list(range(1, 9))


# ----------------------------------------------------------------------------- changing


def test_update_fields_with_their_system_notes_and_events(api, make, db):
    u, helper = make.user(), make.user()
    p = make.project(owner=u, members={helper: DEVELOPER})
    m = make.milestone(project=p, title="v1")
    make.label(project=p, title="bug")
    issue = make.issue(p, u, title="old", description="before")
    r = api(u).put(
        url(p, 1),
        json={
            "title": "new",
            "description": "after",
            "labels": "bug",
            "milestone_id": m.id,
            "assignee_ids": [helper.id],
            "due_date": "2030-03-04",
            "confidential": True,
            "discussion_locked": True,
            "weight": 5,
        },
    )
    assert r.status_code == 200, r.text
    v = r.json()
    assert (v["title"], v["description"], v["labels"], v["milestone"]["id"]) == (
        "new",
        "after",
        ["bug"],
        m.id,
    )
    assert (v["due_date"], v["confidential"], v["discussion_locked"], v["weight"]) == (
        "2030-03-04",
        True,
        True,
        5,
    )
    assert notes_of(db, issue.id) == [
        "changed title from **old** to **new**",
        "made the issue confidential",
        "changed the description",
        'added ~"bug" label',
        'changed milestone to %"v1"',
        f"assigned to @{helper.username}",
        "changed due date to March 4, 2030",
        "changed weight to **5**",
        "locked this issue",
    ]
    assert db.scalars(select(Todo.action).where(Todo.user_id == helper.id)).all() == [ASSIGNED]
    assert (counted(db, ResourceMilestoneEvent), counted(db, ResourceWeightEvent)) == (1, 1)
    db.refresh(issue)
    assert issue.last_edited_by_id == u.id
    event = db.scalars(select(Event).where(Event.action == "updated")).one()
    assert event.data["hook"] == "confidential_issue"
    assert event.data["changes"]["title"] == {"previous": "old", "current": "new"}


def test_close_and_reopen(api, make, db):
    u, helper = make.user(), make.user()
    p = make.project(owner=u, members={helper: DEVELOPER})
    issue = make.issue(p, u, assignees=[helper])
    api(u).put(url(p, 1), json={"assignee_ids": [helper.id, u.id]})
    other = make.issue(p, u)
    with db.begin_nested():
        db.add(
            Todo(user_id=helper.id, author_id=u.id, target_type=ISSUE, target_id=issue.id, action=ASSIGNED)
        )
        db.add(
            Todo(user_id=helper.id, author_id=u.id, target_type=ISSUE, target_id=other.id, action=ASSIGNED)
        )
    v = api(u).put(url(p, 1), json={"state_event": "close"}).json()
    assert (v["state"], v["closed_by"]["id"]) == ("closed", u.id)
    assert v["closed_at"] is not None
    assert db.scalars(select(Todo.state).where(Todo.target_id == issue.id)).all() == [DONE]
    assert db.scalars(select(Todo.state).where(Todo.target_id == other.id)).all() == [PENDING]
    v = api(u).put(url(p, 1), json={"state_event": "reopen"}).json()
    assert (v["state"], v["closed_at"], v["closed_by"]) == ("opened", None, None)
    assert notes_of(db, issue.id)[-2:] == ["closed", "reopened"]
    states = db.scalars(select(ResourceStateEvent.state).order_by(ResourceStateEvent.id)).all()
    assert states == ["closed", "reopened"]
    actions = db.scalars(select(Event.action).order_by(Event.id)).all()
    assert actions[-2:] == ["closed", "reopened"]


def test_add_and_remove_labels(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    a, b = make.label(project=p, title="a"), make.label(project=p, title="b")
    issue = make.issue(p, u, labels=[a])
    assert api(u).put(url(p, 1), json={"add_labels": "b,c"}).json()["labels"] == ["a", "b", "c"]
    assert api(u).put(url(p, 1), json={"remove_labels": ["a", "c"]}).json()["labels"] == ["b"]
    assert api(u).put(url(p, 1), json={"labels": ""}).json()["labels"] == []
    assert notes_of(db, issue.id) == [
        'added ~"b" ~"c" labels',
        'removed ~"a" ~"c" labels',
        'removed ~"b" label',
    ]
    assert b.id is not None


def test_unassign_and_remove_milestone_weight_and_due_date(api, make, db):
    u = make.user()
    p = make.project(owner=u)
    m = make.milestone(project=p, title="v1")
    issue = make.issue(p, u, assignees=[u], milestone=m, weight=2, due_date=date(2030, 1, 1))
    v = (
        api(u)
        .put(url(p, 1), json={"assignee_ids": [], "milestone_id": None, "weight": None, "due_date": None})
        .json()
    )
    assert (v["assignees"], v["milestone"], v["weight"], v["due_date"]) == ([], None, None, None)
    make.issue(p, u, assignees=[u], milestone=m)
    v = api(u).put(url(p, 2), data={"assignee_ids": "0", "milestone_id": "0"}).json()
    assert (v["assignees"], v["milestone"]) == ([], None)
    assert f"unassigned @{u.username}" in notes_of(db, issue.id)
    assert 'removed milestone %"v1"' in notes_of(db, issue.id)


def test_who_may_update(api, make, db):
    owner, author, guest, reporter = (make.user() for _ in range(4))
    p = make.project(owner=owner, visibility="public", members={guest: GUEST, reporter: REPORTER})
    make.issue(p, author, title="t")
    assert api(guest).put(url(p, 1), json={"title": "x"}).status_code == 403
    assert api(make.user()).put(url(p, 1), json={"title": "x"}).status_code == 403
    assert db.scalar(select(Issue.title)) == "t"
    assert counted(db, Note) == 0
    assert api(author).put(url(p, 1), json={"title": "by author"}).status_code == 200
    assert api(reporter).put(url(p, 1), json={"title": "by reporter"}).status_code == 200
    # The author without admin_issue: planning fields are dropped, the rest applies.
    v = api(author).put(url(p, 1), json={"title": "again", "weight": 9, "labels": "x"}).json()
    assert (v["title"], v["weight"], v["labels"]) == ("again", None, [])
    assert db.scalar(select(Issue.title)) == "again"


def test_a_refused_or_invalid_update_writes_nothing(api, make, db):
    u, guest = make.user(), make.user()
    p = make.project(owner=u, visibility="public", members={guest: GUEST})
    make.issue(p, u, title="t")
    before = (counted(db, Note), counted(db, Event))
    assert api(guest).put(url(p, 1), json={"title": "x", "state_event": "close"}).status_code == 403
    assert api(u).put(url(p, 1), json={"title": ""}).status_code == 400
    assert api(u).put(url(p, 1), json={"state_event": "finish"}).status_code == 400
    assert api(u).put(url(p, 1), json={"title": "x", "description": "y" * 1_048_577}).status_code == 400
    assert (counted(db, Note), counted(db, Event)) == before
    assert db.scalar(select(Issue.title)) == "t"


def test_mentions_in_a_new_description_give_to_dos_once(api, make, db):
    u, friend = make.user(), make.user()
    p = make.project(owner=u, members={friend: DEVELOPER})
    make.issue(p, u)
    api(u).put(url(p, 1), json={"description": f"ping @{friend.username}"})
    api(u).put(url(p, 1), json={"description": f"ping @{friend.username} again"})
    assert db.scalars(select(Todo.action).where(Todo.user_id == friend.id)).all() == [MENTIONED]


def test_updated_at_is_for_owners(api, make):
    u = make.user()
    p = make.project(owner=u)
    make.issue(p, u)
    when = "2021-01-02T03:04:05.000Z"
    assert api(u).put(url(p, 1), json={"title": "x", "updated_at": when}).json()["updated_at"] == when
    dev = make.user()
    make.member(p, dev, DEVELOPER)
    assert api(dev).put(url(p, 1), json={"title": "y", "updated_at": when}).json()["updated_at"] != when


# ----------------------------------------------------------------------------- deleting


def test_delete_is_for_owners_and_administrators(api, make, db):
    owner, maintainer = make.user(), make.user()
    p = make.project(owner=owner, members={maintainer: MAINTAINER})
    issue = make.issue(p, owner)
    make.note(issue, owner)
    assert api(maintainer).delete(url(p, 1)).status_code == 403
    assert api(make.user()).delete(url(p, 1)).status_code == 404
    assert (counted(db, Issue), counted(db, Note)) == (1, 1)
    assert api(owner).delete(url(p, 1)).status_code == 204
    assert (counted(db, Issue), counted(db, Note)) == (0, 0)
    assert api(owner).get(url(p, 1)).status_code == 404
    make.issue(p, owner)
    assert api("root").delete(url(p, 2)).status_code == 204
    assert counted(db, Issue) == 0


def test_deleting_an_issue_leaves_nothing_of_it_behind(api, make, db):
    owner = make.user()
    p = make.project(owner=owner)
    label, milestone = make.label(project=p), make.milestone(project=p)
    make.issue(p, owner)
    changes = {"add_labels": label.title, "milestone_id": milestone.id, "weight": 3, "state_event": "close"}
    assert api(owner).put(url(p, 1), json=changes).status_code == 200
    note = api(owner).post(url(p, 1, "/notes"), json={"body": "Agreed"}).json()
    assert (
        api(owner).post(url(p, 1, f"/notes/{note['id']}/award_emoji"), json={"name": "rocket"}).status_code
        == 201
    )
    assert api(owner).post(url(p, 1, "/todo")).status_code == 201
    assert api(owner).delete(url(p, 1)).status_code == 204
    kept = (AwardEmoji, Note, LabelLink, Todo, Subscription)
    events = (ResourceLabelEvent, ResourceMilestoneEvent, ResourceStateEvent, ResourceWeightEvent)
    assert [counted(db, model) for model in kept + events] == [0] * 9


# ----------------------------------------------------------------------------- subscriptions


def test_subscribe_and_unsubscribe_with_304s(api, make, db):
    owner, dev = make.user(), make.user()
    p = make.project(owner=owner, members={dev: DEVELOPER})
    make.issue(p, owner)
    assert api(dev).get(url(p, 1)).json()["subscribed"] is False
    r = api(dev).post(url(p, 1, "/subscribe"))
    assert (r.status_code, r.json()["subscribed"]) == (201, True)
    assert api(dev).get(url(p, 1)).json()["subscribed"] is True
    assert db.scalars(select(Subscription.subscribed).where(Subscription.user_id == dev.id)).all() == [True]
    r = api(dev).post(url(p, 1, "/subscribe"))
    assert (r.status_code, r.content) == (304, b"")
    r = api(dev).post(url(p, 1, "/unsubscribe"))
    assert (r.status_code, r.json()["subscribed"]) == (201, False)
    assert api(dev).post(url(p, 1, "/unsubscribe")).status_code == 304
    assert api(dev).get(url(p, 1)).json()["subscribed"] is False


def test_participants_are_subscribed_until_they_opt_out(api, make, db):
    owner = make.user()
    p = make.project(owner=owner)
    make.issue(p, owner)
    assert api(owner).post(url(p, 1, "/subscribe")).status_code == 304
    assert api(owner).post(url(p, 1, "/unsubscribe")).json()["subscribed"] is False
    assert db.scalars(select(Subscription.subscribed)).all() == [False]


def test_participants_are_author_assignees_and_commenters(api, make):
    owner, helper, talker, bot = make.user(), make.user(), make.user(), make.user()
    p = make.project(owner=owner, visibility="public")
    issue = make.issue(p, owner, assignees=[helper])
    make.note(issue, talker)
    make.note(issue, bot, system=True)
    r = api().get(url(p, 1, "/participants"))
    assert [u["id"] for u in r.json()] == [owner.id, helper.id, talker.id]


# ----------------------------------------------------------------------------- moving, cloning


def test_move_to_another_project(api, make, db):
    u = make.user()
    g = make.group(owners=[u], path="g")
    src = make.project(namespace=g, path="src")
    dst = make.project(namespace=g, path="dst")
    make.issue(dst, u)
    make.label(project=src, title="bug")
    make.label(project=dst, title="bug")
    issue = make.issue(
        src, u, title="moving", labels=[db.scalars(select(Label).where(Label.project_id == src.id)).one()]
    )
    make.note(issue, u, body="hello")
    r = api(u).post(url(src, 1, "/move"), json={"to_project_id": dst.id})
    assert r.status_code == 201, r.text
    moved = r.json()
    assert (moved["project_id"], moved["iid"], moved["title"], moved["labels"]) == (
        dst.id,
        2,
        "moving",
        ["bug"],
    )
    old = api(u).get(url(src, 1)).json()
    assert (old["state"], old["moved_to_id"]) == ("closed", moved["id"])
    assert notes_of(db, issue.id)[-1] == "moved to g/dst#2"
    assert notes_of(db, moved["id"]) == ["moved from g/src#1"]
    bodies = db.scalars(
        select(Note.body).where(Note.noteable_id == moved["id"], Note.system.is_(False))
    ).all()
    assert bodies == ["hello"]


def test_move_refusals(api, make, db):
    u, reporter_elsewhere = make.user(), make.user()
    src = make.project(owner=u)
    make.issue(src, u)
    r = api(u).post(url(src, 1, "/move"), json={"to_project_id": src.id})
    assert (r.status_code, r.json()) == (400, {"message": "Cannot move issue to project it originates from!"})
    hidden = make.project()
    r = api(u).post(url(src, 1, "/move"), json={"to_project_id": hidden.id})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    public = make.project(visibility="public")
    r = api(u).post(url(src, 1, "/move"), json={"to_project_id": public.id})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Cannot move issue due to insufficient permissions!"},
    )
    assert api(u).post(url(src, 1, "/move"), json={}).json() == {"error": "to_project_id is missing"}
    assert counted(db, Issue) == 1
    left = api(u).get(url(src, 1)).json()
    assert (left["state"], left["moved_to_id"]) == ("opened", None)
    assert notes_of(db, left["id"]) == []
    assert reporter_elsewhere is not None


def test_clone_with_and_without_notes(api, make, db):
    u = make.user()
    src, dst = make.project(owner=u), make.project(owner=u)
    issue = make.issue(src, u, title="copy me")
    make.note(issue, u, body="a note")
    plain = api(u).post(url(src, 1, "/clone"), json={"to_project_id": dst.id}).json()
    full = api(u).post(url(src, 1, "/clone"), json={"to_project_id": dst.id, "with_notes": True}).json()
    assert (plain["iid"], full["iid"], plain["title"]) == (1, 2, "copy me")
    assert (plain["user_notes_count"], full["user_notes_count"]) == (0, 1)
    assert api(u).get(url(src, 1)).json()["state"] == "opened"
    assert notes_of(db, issue.id) == [
        f"cloned to {u.username}/{dst.path}#1",
        f"cloned to {u.username}/{dst.path}#2",
    ]


# ----------------------------------------------------------------------------- ordering


def test_reorder_places_an_issue_between_two_others(api, make):
    u = make.user()
    p = make.project(owner=u)
    a, b, c = (make.issue(p, u, relative_position=pos) for pos in (100, 200, 300))
    r = api(u).put(url(p, 3, "/reorder"), json={"move_after_id": b.id, "move_before_id": a.id})
    assert r.status_code == 200, r.text
    order = [
        i["iid"] for i in api(u).get(url(p), params={"order_by": "relative_position", "sort": "asc"}).json()
    ]
    assert order == [1, 3, 2]
    api(u).put(url(p, 1, "/reorder"), json={"move_before_id": b.id})
    order = [
        i["iid"] for i in api(u).get(url(p), params={"order_by": "relative_position", "sort": "asc"}).json()
    ]
    assert order == [3, 2, 1]
    assert c.id is not None


def test_reorder_without_room_moves_the_others(api, make):
    u = make.user()
    p = make.project(owner=u)
    a, b = make.issue(p, u, relative_position=10), make.issue(p, u, relative_position=11)
    make.issue(p, u)
    api(u).put(url(p, 3, "/reorder"), json={"move_after_id": b.id, "move_before_id": a.id})
    order = [
        i["iid"] for i in api(u).get(url(p), params={"order_by": "relative_position", "sort": "asc"}).json()
    ]
    assert order == [1, 3, 2]


def test_only_users_who_see_the_issues_are_assigned(api, make, db):
    owner, member, stranger = make.user(), make.user(), make.user()
    p = make.project(owner=owner, members={member: GUEST})
    v = api(owner).post(url(p), json={"title": "t", "assignee_ids": [member.id, stranger.id, 999999]}).json()
    assert [a["id"] for a in v["assignees"]] == [member.id]
    assert db.scalars(select(Todo.user_id)).all() == [member.id]
    v = api(owner).put(url(p, 1), json={"assignee_ids": [stranger.id]}).json()
    assert v["assignees"] == []


def test_owners_may_choose_an_iid_and_later_ones_follow_it(api, make, db):
    owner, dev = make.user(), make.user()
    p = make.project(owner=owner, members={dev: DEVELOPER})
    assert api(owner).post(url(p), json={"title": "t", "iid": 10}).json()["iid"] == 10
    assert api(dev).post(url(p), json={"title": "t", "iid": 50}).json()["iid"] == 11
    r = api(owner).post(url(p), json={"title": "t", "iid": 10})
    assert (r.status_code, r.json()) == (400, {"message": {"iid": ["has already been taken"]}})
    assert counted(db, Issue) == 2


# ----------------------------------------------------------------------------- confidentiality


def _flag(api, name: str) -> None:
    assert api("root").post(f"/features/{name}", json={"value": "true"}).status_code == 201


def test_an_issue_joins_only_an_epic_the_caller_may_add_issues_to(api, make, db):
    _flag(api, "confidential_epics")
    owner, reporter = make.user(), make.user()
    group = make.group(owners=[owner], visibility="public")
    project = make.project(namespace=group, visibility="public", members={reporter: REPORTER})
    secret = make.epic(group, owner, title="Hidden plan", confidential=True)
    issue = make.issue(project, reporter)
    r = api(reporter).put(f"/projects/{project.id}/issues/{issue.iid}", json={"epic_id": secret.id})
    assert r.status_code == 404
    assert r.json() == {"message": "404 Epic Not Found"}
    shown = api().get(f"/projects/{project.id}/issues/{issue.iid}").json()
    assert shown["epic"] is None
    assert api(owner).get(f"/projects/{project.id}/issues/{issue.iid}").json()["epic"] is None
    assert counted(db, EpicIssue) == 0


def test_a_confidential_epic_takes_only_confidential_issues(api, make):
    _flag(api, "confidential_epics")
    owner = make.user()
    group = make.group(owners=[owner])
    project = make.project(namespace=group, owner=owner)
    secret = make.epic(group, owner, confidential=True)
    issue = make.issue(project, owner)
    r = api(owner).put(f"/projects/{project.id}/issues/{issue.iid}", json={"epic_id": secret.id})
    assert r.status_code == 400
    assert "Make the issue confidential" in r.json()["message"]
    assert api(owner).get(f"/projects/{project.id}/issues/{issue.iid}").json()["epic"] is None


def test_an_issue_in_a_confidential_epic_cannot_be_made_public(api, make, db):
    _flag(api, "confidential_epics")
    owner, guest = make.user(), make.user()
    group = make.group(owners=[owner], visibility="public")
    project = make.project(namespace=group, visibility="public", members={guest: GUEST})
    issue = make.issue(project, guest, confidential=True)
    make.epic(group, owner, confidential=True, issues=[issue])
    r = api(guest).put(f"/projects/{project.id}/issues/{issue.iid}", json={"confidential": False})
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "confidential": ["this issue cannot be made public since it belongs to a confidential epic"]
        }
    }
    db.expire_all()
    assert db.get(Issue, issue.id).confidential is True
    assert api().get(f"/projects/{project.id}/issues/{issue.iid}").status_code == 404


def test_mentions_in_the_change_that_makes_an_issue_confidential_reach_only_its_readers(api, make, db):
    owner, stranger = make.user(), make.user()
    project = make.project(owner=owner, visibility="public")
    issue = make.issue(project, owner)
    body = {"description": f"@{stranger.username} see this", "confidential": True}
    assert api(owner).put(f"/projects/{project.id}/issues/{issue.iid}", json=body).status_code == 200
    db.expire_all()
    assert db.scalars(select(Todo).where(Todo.user_id == stranger.id)).all() == []
    # The same mention on a public issue does reach them.
    other = make.issue(project, owner)
    body = {"description": f"@{stranger.username} see this"}
    assert api(owner).put(f"/projects/{project.id}/issues/{other.iid}", json=body).status_code == 200
    assert db.scalars(select(Todo.target_id).where(Todo.user_id == stranger.id)).all() == [other.id]


def test_a_confidential_issue_is_assigned_only_to_those_who_may_read_it(api, make):
    owner, reporter, stranger = make.user(), make.user(), make.user()
    project = make.project(owner=owner, visibility="public", members={reporter: REPORTER})
    issue = make.issue(project, owner, confidential=True)
    r = api(reporter).put(
        f"/projects/{project.id}/issues/{issue.iid}", json={"assignee_ids": [stranger.id, reporter.id]}
    )
    assert r.status_code == 200, r.text
    assert [a["id"] for a in r.json()["assignees"]] == [reporter.id]
    assert api(stranger).get(f"/projects/{project.id}/issues/{issue.iid}").status_code == 404
    # On a public issue the same stranger may be assigned: it is the confidentiality that refuses.
    shown = make.issue(project, owner)
    r = api(reporter).put(f"/projects/{project.id}/issues/{shown.iid}", json={"assignee_ids": [stranger.id]})
    assert [a["id"] for a in r.json()["assignees"]] == [stranger.id]


def test_participants_leave_out_authors_of_internal_notes_for_those_who_cannot_read_them(api, make):
    owner, reporter, guest = make.user(), make.user(), make.user()
    project = make.project(owner=owner, visibility="public", members={reporter: REPORTER, guest: GUEST})
    issue = make.issue(project, owner)
    make.note(issue, reporter, body="between us", internal=True)
    seen_by_guest = [
        u["id"] for u in api(guest).get(f"/projects/{project.id}/issues/{issue.iid}/participants").json()
    ]
    assert reporter.id not in seen_by_guest
    seen_by_owner = [
        u["id"] for u in api(owner).get(f"/projects/{project.id}/issues/{issue.iid}/participants").json()
    ]
    assert reporter.id in seen_by_owner
