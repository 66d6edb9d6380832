"""Threads on merge requests: every thread's notes are resolvable (an individual note is not),
resolving a thread resolves each of its notes, and who may resolve is the merge request's
author or a Developer; a thread may sit on a place of the diff (a DiffNote whose position
names one of the merge request's diff versions and a line that diff shows)."""

from __future__ import annotations

from sqlalchemy import select

from kiln.models import MergeRequestDiff, Note
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.queries.discussions import unresolved_count
from tests.merge_requests import public_mr
from tests.statements import count

CODE = "".join(f"line {n}\n" for n in range(1, 11))
LINE_CODE_ERROR = {
    "message": '400 Bad request - Note {:line_code=>["can\'t be blank", "must be a valid line code"]}'
}


def threads_url(project, mr, discussion_id=None):
    url = f"/projects/{project.id}/merge_requests/{mr.iid}/discussions"
    return url if discussion_id is None else f"{url}/{discussion_id}"


def changed_mr(make):
    """A merge request that changes line 5 of a ten-line file."""
    owner = make.user()
    project = make.project_with_repository(owner=owner, visibility="public")
    make.commit(project, {"code.txt": CODE}, branch=project.default_branch, message="Add code")
    mr = make.merge_request(project, owner, files={"code.txt": CODE.replace("line 5\n", "line five\n")})
    return owner, project, mr


def version(db, mr) -> MergeRequestDiff:
    return db.scalars(select(MergeRequestDiff).where(MergeRequestDiff.merge_request_id == mr.id)).one()


def position(db, mr, **fields):
    v = version(db, mr)
    return {
        "base_sha": v.base_commit_sha,
        "start_sha": v.start_commit_sha,
        "head_sha": v.head_commit_sha,
        "position_type": "text",
        "old_path": "code.txt",
        "new_path": "code.txt",
        **fields,
    }


def test_a_threads_notes_are_resolvable_and_an_individual_note_is_not(api, make):
    owner, p, mr = public_mr(make)
    thread = api(owner).post(threads_url(p, mr), json={"body": "a thread"}).json()
    [first] = thread["notes"]
    assert (first["type"], first["resolvable"], first["resolved"]) == ("DiscussionNote", True, False)
    single = api(owner).post(f"/projects/{p.id}/merge_requests/{mr.iid}/notes", json={"body": "alone"}).json()
    assert single["resolvable"] is False
    reply = api(owner).post(f"{threads_url(p, mr, thread['id'])}/notes", json={"body": "reply"}).json()
    assert (reply["type"], reply["resolvable"]) == ("DiscussionNote", True)


def test_an_issues_threads_are_not_resolvable(api, make):
    owner = make.user()
    p = make.project(owner=owner, visibility="public")
    issue = make.issue(p, owner)
    url = f"/projects/{p.id}/issues/{issue.iid}/discussions"
    thread = api(owner).post(url, json={"body": "a thread"}).json()
    assert thread["notes"][0]["resolvable"] is False
    assert api(owner).put(f"{url}/{thread['id']}", json={"resolved": True}).status_code == 405


def test_replying_to_an_individual_note_makes_a_resolvable_thread(api, make):
    owner, p, mr = public_mr(make)
    single = api(owner).post(f"/projects/{p.id}/merge_requests/{mr.iid}/notes", json={"body": "alone"}).json()
    thread_id = api(owner).get(threads_url(p, mr)).json()[0]["id"]
    assert api(owner).post(f"{threads_url(p, mr, thread_id)}/notes", json={"body": "re"}).status_code == 201
    got = api(owner).get(threads_url(p, mr, thread_id)).json()
    assert got["individual_note"] is False
    assert [(n["id"] == single["id"], n["type"], n["resolvable"]) for n in got["notes"]] == [
        (True, "DiscussionNote", True),
        (False, "DiscussionNote", True),
    ]


def test_resolving_a_thread_resolves_each_of_its_notes(api, make, db):
    owner, p, mr = public_mr(make)
    thread = api(owner).post(threads_url(p, mr), json={"body": "a thread"}).json()
    api(owner).post(f"{threads_url(p, mr, thread['id'])}/notes", json={"body": "reply"})
    assert unresolved_count(db, mr.id) == 2
    r = api(owner).put(threads_url(p, mr, thread["id"]), json={"resolved": True})
    assert r.status_code == 200
    notes = r.json()["notes"]
    assert [(n["resolved"], n["resolved_by"]["id"]) for n in notes] == [(True, owner.id), (True, owner.id)]
    assert all(n["resolved_at"] is not None for n in notes)
    assert unresolved_count(db, mr.id) == 0
    r = api(owner).put(threads_url(p, mr, thread["id"]), params={"resolved": "false"})
    assert [(n["resolved"], n["resolved_by"], n["resolved_at"]) for n in r.json()["notes"]] == [
        (False, None, None),
        (False, None, None),
    ]
    assert unresolved_count(db, mr.id) == 2


def test_resolving_one_note(api, make, db):
    owner, p, mr = public_mr(make)
    thread = api(owner).post(threads_url(p, mr), json={"body": "a thread"}).json()
    reply = api(owner).post(f"{threads_url(p, mr, thread['id'])}/notes", json={"body": "reply"}).json()
    url = f"{threads_url(p, mr, thread['id'])}/notes/{reply['id']}"
    r = api(owner).put(url, json={"resolved": True})
    assert (r.status_code, r.json()["resolved"], r.json()["resolved_by"]["id"]) == (200, True, owner.id)
    assert unresolved_count(db, mr.id) == 1


def test_the_author_or_a_developer_resolves_and_others_are_refused(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="public")
    author, developer, reporter, guest = make.user(), make.user(), make.user(), make.user()
    make.member(p, developer, DEVELOPER)
    make.member(p, reporter, REPORTER)
    make.member(p, guest, GUEST)
    mr = make.merge_request(p, author)
    thread = api(guest).post(threads_url(p, mr), json={"body": "a question"}).json()
    url = threads_url(p, mr, thread["id"])
    assert api(guest).put(url, json={"resolved": True}).status_code == 403
    assert api(reporter).put(url, json={"resolved": True}).status_code == 403
    assert unresolved_count(db, mr.id) == 1
    assert api(author).put(url, json={"resolved": True}).status_code == 200
    assert unresolved_count(db, mr.id) == 0
    assert api(developer).put(url, json={"resolved": False}).status_code == 200
    assert unresolved_count(db, mr.id) == 1
    assert api().put(url, json={"resolved": True}).status_code == 401
    assert unresolved_count(db, mr.id) == 1


def test_a_diff_thread_keeps_and_shows_its_position(api, make, db):
    owner, p, mr = changed_mr(make)
    line_range = {
        "start": {"line_code": "x_4_4", "type": None, "old_line": 4, "new_line": 4},
        "end": {"line_code": "x_5_0", "type": "old", "old_line": 5, "new_line": None},
    }
    pos = position(db, mr, old_line=5, line_range=line_range)
    r = api(owner).post(threads_url(p, mr), json={"body": "why?", "position": pos})
    assert r.status_code == 201, r.text
    [note] = r.json()["notes"]
    assert (note["type"], note["resolvable"], note["commit_id"]) == ("DiffNote", True, None)
    assert note["position"] == {**pos, "new_line": None, "line_range": line_range}
    # A reply in a diff thread is on the same place.
    reply = api(owner).post(f"{threads_url(p, mr, r.json()['id'])}/notes", json={"body": "because"}).json()
    assert (reply["type"], reply["position"]) == ("DiffNote", note["position"])


def test_a_diff_position_given_as_form_brackets(api, make, db):
    owner, p, mr = changed_mr(make)
    pos = position(db, mr, new_line=5)
    form = {"body": "nice"} | {f"position[{k}]": str(v) for k, v in pos.items()}
    r = api(owner).post(threads_url(p, mr), data=form)
    assert r.status_code == 201, r.text
    assert r.json()["notes"][0]["position"] == {**pos, "old_line": None, "line_range": None}
    # An unchanged line in the diff names both its old and new line.
    r = api(owner).post(
        threads_url(p, mr), json={"body": "ctx", "position": position(db, mr, old_line=3, new_line=3)}
    )
    assert r.status_code == 201


def test_a_position_off_the_diff_is_refused(api, make, db):
    owner, p, mr = changed_mr(make)
    url = threads_url(p, mr)
    refused = [
        position(db, mr, new_line=10),  # a line the diff does not show
        position(db, mr, new_line=3),  # an unchanged line named by its new line alone
        position(db, mr, new_line=5, head_sha="0" * 40),  # no version of the merge request
        position(db, mr, new_line=5, old_path="other.txt", new_path="other.txt"),  # not in the diff
    ]
    for pos in refused:
        r = api(owner).post(url, json={"body": "x", "position": pos})
        assert (r.status_code, r.json()) == (400, LINE_CODE_ERROR)
    assert (
        db.scalars(
            select(Note.id).where(Note.noteable_id == mr.id, Note.noteable_type == "MergeRequest")
        ).all()
        == []
    )


def test_a_position_missing_its_shas_is_refused(api, make, db):
    owner, p, mr = changed_mr(make)
    pos = position(db, mr, new_line=5)
    del pos["base_sha"]
    r = api(owner).post(threads_url(p, mr), json={"body": "x", "position": pos})
    assert (r.status_code, r.json()) == (400, {"error": "position[base_sha] is missing"})


def test_a_file_position(api, make, db):
    owner, p, mr = changed_mr(make)
    pos = position(db, mr, position_type="file")
    r = api(owner).post(threads_url(p, mr), json={"body": "about this file", "position": pos})
    assert r.status_code == 201, r.text
    assert r.json()["notes"][0]["position"] == pos


def test_an_image_position_keeps_its_spot(api, make, db):
    owner, p, mr = changed_mr(make)
    pos = position(db, mr, position_type="image", width=100, height=80, x=10, y=20)
    r = api(owner).post(threads_url(p, mr), json={"body": "this pixel", "position": pos})
    assert r.status_code == 201, r.text
    assert r.json()["notes"][0]["position"] == pos


def test_a_thread_on_a_commit_of_the_merge_request(api, make, db):
    owner, p, mr = changed_mr(make)
    v = version(db, mr)
    # The merge request's one commit: its parent is the target's tip the version starts from.
    pos = position(db, mr, new_line=5, base_sha=v.start_commit_sha)
    r = api(owner).post(
        threads_url(p, mr), json={"body": "here", "position": pos, "commit_id": v.head_commit_sha}
    )
    assert r.status_code == 201, r.text
    assert r.json()["notes"][0]["commit_id"] == v.head_commit_sha
    r = api(owner).post(threads_url(p, mr), json={"body": "here", "position": pos, "commit_id": "f" * 40})
    assert (r.status_code, r.json()) == (400, LINE_CODE_ERROR)
    # A base that is not the commit's parent (nor a revision expression) is refused.
    for base in ("HEAD~1", v.head_commit_sha):
        wrong = {**pos, "base_sha": base, "start_sha": base}
        r = api(owner).post(
            threads_url(p, mr), json={"body": "x", "position": wrong, "commit_id": v.head_commit_sha}
        )
        assert (r.status_code, r.json()) == (400, LINE_CODE_ERROR)


def note_bodies(db, mr) -> list[str]:
    db.expire_all()
    return list(
        db.scalars(
            select(Note.body)
            .where(Note.noteable_type == "MergeRequest", Note.noteable_id == mr.id)
            .order_by(Note.id)
        )
    )


def test_a_guest_of_a_private_project_may_not_start_threads(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner, visibility="private")
    mr = make.merge_request(p, owner)
    guest = make.user()
    make.member(p, guest, GUEST)
    assert api(guest).get(threads_url(p, mr)).status_code == 403
    assert api(guest).post(threads_url(p, mr), json={"body": "x"}).status_code == 403
    assert note_bodies(db, mr) == []


def test_a_locked_merge_request_takes_a_reporter_to_start_a_thread(api, make, db):
    _owner, p, mr = public_mr(make, discussion_locked=True)
    someone, reporter = make.user(), make.user()
    make.member(p, reporter, REPORTER)
    assert api(someone).post(threads_url(p, mr), json={"body": "x"}).status_code == 403
    assert note_bodies(db, mr) == []
    assert api(reporter).post(threads_url(p, mr), json={"body": "y"}).status_code == 201
    assert note_bodies(db, mr) == ["y"]


def test_list_is_constant_in_threads_and_notes(api, make, runtime):
    owner, p, mr = public_mr(make)
    api(owner).post(threads_url(p, mr), json={"body": "one"})
    few = count(runtime, lambda: api(owner).get(threads_url(p, mr)))
    for _ in range(5):
        thread = api(make.user()).post(threads_url(p, mr), json={"body": "start"}).json()
        api(make.user()).post(f"{threads_url(p, mr, thread['id'])}/notes", json={"body": "reply"})
        api(owner).put(threads_url(p, mr, thread["id"]), json={"resolved": True})
    many = count(runtime, lambda: api(owner).get(threads_url(p, mr)))
    assert len(api(owner).get(threads_url(p, mr)).json()) == 6
    assert few == many
