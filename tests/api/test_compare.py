"""GET /projects/:id/repository/compare and /repository/contributors."""

from __future__ import annotations

from datetime import UTC, datetime

import pygit2

from kiln.git.refs import resolve_commit
from kiln.git.writes import FileAction, Person, commit_actions, write_commit
from kiln.models import Project, User
from tests.bodies import COMMIT_KEYS
from tests.conftest import EXTERNAL_URL
from tests.factories.repositories import open_repository

ALICE = Person("Alice", "alice@example.com")
BOB = Person("Bob", "bob@example.com")


def new_project(api, owner, name="demo", **fields):
    r = api(owner).post("/projects", json={"name": name, "initialize_with_readme": True, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def write(settings, project_id, branch, files, message="change", *, start=None, author=ALICE) -> str:
    """Commit `files` ({path: text, or None to delete}) onto `branch` (from `start` if new)."""
    repo = open_repository(settings, project_id)
    tip = repo.references.get(f"refs/heads/{branch}")
    base = resolve_commit(repo, start or branch)
    tree = base.tree
    actions = []
    for path, text in files.items():
        if text is None:
            actions.append(FileAction("delete", path))
        else:
            kind = "update" if path in tree else "create"
            actions.append(FileAction(kind, path, text.encode()))
    commit, _ = commit_actions(
        repo,
        branch=branch,
        actions=actions,
        message=message,
        author=author,
        committer=author,
        start=base if tip is None else None,
    )
    return str(commit.id)


def sha_of(settings, project_id, ref) -> str:
    return str(resolve_commit(open_repository(settings, project_id), ref).id)


def compare(api, caller, project_id, **query):
    return api(caller).get(f"/projects/{project_id}/repository/compare", params=query)


def diverged(api, make, settings, **fields):
    """main: README, then b.txt; feature (from README): a.py. Returns (project, shas)."""
    u = make.user()
    p = new_project(api, u, **fields)
    base = sha_of(settings, p["id"], "main")
    feature = write(settings, p["id"], "feature", {"a.py": "print(1)\n"}, "Add a.py", start="main")
    main = write(settings, p["id"], "main", {"b.txt": "b\n"}, "Add b.txt")
    return u, p, {"base": base, "feature": feature, "main": main}


# ------------------------------------------------------------------ compare


def test_compare_lists_the_commits_of_to_and_the_changes_since_the_merge_base(api, make, settings):
    u, p, sha = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": "feature"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == ["commit", "commits", "diffs", "compare_timeout", "compare_same_ref", "web_url"]
    assert [c["id"] for c in body["commits"]] == [sha["feature"]]
    assert body["commit"] == body["commits"][-1]
    assert [(d["new_path"], d["new_file"], d["deleted_file"]) for d in body["diffs"]] == [
        ("a.py", True, False)
    ]
    assert (body["compare_timeout"], body["compare_same_ref"]) == (False, False)
    assert body["web_url"] == f"{p['web_url']}/-/compare/{sha['base']}...{sha['feature']}"


def test_straight_compare_diffs_the_two_trees(api, make, settings):
    u, p, sha = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": "feature", "straight": "true"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [c["id"] for c in body["commits"]] == [sha["feature"]]
    assert [(d["new_path"], d["new_file"], d["deleted_file"]) for d in body["diffs"]] == [
        ("a.py", True, False),
        ("b.txt", False, True),
    ]
    assert body["web_url"] == f"{p['web_url']}/-/compare/{sha['main']}...{sha['feature']}"


def test_python_capitalised_straight_flag_is_accepted(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": "feature", "straight": "True"})
    assert (r.status_code, len(r.json()["diffs"])) == (200, 2)


def test_same_ref_has_no_commit_commits_or_diffs(api, make, settings):
    u, p, sha = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": sha["main"]})
    assert r.status_code == 200
    body = r.json()
    assert (body["commit"], body["commits"], body["diffs"], body["compare_same_ref"]) == (None, [], [], True)
    assert body["web_url"] == f"{p['web_url']}/-/compare/{sha['main']}...{sha['main']}"


def test_compare_towards_an_ancestor_is_empty_but_not_the_same_ref(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": "main~1"})
    body = r.json()
    assert (r.status_code, body["commit"], body["commits"], body["diffs"], body["compare_same_ref"]) == (
        200,
        None,
        [],
        [],
        False,
    )


def test_commits_are_oldest_first_and_commit_is_the_newest(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    first = write(settings, p["id"], "topic", {"one.txt": "1\n"}, "One", start="main")
    second = write(settings, p["id"], "topic", {"two.txt": "2\n"}, "Two")
    body = compare(api, u, p["id"], **{"from": "main", "to": "topic"}).json()
    assert [c["id"] for c in body["commits"]] == [first, second]
    assert body["commit"]["id"] == second


def test_commit_entries_have_gitlabs_commit_fields(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    parent = sha_of(settings, p["id"], "main")
    sha = write(settings, p["id"], "topic", {"x.txt": "x\n"}, "Title line\n\nBody text\n", start="main")
    c = compare(api, u, p["id"], **{"from": "main", "to": "topic"}).json()["commit"]
    assert list(c) == COMMIT_KEYS
    assert c["id"] == sha
    assert c["short_id"] == sha[:8]
    assert c["parent_ids"] == [parent]
    assert (c["title"], c["message"]) == ("Title line", "Title line\n\nBody text\n")
    assert (c["author_name"], c["author_email"], c["committer_name"], c["committer_email"]) == (
        "Alice",
        "alice@example.com",
        "Alice",
        "alice@example.com",
    )
    assert c["created_at"] == c["committed_date"]
    when = resolve_commit(open_repository(settings, p["id"]), sha).author.time
    assert c["authored_date"] == datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert (c["trailers"], c["extended_trailers"]) == ({}, {})
    assert c["web_url"] == f"{p['web_url']}/-/commit/{sha}"


def test_diff_entries_carry_paths_modes_and_hunks(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], "main", {"keep.txt": "a\nb\n", "gone.txt": "bye\n"}, "Files")
    write(settings, p["id"], "topic", {"keep.txt": "a\nc\n", "gone.txt": None}, "Edit", start="main")
    diffs = compare(api, u, p["id"], **{"from": "main", "to": "topic"}).json()["diffs"]
    assert diffs == [
        {
            "diff": "@@ -1 +0,0 @@\n-bye\n",
            "collapsed": False,
            "too_large": False,
            "new_path": "gone.txt",
            "old_path": "gone.txt",
            "a_mode": "100644",
            "b_mode": "0",
            "new_file": False,
            "renamed_file": False,
            "deleted_file": True,
            "generated_file": False,
        },
        {
            "diff": "@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
            "collapsed": False,
            "too_large": False,
            "new_path": "keep.txt",
            "old_path": "keep.txt",
            "a_mode": "100644",
            "b_mode": "100644",
            "new_file": False,
            "renamed_file": False,
            "deleted_file": False,
            "generated_file": False,
        },
    ]


def test_renamed_files_are_one_entry(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    text = "".join(f"line {i}\n" for i in range(20))
    write(settings, p["id"], "main", {"old/name.txt": text}, "Add")
    write(settings, p["id"], "topic", {"old/name.txt": None, "new/name.txt": text}, "Move", start="main")
    diffs = compare(api, u, p["id"], **{"from": "main", "to": "topic"}).json()["diffs"]
    assert [(d["old_path"], d["new_path"], d["renamed_file"], d["diff"]) for d in diffs] == [
        ("old/name.txt", "new/name.txt", True, "")
    ]


def test_unidiff_adds_the_file_headers(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    r = compare(api, u, p["id"], **{"from": "main", "to": "feature", "unidiff": "true"})
    assert r.json()["diffs"][0]["diff"] == "--- /dev/null\n+++ b/a.py\n@@ -0,0 +1 @@\n+print(1)\n"


def test_binary_changes_are_a_one_line_notice(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    repo = open_repository(settings, p["id"])
    commit_actions(
        repo,
        branch="topic",
        actions=[FileAction("create", "logo.png", b"\x89PNG\x00\x01\x02")],
        message="Logo",
        author=ALICE,
        committer=ALICE,
        start=resolve_commit(repo, "main"),
    )
    diffs = compare(api, u, p["id"], **{"from": "main", "to": "topic"}).json()["diffs"]
    assert [d["diff"] for d in diffs] == ["Binary files /dev/null and b/logo.png differ\n"]


def test_missing_refs_are_400(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    assert (compare(api, u, p["id"], to="main").status_code, compare(api, u, p["id"], to="main").json()) == (
        400,
        {"error": "from is missing"},
    )
    r = compare(api, u, p["id"], **{"from": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "to is missing"})
    r = compare(api, u, p["id"])
    assert (r.status_code, r.json()) == (400, {"error": "from is missing, to is missing"})


def test_unknown_from_or_to_is_404_ref_not_found(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    for query in ({"from": "nope", "to": "main"}, {"from": "main", "to": "nope"}, {"from": "", "to": "main"}):
        r = compare(api, u, p["id"], **query)
        assert (r.status_code, r.json()) == (404, {"message": "404 Ref Not Found"}), query


def test_compare_in_an_empty_repository_is_404_ref_not_found(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = compare(api, u, p.id, **{"from": "main", "to": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Ref Not Found"})


def test_refs_are_stripped_of_surrounding_blanks(api, make, settings):
    u, p, sha = diverged(api, make, settings)
    body = compare(api, u, p["id"], **{"from": " main ", "to": "feature\n"}).json()
    assert [c["id"] for c in body["commits"]] == [sha["feature"]]


def test_tags_and_shas_compare_like_branches(api, make, settings):
    u, p, sha = diverged(api, make, settings)
    make.tag(p, "v1", sha["base"])
    body = compare(api, u, p["id"], **{"from": "v1", "to": sha["feature"][:10]}).json()
    assert [c["id"] for c in body["commits"]] == [sha["feature"]]


def test_anonymous_compares_a_public_project(api, make, settings):
    _, p, sha = diverged(api, make, settings, visibility="public")
    r = compare(api, None, p["id"], **{"from": "main", "to": "feature"})
    assert (r.status_code, [c["id"] for c in r.json()["commits"]]) == (200, [sha["feature"]])


def test_private_project_is_404_to_outsiders_and_403_to_guests(api, make, db, settings):
    _, p, _ = diverged(api, make, settings)
    r = compare(api, None, p["id"], **{"from": "main", "to": "feature"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    guest = make.user()
    make.member(db.get(Project, p["id"]), guest, 10)
    r = compare(api, guest, p["id"], **{"from": "main", "to": "feature"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_from_project_id_compares_against_a_fork(api, make, settings):
    u, v = make.user(), make.user()
    upstream = new_project(api, u, visibility="public")
    fork = api(v).post(f"/projects/{upstream['id']}/fork").json()
    old = sha_of(settings, fork["id"], "main")
    new = write(settings, upstream["id"], "main", {"new.txt": "n\n"}, "Upstream change")
    r = compare(api, v, upstream["id"], **{"from": "main", "to": "main", "from_project_id": fork["id"]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [c["id"] for c in body["commits"]] == [new]
    assert [d["new_path"] for d in body["diffs"]] == ["new.txt"]
    assert body["web_url"] == f"{fork['web_url']}/-/compare/{old}...{new}"


def test_from_project_id_outside_the_fork_network_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    other = new_project(api, u, name="other")
    r = compare(api, u, p["id"], **{"from": "main", "to": "main", "from_project_id": other["id"]})
    assert (r.status_code, r.json()) == (
        400,
        {"message": f"Target project id:{other['id']} is not a fork of project id:{p['id']}"},
    )


def test_from_project_id_whose_code_is_closed_is_403(api, make, settings):
    u, v = make.user(), make.user()
    upstream = new_project(api, u, visibility="public")
    fork = api(v).post(f"/projects/{upstream['id']}/fork").json()
    r = api(v).put(f"/projects/{fork['id']}", json={"repository_access_level": "private"})
    assert r.status_code == 200, r.text
    r = compare(api, u, upstream["id"], **{"from": "main", "to": "main", "from_project_id": fork["id"]})
    assert (r.status_code, r.json()) == (
        403,
        {"message": "403 Forbidden - You don't have access to this fork's parent project"},
    )


def test_from_project_id_must_be_an_integer(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    r = compare(api, u, p["id"], **{"from": "main", "to": "main", "from_project_id": "abc"})
    assert (r.status_code, r.json()) == (400, {"error": "from_project_id is invalid"})


def test_project_addressed_by_path_with_dots(api, make, settings):
    u = make.user()
    p = new_project(api, u, name="dotted", path="path.with.dot")
    ident = p["path_with_namespace"].replace("/", "%2F")
    r = api(u).get(f"/projects/{ident}/repository/compare?from=main&to=main")
    assert (r.status_code, r.json()["compare_same_ref"]) == (200, True)


# ------------------------------------------------------------------ contributors


def contributors(api, caller, project_id, **query):
    return api(caller).get(f"/projects/{project_id}/repository/contributors", params=query)


def authored(api, make, settings):
    """README by the owner; two commits by Alice; one by Bob."""
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], "main", {"a1": "1"}, "a1", author=ALICE)
    write(settings, p["id"], "main", {"b1": "1"}, "b1", author=BOB)
    write(settings, p["id"], "main", {"a2": "2"}, "a2", author=ALICE)
    return u, p


def test_contributors_count_commits_per_author_email_fewest_first(api, make, db, settings):
    u, p = authored(api, make, settings)
    r = contributors(api, u, p["id"])
    assert r.status_code == 200
    owner = db.get(User, u.id)
    assert r.json() == [
        {"name": "Bob", "email": "bob@example.com", "commits": 1, "additions": 0, "deletions": 0},
        {"name": owner.name, "email": owner.email, "commits": 1, "additions": 0, "deletions": 0},
        {"name": "Alice", "email": "alice@example.com", "commits": 2, "additions": 0, "deletions": 0},
    ]
    assert r.headers["X-Total"] == "3"


def test_contributors_order_by_name_and_email_either_way(api, make, settings):
    u, p = authored(api, make, settings)
    by_name = [c["name"] for c in contributors(api, u, p["id"], order_by="name", sort="desc").json()]
    assert by_name == sorted(by_name, key=str.lower, reverse=True)
    by_email = [c["email"] for c in contributors(api, u, p["id"], order_by="email").json()]
    assert by_email == sorted(by_email, key=str.lower)
    by_commits = [c["commits"] for c in contributors(api, u, p["id"], order_by="commits", sort="desc").json()]
    assert by_commits == [2, 1, 1]


def test_contributors_are_named_after_their_latest_commit(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], "main", {"x": "1"}, "x", author=Person("Old Name", "same@example.com"))
    write(settings, p["id"], "main", {"y": "1"}, "y", author=Person("New Name", "same@example.com"))
    found = {c["email"]: c for c in contributors(api, u, p["id"]).json()}
    assert (found["same@example.com"]["name"], found["same@example.com"]["commits"]) == ("New Name", 2)


def test_merge_commits_are_not_counted(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    left = write(settings, p["id"], "main", {"l": "1"}, "l", author=ALICE)
    right = write(settings, p["id"], "side", {"r": "1"}, "r", author=ALICE, start="main~1")
    repo = open_repository(settings, p["id"])
    merged = repo.merge_commits(left, right).write_tree(repo)
    write_commit(
        repo,
        branch="main",
        tree=merged,
        parents=[pygit2.Oid(hex=left), pygit2.Oid(hex=right)],
        message="Merge side",
        author=BOB.signature(),
        committer=BOB.signature(),
        expected_tip=left,
    )
    emails = {c["email"]: c["commits"] for c in contributors(api, u, p["id"]).json()}
    assert emails["alice@example.com"] == 2
    assert "bob@example.com" not in emails


def test_contributors_of_another_ref(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    write(settings, p["id"], "topic", {"t": "1"}, "t", author=BOB, start="main")
    assert "bob@example.com" not in [c["email"] for c in contributors(api, u, p["id"]).json()]
    assert "bob@example.com" in [c["email"] for c in contributors(api, u, p["id"], ref="topic").json()]


def test_contributors_of_an_unknown_ref_is_404(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    r = contributors(api, u, p["id"], ref="nope")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_contributors_bad_order_or_sort_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    r = contributors(api, u, p["id"], order_by="date")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})
    r = contributors(api, u, p["id"], sort="up")
    assert (r.status_code, r.json()) == (400, {"error": "sort does not have a valid value"})


def test_contributors_are_paginated(api, make, settings):
    u, p = authored(api, make, settings)
    r = contributors(api, u, p["id"], per_page=2, page=2)
    assert r.status_code == 200
    assert [c["name"] for c in r.json()] == ["Alice"]
    assert (
        r.headers["X-Total"],
        r.headers["X-Total-Pages"],
        r.headers["X-Page"],
        r.headers["X-Prev-Page"],
    ) == (
        "3",
        "2",
        "2",
        "1",
    )
    assert 'rel="prev"' in r.headers["Link"]


def test_contributors_of_an_empty_repository_are_none(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = contributors(api, u, p.id)
    assert (r.status_code, r.json()) == (200, [])


def test_contributors_of_a_private_project_are_hidden_from_outsiders(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    r = contributors(api, None, p["id"])
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_external_url_is_the_base_of_web_urls(api, make, settings):
    u, p, _ = diverged(api, make, settings)
    body = compare(api, u, p["id"], **{"from": "main", "to": "feature"}).json()
    assert body["web_url"].startswith(EXTERNAL_URL + "/")
