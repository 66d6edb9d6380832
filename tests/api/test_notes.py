"""Notes on issues and epics: comments anyone who reads the noteable reads (internal ones only
Reporters and up), written by those who may comment, changed and deleted by their author or
admin_note; each kept in the noteable's user_notes_count, with its event and mentions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from kiln.models import Epic, Event, Issue, Note, Todo
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from tests.statements import count


def notes_url(project, issue, note_id=None):
    url = f"/projects/{project.id}/issues/{issue.iid}/notes"
    return url if note_id is None else f"{url}/{note_id}"


def epic_notes_url(group, epic, note_id=None):
    url = f"/groups/{group.id}/epics/{epic.id}/notes"
    return url if note_id is None else f"{url}/{note_id}"


def public_issue(make, **fields):
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    return owner, project, make.issue(project, owner, **fields)


def user_notes_count(db, issue):
    return db.scalar(select(Issue.user_notes_count).where(Issue.id == issue.id))


def note_count(db):
    return db.scalar(select(Note.id).order_by(Note.id.desc()).limit(1))


# ----------------------------------------------------------------------------- creating


def test_a_comment_is_answered_with_gitlabs_note_view(api, make):
    owner, p, i = public_issue(make)
    r = api(owner).post(notes_url(p, i), json={"body": "Looks good"})
    assert r.status_code == 201
    view = r.json()
    assert {
        k: view[k] for k in ("type", "body", "attachment", "system", "noteable_type", "noteable_iid")
    } == {
        "type": None,
        "body": "Looks good",
        "attachment": None,
        "system": False,
        "noteable_type": "Issue",
        "noteable_iid": i.iid,
    }
    assert view["noteable_id"] == i.id
    assert view["project_id"] == p.id
    assert view["author"]["username"] == owner.username
    assert (view["resolvable"], view["resolved"], view["resolved_by"], view["resolved_at"]) == (
        False,
        False,
        None,
        None,
    )
    assert (view["confidential"], view["internal"], view["commands_changes"]) == (False, False, {})
    assert view["created_at"].endswith("Z")


def test_a_comment_counts_and_touches_its_issue(api, make, db):
    owner, p, i = public_issue(make, updated_at=datetime(2020, 1, 1, tzinfo=UTC))
    api(owner).post(notes_url(p, i), json={"body": "one"})
    api(owner).post(notes_url(p, i), json={"body": "two"})
    assert user_notes_count(db, i) == 2
    touched = db.scalar(select(Issue.updated_at).where(Issue.id == i.id))
    assert touched.replace(tzinfo=UTC) > datetime(2020, 1, 2, tzinfo=UTC)


def test_a_comment_records_its_commented_event(api, make, db):
    owner, p, i = public_issue(make)
    note = api(owner).post(notes_url(p, i), json={"body": "hi"}).json()
    event = db.scalars(select(Event).where(Event.target_type == "Note", Event.target_id == note["id"])).one()
    assert (event.action, event.project_id, event.author_id) == ("commented", p.id, owner.id)
    assert event.data == {"hook": "note", "hook_action": "create", "noteable_type": "Issue", "iid": i.iid}


def test_a_comment_on_a_confidential_issue_is_a_confidential_note_hook(api, make, db):
    owner, p, i = public_issue(make, confidential=True)
    note = api(owner).post(notes_url(p, i), json={"body": "secret"}).json()
    event = db.scalars(select(Event).where(Event.target_type == "Note", Event.target_id == note["id"])).one()
    assert event.data["hook"] == "confidential_note"


def test_a_mention_in_a_comment_gives_a_todo(api, make, db):
    owner, p, i = public_issue(make)
    mentioned = make.user()
    note = api(owner).post(notes_url(p, i), json={"body": f"ping @{mentioned.username}"}).json()
    todo = db.scalars(select(Todo).where(Todo.user_id == mentioned.id)).one()
    assert (todo.target_type, todo.target_id, todo.note_id) == ("Issue", i.id, note["id"])


def test_body_is_required(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(notes_url(p, i), json={})
    assert (r.status_code, r.json()) == (400, {"error": "body is missing"})
    assert user_notes_count(db, i) == 0


def test_a_blank_body_is_refused_as_gitlab_refuses_it(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(notes_url(p, i), json={"body": "   "})
    assert r.status_code == 400
    assert "can't be blank" in r.json()["message"]
    assert note_count(db) is None


def test_a_body_over_a_million_characters_is_refused(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(notes_url(p, i), json={"body": "x" * 1_000_001})
    assert r.status_code == 400
    assert "is too long (maximum is 1000000 characters)" in r.json()["message"]
    assert note_count(db) is None
    assert api(owner).post(notes_url(p, i), json={"body": "x" * 1_000_000}).status_code == 201


def test_anonymous_callers_cannot_comment(api, make, db):
    _, p, i = public_issue(make)
    assert api().post(notes_url(p, i), json={"body": "hi"}).status_code == 401
    assert note_count(db) is None


def test_any_signed_in_user_comments_on_a_public_issue(api, make, db):
    _, p, i = public_issue(make)
    commenter = make.user()
    assert api(commenter).post(notes_url(p, i), json={"body": "hi"}).status_code == 201
    assert db.scalars(select(Note.author_id).where(Note.noteable_id == i.id)).all() == [commenter.id]


def test_a_locked_discussion_takes_a_reporter(api, make, db):
    _owner, p, i = public_issue(make, discussion_locked=True)
    guest, reporter = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, reporter, REPORTER)
    r = api(guest).post(notes_url(p, i), json={"body": "hi"})
    assert r.status_code == 403
    assert note_count(db) is None
    assert api(reporter).post(notes_url(p, i), json={"body": "hi"}).status_code == 201


def test_an_archived_project_takes_no_comments(api, make, db):
    owner = make.user()
    p = make.project(owner=owner, visibility="public", archived=True)
    i = make.issue(p, owner)
    assert api(owner).post(notes_url(p, i), json={"body": "hi"}).status_code == 403
    assert note_count(db) is None


def test_internal_notes_are_for_reporters(api, make, db):
    _owner, p, i = public_issue(make)
    guest, reporter = make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, reporter, REPORTER)
    assert api(guest).post(notes_url(p, i), json={"body": "x", "internal": True}).status_code == 403
    assert note_count(db) is None
    r = api(reporter).post(notes_url(p, i), json={"body": "x", "internal": True})
    assert (r.status_code, r.json()["internal"], r.json()["confidential"]) == (201, True, True)


def test_confidential_is_the_old_name_of_internal(api, make):
    owner, p, i = public_issue(make)
    assert (
        api(owner).post(notes_url(p, i), json={"body": "x", "confidential": True}).json()["internal"] is True
    )


def test_an_internal_note_is_a_confidential_note_hook(api, make, db):
    owner, p, i = public_issue(make)
    note = api(owner).post(notes_url(p, i), json={"body": "x", "internal": True}).json()
    event = db.scalars(select(Event).where(Event.target_type == "Note", Event.target_id == note["id"])).one()
    assert event.data["hook"] == "confidential_note"


def test_created_at_is_kept_for_owners_only(api, make):
    owner, p, i = public_issue(make)
    developer = make.user()
    make.member(p, developer, DEVELOPER)
    when = "2020-05-01T10:00:00Z"
    assert api(owner).post(notes_url(p, i), json={"body": "x", "created_at": when}).json()["created_at"] == (
        "2020-05-01T10:00:00.000Z"
    )
    assert api(developer).post(notes_url(p, i), json={"body": "x", "created_at": when}).json()[
        "created_at"
    ] > ("2021")
    assert api("root").post(notes_url(p, i), json={"body": "x", "created_at": when}).json()["created_at"] == (
        "2020-05-01T10:00:00.000Z"
    )


def test_a_bad_created_at_is_refused(api, make, db):
    owner, p, i = public_issue(make)
    r = api(owner).post(notes_url(p, i), json={"body": "x", "created_at": "yesterday"})
    assert (r.status_code, r.json()) == (400, {"error": "created_at is invalid"})
    assert note_count(db) is None


# ----------------------------------------------------------------------------- reading


def test_list_is_newest_first_by_default(api, make):
    owner, p, i = public_issue(make)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    # The later note is written first, so creation time and id disagree.
    second = make.note(i, owner, body="second", created_at=base + timedelta(hours=1))
    first = make.note(i, owner, body="first", created_at=base)
    assert [n["id"] for n in api().get(notes_url(p, i)).json()] == [second.id, first.id]
    asc = api().get(notes_url(p, i), params={"sort": "asc"}).json()
    assert [n["id"] for n in asc] == [first.id, second.id]


def test_list_orders_by_updated_at(api, make):
    owner, p, i = public_issue(make)
    base = datetime(2024, 1, 1, tzinfo=UTC)
    old = make.note(i, owner, created_at=base, updated_at=base + timedelta(days=2))
    new = make.note(i, owner, created_at=base + timedelta(days=1), updated_at=base + timedelta(days=1))
    listed = api().get(notes_url(p, i), params={"order_by": "updated_at"}).json()
    assert [n["id"] for n in listed] == [old.id, new.id]


def test_activity_filter_keeps_comments_or_system_notes(api, make):
    owner, p, i = public_issue(make)
    comment = make.note(i, owner, body="said")
    system = make.note(i, owner, body="changed the description", system=True)
    only_comments = api().get(notes_url(p, i), params={"activity_filter": "only_comments"}).json()
    only_activity = api().get(notes_url(p, i), params={"activity_filter": "only_activity"}).json()
    assert [n["id"] for n in only_comments] == [comment.id]
    assert [(n["id"], n["system"]) for n in only_activity] == [(system.id, True)]
    assert len(api().get(notes_url(p, i), params={"activity_filter": "all_notes"}).json()) == 2


def test_bad_list_parameters_are_400(api, make):
    _, p, i = public_issue(make)
    for name, value in (("sort", "up"), ("order_by", "title"), ("activity_filter", "everything")):
        r = api().get(notes_url(p, i), params={name: value})
        assert (r.status_code, r.json()) == (400, {"error": f"{name} does not have a valid value"})


def test_a_single_note(api, make):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, body="hello")
    assert api().get(notes_url(p, i, note.id)).json()["body"] == "hello"


def test_a_note_of_another_issue_is_not_found(api, make):
    owner, p, i = public_issue(make)
    other = make.issue(p, owner)
    note = make.note(other, owner)
    r = api().get(notes_url(p, i, note.id))
    assert (r.status_code, r.json()) == (404, {"message": "404 Note Not Found"})


def test_internal_notes_are_hidden_from_those_below_reporter(api, make):
    owner, p, i = public_issue(make)
    guest = make.user()
    make.member(p, guest, GUEST)
    public = make.note(i, owner, body="open")
    internal = make.note(i, owner, body="hush", internal=True)
    for caller in (api(), api(guest), api(make.user())):
        assert [n["id"] for n in caller.get(notes_url(p, i)).json()] == [public.id]
        assert caller.get(notes_url(p, i, internal.id)).status_code == 404
    assert {n["id"] for n in api(owner).get(notes_url(p, i)).json()} == {public.id, internal.id}


def test_notes_of_a_private_project_are_hidden(api, make):
    owner = make.user()
    p = make.project(owner=owner)
    i = make.issue(p, owner)
    make.note(i, owner)
    r = api(make.user()).get(notes_url(p, i))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_notes_of_a_confidential_issue_are_hidden_from_non_members(api, make, db):
    owner, p, i = public_issue(make, confidential=True)
    note = make.note(i, owner)
    for caller in (api(), api(make.user())):
        r = caller.get(notes_url(p, i))
        assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert api().post(notes_url(p, i), json={"body": "x"}).status_code == 401
    assert api(make.user()).post(notes_url(p, i), json={"body": "x"}).status_code == 404
    assert note_count(db) == note.id


def test_an_unknown_issue_is_not_found(api, make):
    owner, p, _ = public_issue(make)
    r = api(owner).get(f"/projects/{p.id}/issues/999/notes")
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})


def test_a_non_numeric_issue_iid_is_400(api, make):
    owner, p, _ = public_issue(make)
    r = api(owner).get(f"/projects/{p.id}/issues/abc/notes")
    assert (r.status_code, r.json()) == (400, {"error": "issue_iid is invalid"})


# ----------------------------------------------------------------------------- changing


def test_the_author_changes_a_note(api, make, db):
    _owner, p, i = public_issue(make)
    author = make.user()
    note = api(author).post(notes_url(p, i), json={"body": "before"}).json()
    r = api(author).put(notes_url(p, i, note["id"]), json={"body": "after"})
    assert (r.status_code, r.json()["body"]) == (200, "after")
    assert db.scalar(select(Note.body).where(Note.id == note["id"])) == "after"


def test_others_cannot_change_a_note_but_maintainers_can(api, make, db):
    _owner, p, i = public_issue(make)
    author, developer, maintainer = make.user(), make.user(), make.user()
    make.member(p, developer, DEVELOPER)
    make.member(p, maintainer, MAINTAINER)
    note = make.note(i, author, body="mine")
    r = api(developer).put(notes_url(p, i, note.id), json={"body": "theirs"})
    assert r.status_code == 403
    assert db.scalar(select(Note.body).where(Note.id == note.id)) == "mine"
    assert api(maintainer).put(notes_url(p, i, note.id), json={"body": "fixed"}).json()["body"] == "fixed"


def test_system_notes_cannot_be_changed_or_deleted(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, body="closed", system=True)
    assert api(owner).put(notes_url(p, i, note.id), json={"body": "x"}).status_code == 403
    assert api(owner).delete(notes_url(p, i, note.id)).status_code == 403
    db.expire_all()
    assert db.scalar(select(Note.body).where(Note.id == note.id)) == "closed"


def test_an_empty_body_on_update_is_400(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner, body="keep")
    r = api(owner).put(notes_url(p, i, note.id), json={"body": ""})
    assert (r.status_code, r.json()) == (400, {"error": "body is empty"})
    assert db.scalar(select(Note.body).where(Note.id == note.id)) == "keep"


def test_a_new_mention_in_an_edit_gives_a_todo(api, make, db):
    owner, p, i = public_issue(make)
    first, second = make.user(), make.user()
    note = api(owner).post(notes_url(p, i), json={"body": f"@{first.username}"}).json()
    r = api(owner).put(notes_url(p, i, note["id"]), json={"body": f"@{first.username} @{second.username}"})
    assert r.status_code == 200
    assert db.scalar(select(Todo.id).where(Todo.user_id == first.id)) is not None
    assert len(db.scalars(select(Todo.id).where(Todo.user_id.in_([first.id, second.id]))).all()) == 2


def test_deleting_a_note_uncounts_it(api, make, db):
    owner, p, i = public_issue(make)
    note = api(owner).post(notes_url(p, i), json={"body": "x"}).json()
    assert user_notes_count(db, i) == 1
    r = api(owner).delete(notes_url(p, i, note["id"]))
    assert r.status_code == 204
    assert user_notes_count(db, i) == 0
    assert api(owner).get(notes_url(p, i, note["id"])).status_code == 404


def test_others_cannot_delete_a_note(api, make, db):
    owner, p, i = public_issue(make)
    note = make.note(i, owner)
    assert api(make.user()).delete(notes_url(p, i, note.id)).status_code == 403
    assert db.scalar(select(Note.id).where(Note.id == note.id)) == note.id


# ----------------------------------------------------------------------------- epics


def epic_setup(make):
    owner = make.user()
    group = make.group(owners=[owner], visibility="public")
    # Another group's epic first, so this epic's global id differs from its iid.
    make.epic(make.group(owners=[owner]), owner)
    return owner, group, make.epic(group, owner)


def test_epic_notes_are_reached_by_the_epics_global_id(api, make, db):
    owner, g, e = epic_setup(make)
    assert e.id != e.iid
    r = api(owner).post(epic_notes_url(g, e), json={"body": "epic note"})
    assert r.status_code == 201
    view = r.json()
    assert (view["noteable_type"], view["noteable_id"], view["noteable_iid"], view["project_id"]) == (
        "Epic",
        e.id,
        e.iid,
        None,
    )
    assert [n["id"] for n in api().get(epic_notes_url(g, e)).json()] == [view["id"]]
    assert db.scalar(select(Epic.user_notes_count).where(Epic.id == e.id)) == 1
    event = db.scalars(select(Event).where(Event.target_type == "Note", Event.target_id == view["id"])).one()
    assert (event.project_id, event.data["group_id"]) == (None, g.id)


def test_an_epic_named_by_its_iid_is_not_found(api, make):
    owner, g, e = epic_setup(make)
    r = api(owner).get(f"/groups/{g.id}/epics/{e.iid}/notes")
    assert (r.status_code, r.json()) == (404, {"message": "404 Epic Not Found"})


def test_epic_notes_change_and_delete(api, make, db):
    owner, g, e = epic_setup(make)
    note = api(owner).post(epic_notes_url(g, e), json={"body": "a"}).json()
    assert api(owner).put(epic_notes_url(g, e, note["id"]), json={"body": "b"}).json()["body"] == "b"
    assert db.scalar(select(Note.body).where(Note.id == note["id"])) == "b"
    assert db.scalar(select(Epic.user_notes_count).where(Epic.id == e.id)) == 1
    assert api(owner).delete(epic_notes_url(g, e, note["id"])).status_code == 204
    db.expire_all()
    assert db.scalar(select(Epic.user_notes_count).where(Epic.id == e.id)) == 0
    assert db.get(Note, note["id"]) is None


def test_notes_of_a_private_groups_epic_are_hidden(api, make):
    owner = make.user()
    g = make.group(owners=[owner])
    e = make.epic(g, owner)
    r = api(make.user()).get(epic_notes_url(g, e))
    assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})


# ----------------------------------------------------------------------------- statements


def test_list_is_constant_in_notes_and_authors(api, make, runtime):
    owner, p, i = public_issue(make)
    make.note(i, owner)
    few = count(runtime, lambda: api(owner).get(notes_url(p, i)))
    for _ in range(8):
        make.note(i, make.user())
        make.note(i, owner, system=True)
    many = count(runtime, lambda: api(owner).get(notes_url(p, i)))
    assert len(api(owner).get(notes_url(p, i)).json()) == 17
    assert few == many


def test_a_system_note_naming_an_issue_hidden_from_the_caller_is_not_shown(api, make, db):
    owner = make.user()
    public = make.project(owner=owner, visibility="public")
    private = make.project(owner=owner, visibility="private", path="top-secret")
    issue = make.issue(public, owner)
    hidden = make.issue(private, owner)
    linked = api(owner).post(
        f"/projects/{public.id}/issues/{issue.iid}/links",
        json={"target_project_id": private.id, "target_issue_iid": hidden.iid},
    )
    assert linked.status_code == 201, linked.text
    make.note(issue, owner, body="a comment anyone reads")
    base = f"/projects/{public.id}/issues/{issue.iid}"
    note_id = db.scalars(select(Note.id).where(Note.noteable_id == issue.id, Note.system.is_(True))).one()
    seen = [n["body"] for n in api(owner).get(f"{base}/notes").json()]
    assert any("top-secret" in body for body in seen)
    assert [n["body"] for n in api().get(f"{base}/notes").json()] == ["a comment anyone reads"]
    assert api().get(f"{base}/notes/{note_id}").status_code == 404
    assert api(owner).get(f"{base}/notes/{note_id}").status_code == 200
    threads = [d["notes"][0]["body"] for d in api().get(f"{base}/discussions").json()]
    assert threads == ["a comment anyone reads"]


def test_a_system_note_about_a_confidential_issue_of_the_same_project_is_for_its_readers(api, make, db):
    owner, guest = make.user(), make.user()
    project = make.project(owner=owner, visibility="private", members={guest: GUEST})
    issue = make.issue(project, owner)
    secret = make.issue(project, owner, confidential=True)
    body = {"target_project_id": project.id, "target_issue_iid": secret.iid}
    assert api(owner).post(f"/projects/{project.id}/issues/{issue.iid}/links", json=body).status_code == 201
    notes_url = f"/projects/{project.id}/issues/{issue.iid}/notes"
    assert [n["body"] for n in api(owner).get(notes_url).json()] == [
        f"marked this issue as related to #{secret.iid}"
    ]
    assert api(guest).get(notes_url).json() == []
