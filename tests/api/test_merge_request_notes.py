"""Notes on merge requests (/projects/:id/merge_requests/:merge_request_iid/notes): the same
rules as issues' notes, a merge request's readers and its lock deciding who comments; each
note records its `note` event with noteable_type MergeRequest."""

from __future__ import annotations

from sqlalchemy import select

from kiln.models import Event, MergeRequest
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from tests.merge_requests import public_mr
from tests.statements import count


def notes_url(project, mr, note_id=None):
    url = f"/projects/{project.id}/merge_requests/{mr.iid}/notes"
    return url if note_id is None else f"{url}/{note_id}"


def test_commenting_on_a_merge_request(api, make, db):
    _owner, p, mr = public_mr(make)
    someone = make.user()
    r = api(someone).post(notes_url(p, mr), json={"body": "Looks good"})
    assert r.status_code == 201
    body = r.json()
    assert (body["type"], body["body"], body["noteable_type"], body["noteable_id"], body["noteable_iid"]) == (
        None,
        "Looks good",
        "MergeRequest",
        mr.id,
        mr.iid,
    )
    # An individual note on a merge request is not resolvable; only threads' notes are.
    assert (body["resolvable"], body["resolved"], body["resolved_by"]) == (False, False, None)
    assert body["author"]["id"] == someone.id
    assert db.scalar(select(MergeRequest.user_notes_count).where(MergeRequest.id == mr.id)) == 1


def test_reading_listing_changing_and_deleting_notes(api, make):
    owner, p, mr = public_mr(make)
    first = api(owner).post(notes_url(p, mr), json={"body": "first"}).json()
    second = api(owner).post(notes_url(p, mr), json={"body": "second"}).json()
    assert [n["id"] for n in api().get(notes_url(p, mr)).json()] == [second["id"], first["id"]]
    asc = api().get(notes_url(p, mr), params={"sort": "asc", "order_by": "updated_at"}).json()
    assert [n["id"] for n in asc] == [first["id"], second["id"]]
    assert api().get(notes_url(p, mr, first["id"])).json()["body"] == "first"
    r = api(owner).put(notes_url(p, mr, first["id"]), json={"body": "edited"})
    assert (r.status_code, r.json()["body"]) == (200, "edited")
    assert api(owner).delete(notes_url(p, mr, first["id"])).status_code == 204
    assert api().get(notes_url(p, mr, first["id"])).status_code == 404


def test_another_persons_note_takes_a_maintainer_to_change(api, make):
    _owner, p, mr = public_mr(make)
    writer, developer, maintainer = make.user(), make.user(), make.user()
    make.member(p, developer, DEVELOPER)
    make.member(p, maintainer, MAINTAINER)
    note = api(writer).post(notes_url(p, mr), json={"body": "mine"}).json()
    assert api(developer).put(notes_url(p, mr, note["id"]), json={"body": "x"}).status_code == 403
    assert api(developer).delete(notes_url(p, mr, note["id"])).status_code == 403
    assert api(writer).get(notes_url(p, mr, note["id"])).json()["body"] == "mine"
    assert api(maintainer).put(notes_url(p, mr, note["id"]), json={"body": "fixed"}).status_code == 200
    assert api(writer).get(notes_url(p, mr, note["id"])).json()["body"] == "fixed"
    assert api(maintainer).delete(notes_url(p, mr, note["id"])).status_code == 204
    assert api(writer).get(notes_url(p, mr, note["id"])).status_code == 404


def test_a_private_projects_merge_request_is_hidden_from_non_members(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    stranger = make.user()
    assert api(stranger).get(notes_url(p, mr)).status_code == 404
    assert api(stranger).post(notes_url(p, mr), json={"body": "hi"}).status_code == 404
    assert api().get(notes_url(p, mr)).status_code == 404
    assert db.scalar(select(MergeRequest.user_notes_count).where(MergeRequest.id == mr.id)) == 0


def test_a_guest_of_a_private_project_is_refused_merge_request_notes(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    guest = make.user()
    make.member(p, guest, GUEST)
    # GitLab: a Guest of a private project may not read its merge requests.
    assert api(guest).get(notes_url(p, mr)).status_code == 403
    assert api(guest).post(notes_url(p, mr), json={"body": "hi"}).status_code == 403
    assert db.scalar(select(MergeRequest.user_notes_count).where(MergeRequest.id == mr.id)) == 0


def test_a_locked_merge_request_takes_a_reporter_to_comment(api, make):
    owner, p, mr = public_mr(make, discussion_locked=True)
    someone, reporter = make.user(), make.user()
    make.member(p, reporter, REPORTER)
    assert api(someone).post(notes_url(p, mr), json={"body": "hi"}).status_code == 403
    assert api(owner).get(notes_url(p, mr)).json() == []
    assert api(reporter).post(notes_url(p, mr), json={"body": "hi"}).status_code == 201
    assert [n["author"]["id"] for n in api(owner).get(notes_url(p, mr)).json()] == [reporter.id]


def test_an_unknown_merge_request_is_not_found(api, make):
    owner, p, mr = public_mr(make)
    r = api(owner).get(f"/projects/{p.id}/merge_requests/{mr.iid + 100}/notes")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})


def test_a_note_records_its_note_event(api, make, db):
    owner, p, mr = public_mr(make)
    note = api(owner).post(notes_url(p, mr), json={"body": "hello"}).json()
    event = db.scalars(select(Event).where(Event.target_type == "Note", Event.target_id == note["id"])).one()
    assert (event.action, event.project_id, event.author_id) == ("commented", p.id, owner.id)
    assert event.data == {
        "hook": "note",
        "hook_action": "create",
        "noteable_type": "MergeRequest",
        "iid": mr.iid,
    }


def test_list_is_constant_in_notes_and_authors(api, make, runtime):
    owner, p, mr = public_mr(make)
    api(owner).post(notes_url(p, mr), json={"body": "one"})
    few = count(runtime, lambda: api(owner).get(notes_url(p, mr)))
    for _ in range(6):
        api(make.user()).post(notes_url(p, mr), json={"body": "more"})
    many = count(runtime, lambda: api(owner).get(notes_url(p, mr)))
    assert len(api(owner).get(notes_url(p, mr)).json()) == 7
    assert few == many
