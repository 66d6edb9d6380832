"""Threads on issues and epics: every note grouped by its discussion id; a thread started as
one takes replies, an individual note turns into a thread when replied to, the system's own
notes take none; resolving works on resolvable notes only (issues' are not, as in GitLab)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from kiln.auth.actor import Actor
from kiln.errors import Forbidden
from kiln.models import Issue, Note
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.queries.users import row_by_id
from kiln.schemas.discussions import DiscussionResolve
from kiln.schemas.notes import for_noteable
from kiln.services import discussions
from kiln.services.subjects import ISSUES
from tests.statements import count


def threads_url(project, issue, discussion_id=None):
    url = f"/projects/{project.id}/issues/{issue.iid}/discussions"
    return url if discussion_id is None else f"{url}/{discussion_id}"


def public_issue(make, **fields):
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    return owner, project, make.issue(project, owner, **fields)


def bodies(db, issue) -> list[str]:
    db.expire_all()
    return list(db.scalars(select(Note.body).where(Note.noteable_id == issue.id).order_by(Note.id)))


def test_every_note_is_a_thread_of_its_own_until_replied_to(api, make):
    owner, p, i = public_issue(make)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    # The later note is written first, so creation time and id disagree.
    second = make.note(i, owner, body="second", created_at=base + timedelta(hours=1))
    first = make.note(i, owner, body="first", created_at=base)
    listed = api().get(threads_url(p, i)).json()
    assert [(d["id"], d["individual_note"], [n["id"] for n in d["notes"]]) for d in listed] == [
        (first.discussion_id, True, [first.id]),
        (second.discussion_id, True, [second.id]),
    ]


def test_starting_a_thread(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(threads_url(p, i), json={"body": "Let's discuss"})
    assert r.status_code == 201
    thread = r.json()
    assert thread["individual_note"] is False
    assert [(n["type"], n["body"]) for n in thread["notes"]] == [("DiscussionNote", "Let's discuss")]
    assert len(thread["id"]) == 40
    assert db.scalar(select(Issue.user_notes_count).where(Issue.id == i.id)) == 1


def test_a_reply_joins_the_thread(api, make, db):
    owner, p, i = public_issue(make)
    thread = api(owner).post(threads_url(p, i), json={"body": "start"}).json()
    other = make.user()
    r = api(other).post(f"{threads_url(p, i, thread['id'])}/notes", json={"body": "reply"})
    assert (r.status_code, r.json()["type"]) == (201, "DiscussionNote")
    got = api().get(threads_url(p, i, thread["id"])).json()
    assert [n["body"] for n in got["notes"]] == ["start", "reply"]
    assert db.scalar(select(Issue.user_notes_count).where(Issue.id == i.id)) == 2


def test_replying_to_an_individual_note_makes_it_a_thread(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, body="alone")
    r = api(owner).post(f"{threads_url(p, i, note.discussion_id)}/notes", json={"body": "now a thread"})
    assert r.status_code == 201
    got = api().get(threads_url(p, i, note.discussion_id)).json()
    assert got["individual_note"] is False
    assert [n["type"] for n in got["notes"]] == ["DiscussionNote", "DiscussionNote"]


def test_a_system_note_takes_no_reply(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, body="closed", system=True)
    r = api(owner).post(f"{threads_url(p, i, note.discussion_id)}/notes", json={"body": "why"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "400 Bad request - Discussion can not be replied to."},
    )
    assert db.scalar(select(Issue.user_notes_count).where(Issue.id == i.id)) == 0
    assert bodies(db, i) == ["closed"]


def test_an_unknown_thread_is_not_found(api, make, db):
    owner, p, i = public_issue(make)
    for r in (
        api().get(threads_url(p, i, "0" * 40)),
        api(owner).post(f"{threads_url(p, i, '0' * 40)}/notes", json={"body": "x"}),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Discussion Not Found"})
    assert bodies(db, i) == []


def test_a_thread_of_internal_notes_is_hidden_below_reporter(api, make, db):
    owner, p, i = public_issue(make)
    guest, reporter = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, reporter, REPORTER)
    internal = make.note(i, owner, internal=True, type="DiscussionNote")
    assert api(guest).get(threads_url(p, i)).json() == []
    assert api(guest).get(threads_url(p, i, internal.discussion_id)).status_code == 404
    assert (
        api(guest).post(f"{threads_url(p, i, internal.discussion_id)}/notes", json={"body": "x"}).status_code
        == 404
    )
    assert bodies(db, i) == ["A comment"]
    assert len(api(reporter).get(threads_url(p, i)).json()) == 1
    reply = (
        api(reporter).post(f"{threads_url(p, i, internal.discussion_id)}/notes", json={"body": "x"}).json()
    )
    assert reply["internal"] is True


def test_a_reply_needs_a_body(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner)
    r = api(owner).post(f"{threads_url(p, i, note.discussion_id)}/notes", json={})
    assert (r.status_code, r.json()) == (400, {"error": "body is missing"})
    assert db.scalar(select(Note.type).where(Note.id == note.id)) is None
    assert bodies(db, i) == ["A comment"]


def test_a_locked_issue_takes_no_thread_from_a_guest(api, make, db):
    owner, p, i = public_issue(make, discussion_locked=True)
    note = make.note(i, owner)
    guest = make.user()
    make.member(p, guest, GUEST)
    assert api(guest).post(threads_url(p, i), json={"body": "x"}).status_code == 403
    r = api(guest).post(f"{threads_url(p, i, note.discussion_id)}/notes", json={"body": "x"})
    assert r.status_code == 403
    assert db.scalar(select(Note.type).where(Note.id == note.id)) is None
    assert bodies(db, i) == ["A comment"]


def test_a_thread_note_is_read_changed_and_deleted(api, make, db):
    owner, p, i = public_issue(make)
    thread = api(owner).post(threads_url(p, i), json={"body": "a"}).json()
    note_url = f"{threads_url(p, i, thread['id'])}/notes/{thread['notes'][0]['id']}"
    assert api().get(note_url).json()["body"] == "a"
    assert api(owner).put(note_url, json={"body": "b"}).json()["body"] == "b"
    assert api(make.user()).put(note_url, json={"body": "c"}).status_code == 403
    assert bodies(db, i) == ["b"]
    assert api(owner).delete(note_url).status_code == 204
    assert api().get(threads_url(p, i)).json() == []
    assert db.scalar(select(Issue.user_notes_count).where(Issue.id == i.id)) == 0


def test_a_thread_note_update_takes_exactly_one_of_body_and_resolved(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, type="DiscussionNote", resolvable=True)
    url = f"{threads_url(p, i, note.discussion_id)}/notes/{note.id}"
    r = api(owner).put(url, json={})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "body, resolved are missing, exactly one parameter must be provided"},
    )
    r = api(owner).put(url, json={"body": "x", "resolved": True})
    assert (r.status_code, r.json()) == (400, {"error": "body, resolved are mutually exclusive"})
    assert bodies(db, i) == ["A comment"]
    assert db.scalar(select(Note.resolved_at).where(Note.id == note.id)) is None


def test_an_issue_note_is_not_resolvable(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner)
    r = api(owner).put(f"{threads_url(p, i, note.discussion_id)}/notes/{note.id}", json={"resolved": True})
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Note is not resolvable"})
    db.expire_all()
    assert db.scalar(select(Note.resolved_at).where(Note.id == note.id)) is None


def test_issue_threads_have_no_resolve_route(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, type="DiscussionNote", resolvable=True)
    r = api(owner).put(threads_url(p, i, note.discussion_id), json={"resolved": True})
    assert (r.status_code, r.json()) == (405, {"error": "405 Not Allowed"})
    db.expire_all()
    assert db.scalar(select(Note.resolved_at).where(Note.id == note.id)) is None


def test_a_resolvable_note_is_resolved_and_reopened(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, type="DiscussionNote", resolvable=True)
    url = f"{threads_url(p, i, note.discussion_id)}/notes/{note.id}"
    resolved = api(owner).put(url, json={"resolved": True}).json()
    assert (resolved["resolved"], resolved["resolved_by"]["id"]) == (True, owner.id)
    assert resolved["resolved_at"] is not None
    assert db.scalar(select(Note.resolved_by_id).where(Note.id == note.id)) == owner.id
    reopened = api(owner).put(url, json={"resolved": "false"}).json()
    assert (reopened["resolved"], reopened["resolved_by"], reopened["resolved_at"]) == (False, None, None)
    db.expire_all()
    assert db.scalar(select(Note.resolved_at).where(Note.id == note.id)) is None


def test_resolving_takes_a_developer_or_the_noteables_author(api, make, db):
    owner, p, i = public_issue(make)
    guest, developer = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, developer, DEVELOPER)
    note = make.note(i, owner, type="DiscussionNote", resolvable=True)
    url = f"{threads_url(p, i, note.discussion_id)}/notes/{note.id}"
    assert api(guest).put(url, json={"resolved": True}).status_code == 403
    assert db.scalar(select(Note.resolved_at).where(Note.id == note.id)) is None
    assert api(developer).put(url, json={"resolved": True}).json()["resolved"] is True


def test_a_whole_thread_resolves_through_its_resolvable_notes(make, db):
    """The machinery merge requests' `PUT …/discussions/:id` route is built on."""
    owner, p, i = public_issue(make)
    first = make.note(i, owner, type="DiscussionNote", resolvable=True)
    make.note(i, owner, type="DiscussionNote", resolvable=True, discussion_id=first.discussion_id)
    params = for_noteable(DiscussionResolve, "issue_iid", "Issue")(
        id=str(p.id), issue_iid=i.iid, discussion_id=first.discussion_id, resolved=True
    )
    actor = Actor(user=row_by_id(db, owner.id), via="personal_access_token", scopes=None)
    found = discussions.resolve_discussion(db, actor, ISSUES, params, by_id=False)
    assert [r.resolved_at is not None for r in found.thread.notes] == [True, True]
    plain = make.note(i, owner)
    params.discussion_id = plain.discussion_id
    with pytest.raises(Forbidden):
        discussions.resolve_discussion(db, actor, ISSUES, params, by_id=False)


def test_epic_threads_use_the_epics_global_id(api, make):
    owner = make.user()
    g = make.group(owners=[owner], visibility="public")
    make.epic(make.group(owners=[owner]), owner)
    e = make.epic(g, owner)
    url = f"/groups/{g.id}/epics/{e.id}/discussions"
    thread = api(owner).post(url, json={"body": "epic thread"}).json()
    assert thread["notes"][0]["noteable_type"] == "Epic"
    assert api(owner).post(f"{url}/{thread['id']}/notes", json={"body": "reply"}).status_code == 201
    assert [len(d["notes"]) for d in api().get(url).json()] == [2]
    assert api(owner).get(f"/groups/{g.id}/epics/{e.iid}/discussions").status_code == 404


def test_list_is_constant_in_threads_and_notes(api, make, runtime):
    owner, p, i = public_issue(make)
    make.note(i, owner)
    few = count(runtime, lambda: api(owner).get(threads_url(p, i)))
    for _ in range(6):
        start = make.note(i, make.user(), type="DiscussionNote")
        make.note(i, make.user(), type="DiscussionNote", discussion_id=start.discussion_id)
    many = count(runtime, lambda: api(owner).get(threads_url(p, i)))
    assert len(api(owner).get(threads_url(p, i)).json()) == 7
    assert few == many
