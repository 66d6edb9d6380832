"""Cross references: an issue or merge request named in another one's title, description or
note gets the system note "mentioned in …", the mentioner as seen from its project, once per
pair, and only when the writer may read what they named."""

from __future__ import annotations

from kiln.models import Issue, MergeRequest
from kiln.models.namespaces import DEVELOPER
from kiln.services import repositories
from tests.merge_requests import system_notes


def issues_url(p, iid: int | None = None, tail: str = "") -> str:
    return f"/projects/{p.id}/issues" + (f"/{iid}" if iid is not None else "") + tail


def open_merge_request(api, make, p, author, **fields) -> dict:
    main = repositories.store(make.settings).open(p.id).references.get("refs/heads/main").target
    make.branch(p, "feature", str(main))
    make.commit(p, {"feature.txt": "feature\n"}, branch="feature")
    body = {"source_branch": "feature", "target_branch": "main", "title": "Add feature", **fields}
    r = api(author).post(f"/projects/{p.id}/merge_requests", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def test_a_merge_request_naming_an_issue_is_noted_on_it(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    issue = make.issue(p, owner)
    open_merge_request(api, make, p, owner, title="Resolve #1", description="Closes #1, see #1")
    assert system_notes(db, issue) == ["mentioned in merge request !1"]
    notes = api(owner).get(issues_url(p, 1, "/notes")).json()
    assert [(n["body"], n["system"], n["author"]["id"]) for n in notes] == [
        ("mentioned in merge request !1", True, owner.id)
    ]


def test_an_issue_naming_another_and_a_merge_request_is_noted_on_both(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    first = make.issue(p, owner)
    open_merge_request(api, make, p, owner)
    r = api(owner).post(issues_url(p), json={"title": "Follow-up", "description": "After #1 and !1"})
    assert (r.status_code, r.json()["iid"]) == (201, 2)
    mr = db.query(MergeRequest).one()
    assert system_notes(db, first) == ["mentioned in issue #2"]
    assert system_notes(db, mr) == ["mentioned in issue #2"]


def test_a_note_naming_an_issue_of_another_project_names_its_own_from_there(api, make, db):
    owner = make.user()
    team, elsewhere = make.group(owners=[owner], path="team"), make.group(owners=[owner], path="far")
    app = make.project(namespace=team, path="app", owner=owner)
    sibling = make.project(namespace=team, path="lib", owner=owner)
    remote = make.project(namespace=elsewhere, path="api", owner=owner)
    make.issue(app, owner)
    near, far = make.issue(sibling, owner), make.issue(remote, owner)
    r = api(owner).post(issues_url(app, 1, "/notes"), json={"body": "Like team/lib#1 and far/api#1"})
    assert r.status_code == 201, r.text
    assert system_notes(db, near) == ["mentioned in issue app#1"]
    assert system_notes(db, far) == ["mentioned in issue team/app#1"]


def test_each_pair_is_noted_once(api, make, db):
    owner = make.user()
    p = make.project(owner=owner)
    first = make.issue(p, owner)
    make.issue(p, owner, description="See #1")
    assert api(owner).put(issues_url(p, 2), json={"description": "See #1 again"}).status_code == 200
    assert api(owner).post(issues_url(p, 2, "/notes"), json={"body": "#1 once more"}).status_code == 201
    assert system_notes(db, first) == ["mentioned in issue #2"]


def test_a_change_naming_an_issue_anew_is_noted(api, make, db):
    owner = make.user()
    p = make.project(owner=owner)
    first = make.issue(p, owner)
    make.issue(p, owner, title="Plain")
    r = api(owner).put(issues_url(p, 2), json={"title": "Depends on #1"})
    assert r.status_code == 200, r.text
    assert system_notes(db, first) == ["mentioned in issue #2"]


def test_what_the_writer_may_not_read_and_the_text_itself_are_not_noted(api, make, db):
    owner, writer = make.user(), make.user()
    p = make.project(owner=owner, visibility="public")
    hidden = make.project(owner=owner, path="hidden")
    secret = make.issue(p, owner, confidential=True)
    private = make.issue(hidden, owner)
    body = {"title": "Ask", "description": f"#1 and {owner.username}/{hidden.path}#1 and #2"}
    r = api(writer).post(issues_url(p), json=body)
    assert (r.status_code, r.json()["iid"]) == (201, 2)
    assert (system_notes(db, secret), system_notes(db, private)) == ([], [])
    own = db.get(Issue, r.json()["id"])
    assert system_notes(db, own) == []


def test_an_internal_note_names_nothing(api, make, db):
    owner, dev = make.user(), make.user()
    p = make.project(owner=owner, members={dev: DEVELOPER})
    first = make.issue(p, owner)
    make.issue(p, owner)
    r = api(dev).post(issues_url(p, 2, "/notes"), json={"body": "About #1", "internal": True})
    assert r.status_code == 201, r.text
    assert system_notes(db, first) == []


def commit(api, caller, p, message: str, branch: str = "main", **fields) -> str:
    """A commit through the API (a push's bookkeeping, as `git push` has it); its sha."""
    body = {
        "branch": branch,
        "commit_message": message,
        "actions": [{"action": "create", "file_path": f"{len(message)}-{branch}.txt", "content": message}],
        **fields,
    }
    r = api(caller).post(f"/projects/{p.id}/repository/commits", json=body)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_a_commit_on_the_default_branch_closes_what_it_says_and_names_the_rest(api, make, db, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    fixed, named = make.issue(p, owner), make.issue(p, owner)
    sha = commit(api, owner, p, "Fixes #1\n\nSee also #2")
    drain()
    db.expire_all()
    assert (db.get(Issue, fixed.id).state, db.get(Issue, named.id).state) == ("closed", "opened")
    assert system_notes(db, fixed) == [f"closed via commit {sha}"]
    assert system_notes(db, named) == [f"mentioned in commit {sha}"]
    notes = api(owner).get(issues_url(p, 1, "/notes")).json()
    assert [(n["body"], n["author"]["id"]) for n in notes] == [(f"closed via commit {sha}", owner.id)]


def test_a_commit_on_another_branch_closes_nothing(api, make, db, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    issue = make.issue(p, owner)
    sha = commit(api, owner, p, "Fixes #1", branch="topic", start_branch="main")
    drain()
    db.expire_all()
    assert db.get(Issue, issue.id).state == "opened"
    assert system_notes(db, issue) == [f"mentioned in commit {sha}"]


def test_a_commit_of_another_project_is_named_with_its_path(api, make, db, drain):
    owner = make.user()
    team = make.group(owners=[owner], path="team")
    app = make.project_with_repository(namespace=team, path="app", owner=owner)
    tracker = make.project(namespace=team, path="tracker", owner=owner)
    issue = make.issue(tracker, owner)
    sha = commit(api, owner, app, "Work on team/tracker#1")
    drain()
    assert system_notes(db, issue) == [f"mentioned in commit app@{sha}"]


def test_a_commit_closes_an_issue_named_by_its_url(api, make, db, drain, settings):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    issue = make.issue(p, owner)
    link = f"{settings.external_url}/{owner.username}/{p.path}/-/issues/1"
    sha = commit(api, owner, p, f"Closes {link}")
    drain()
    db.expire_all()
    assert db.get(Issue, issue.id).state == "closed"
    assert system_notes(db, issue) == [f"closed via commit {sha}"]
