"""Repository branches: GitLab's Branches API over real repositories, one rule per test."""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import pygit2
import pytest
from sqlalchemy import select

from kiln.models import Event, Project, ProtectedBranch
from kiln.services import repositories
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import fsck_errors, new_project

WEB = "http://kiln.test"
ZERO = "0" * 40


# ----------------------------------------------------------------------------- helpers


def add_member(db, make, project: dict, user, level: int) -> None:
    make.member(db.get(Project, project["id"]), user, level)


def repo_path(settings, project: dict) -> Path:
    return repositories.store(settings).path(project["id"])


def commit_on(settings, project: dict, branch: str, path: str, start: str | None = None, when=None) -> str:
    """A commit adding `path` on `branch` (created from `start`, default the default branch);
    `when` is (seconds, UTC offset in minutes)."""
    moment = None if when is None else datetime.fromtimestamp(when[0], timezone(timedelta(minutes=when[1])))
    return write_commit(
        open_repository(settings, project),
        {path: path},
        branch=branch,
        start=start or project["default_branch"],
        message=f"Add {path}\n\nBody of {path}.\n",
        author=("Ann Author", "ann@example.com"),
        when=moment,
    )


def tip(settings, project: dict, branch: str) -> str | None:
    ref = open_repository(settings, project).references.get(f"refs/heads/{branch}")
    return None if ref is None else str(ref.target)


def git_time(sig: pygit2.Signature) -> str:
    return datetime.fromtimestamp(sig.time, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def expected_commit(settings, project: dict, sha: str) -> dict:
    c = open_repository(settings, project)[sha]
    return {
        "id": sha,
        "short_id": sha[:8],
        "created_at": git_time(c.committer),
        "parent_ids": [str(p) for p in c.parent_ids],
        "title": c.message.split("\n", 1)[0],
        "message": c.message,
        "author_name": c.author.name,
        "author_email": c.author.email,
        "authored_date": git_time(c.author),
        "committer_name": c.committer.name,
        "committer_email": c.committer.email,
        "committed_date": git_time(c.committer),
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"{project['web_url']}/-/commit/{sha}",
    }


def assert_fsck_clean(settings, project: dict) -> None:
    assert fsck_errors(repo_path(settings, project)) == ""


def last_event(db, project: dict) -> Event:
    db.expire_all()
    return db.scalars(
        select(Event).where(Event.project_id == project["id"]).order_by(Event.id.desc())
    ).first()


def branches_url(project: dict, name: str | None = None) -> str:
    base = f"/projects/{project['id']}/repository/branches"
    return base if name is None else f"{base}/{name.replace('/', '%2F')}"


def _waiting_on(lock: Path) -> bool:
    inode = os.stat(lock).st_ino
    with open("/proc/locks") as f:
        return any("->" in line and line.split()[-3].endswith(f":{inode}") for line in f)


@contextmanager
def push_lands_while_waiting(repo: Path, ref: str, new: str, old: str | None) -> Iterator[None]:
    """Hold the repository's write lock from outside kiln; once a request waits for it, move
    `ref` the way a `git push` does (git's own ref lock, not kiln's), then let it go."""
    lock = repo / "kiln-write.lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    failures: list[str] = []

    def push() -> None:
        try:
            deadline = time.monotonic() + 20
            while not _waiting_on(lock):
                if time.monotonic() > deadline:
                    failures.append("no request waited for the lock")
                    return
                time.sleep(0.01)
            subprocess.run(
                ["git", "-C", str(repo), "update-ref", ref, new, old or ZERO], check=True, capture_output=True
            )
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    thread = threading.Thread(target=push)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    assert failures == []


def new_commit_object(settings, project: dict, parent: str) -> str:
    """A commit that no ref names yet (what a push uploads before moving the ref)."""
    repo = open_repository(settings, project)
    base = repo[parent].peel(pygit2.Commit)
    sig = pygit2.Signature("Pusher", "pusher@example.com")
    blob = repo.create_blob(b"pushed\n")
    builder = repo.TreeBuilder(base.tree)
    builder.insert("pushed.txt", blob, pygit2.enums.FileMode.BLOB)
    return str(repo.create_commit(None, sig, sig, "Pushed\n", builder.write(), [base.id]))


# ----------------------------------------------------------------------------- reading


def test_branch_view_has_every_field_of_gitlab_entity(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(branches_url(p, "main"))
    sha = tip(settings, p, "main")
    assert (r.status_code, r.json()) == (
        200,
        {
            "name": "main",
            "commit": expected_commit(settings, p, sha),
            "merged": False,
            "protected": True,
            "developers_can_push": False,
            "developers_can_merge": False,
            "can_push": True,
            "default": True,
            "web_url": f"{p['web_url']}/-/tree/main",
        },
    )


def test_commit_dates_are_rendered_in_utc(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "dated", "a.txt", when=(1338205362, -420))
    r = api(u).get(branches_url(p, "dated"))
    commit = r.json()["commit"]
    assert (commit["authored_date"], commit["committed_date"], commit["created_at"]) == (
        "2012-05-28T11:42:42.000Z",
        "2012-05-28T11:42:42.000Z",
        "2012-05-28T11:42:42.000Z",
    )


def test_list_is_sorted_by_name(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("zeta", "alpha", "feature/x"):
        commit_on(settings, p, name, f"{name.replace('/', '-')}.txt")
    r = api(u).get(branches_url(p))
    assert (r.status_code, [b["name"] for b in r.json()]) == (200, ["alpha", "feature/x", "main", "zeta"])


def test_list_items_are_the_branch_view(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    listed = api(u).get(branches_url(p)).json()
    single = api(u).get(branches_url(p, "main")).json()
    assert listed == [single]


def test_list_sorts_by_update_time(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "old", "old.txt", when=(1_000_000_000, 0))
    commit_on(settings, p, "new", "new.txt", when=(2_000_000_000, 0))
    newest_first = [b["name"] for b in api(u).get(branches_url(p) + "?sort=updated_desc").json()]
    oldest_first = [b["name"] for b in api(u).get(branches_url(p) + "?sort=updated_asc").json()]
    assert newest_first == ["new", "main", "old"]
    assert oldest_first == ["old", "main", "new"]


def test_unknown_sort_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(branches_url(p) + "?sort=name_desc")
    assert (r.status_code, r.json()) == (400, {"error": "sort does not have a valid value"})


def test_search_matches_a_part_a_prefix_or_a_suffix_ignoring_case(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("feature-one", "hotfix-feature", "Release"):
        commit_on(settings, p, name, f"{name}.txt")

    def names(term: str) -> list[str]:
        return [b["name"] for b in api(u).get(branches_url(p), params={"search": term}).json()]

    assert names("feature") == ["feature-one", "hotfix-feature"]
    assert names("^feature") == ["feature-one"]
    assert names("feature$") == ["hotfix-feature"]
    assert names("release") == ["Release"]


def test_list_is_paginated_with_headers(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    for i in range(4):
        commit_on(settings, p, f"b{i}", f"f{i}.txt")
    r = api(u).get(branches_url(p) + "?per_page=2&page=2")
    assert [b["name"] for b in r.json()] == ["b2", "b3"]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Next-Page"]) == ("5", "3", "3")
    assert r.headers["X-Prev-Page"] == "1"


def test_branch_name_with_slash_is_one_encoded_segment(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_on(settings, p, "feature/x", "x.txt")
    r = api(u).get(f"/projects/{p['id']}/repository/branches/feature%2Fx")
    assert (r.status_code, r.json()["name"], r.json()["commit"]["id"]) == (200, "feature/x", sha)
    assert r.json()["web_url"] == f"{p['web_url']}/-/tree/feature/x"


def test_dots_in_a_branch_name_are_not_a_format_suffix(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("my.branch.name", "data.json"):
        commit_on(settings, p, name, f"{name}.txt")
        r = api(u).get(branches_url(p, name))
        assert (r.status_code, r.json()["name"]) == (200, name)


def test_project_path_works_as_id(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(f"/projects/{p['path_with_namespace'].replace('/', '%2F')}/repository/branches/main")
    assert (r.status_code, r.json()["name"]) == (200, "main")


def test_head_on_an_existing_branch_is_204(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).head(branches_url(p, "main"))
    assert (r.status_code, r.content) == (204, b"")


def test_head_on_a_missing_branch_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).head(branches_url(p, "nope"))
    assert (r.status_code, r.content) == (404, b"")


def test_missing_branch_is_404_branch_not_found(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(branches_url(p, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Branch Not Found"})


def test_a_name_git_refuses_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(branches_url(p, "a..b"))
    assert (r.status_code, r.json()) == (400, {"message": "The branch refname is invalid"})


def test_empty_project_lists_no_branches(api, make):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    r = api(u).get(branches_url(p))
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")


def test_merged_is_true_for_a_branch_contained_in_the_default_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = tip(settings, p, "main")
    commit_on(settings, p, "main", "later.txt")  # main moves on; `old` stays behind
    api(u).post(branches_url(p), json={"branch": "old", "ref": first})
    commit_on(settings, p, "ahead", "ahead.txt")
    views = {b["name"]: b["merged"] for b in api(u).get(branches_url(p)).json()}
    assert views == {"ahead": False, "main": False, "old": True}


def test_anonymous_reads_branches_of_a_public_project(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    r = api().get(branches_url(p, "main"))
    assert (r.status_code, r.json()["can_push"]) == (200, False)


def test_private_project_is_404_to_non_members(api, make):
    u, outsider = make.user(), make.user()
    p = new_project(api, make, u)
    r = api(outsider).get(branches_url(p))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_guest_of_a_private_project_may_not_read_branches(api, make, db):
    u, guest = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, guest, 10)
    r = api(guest).get(branches_url(p))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_developer_sees_what_protection_allows_them(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    commit_on(settings, p, "topic", "t.txt")
    views = {b["name"]: b for b in api(dev).get(branches_url(p)).json()}
    assert (views["main"]["protected"], views["main"]["can_push"]) == (True, False)
    assert (views["topic"]["protected"], views["topic"]["can_push"]) == (False, True)


def test_developers_can_push_and_merge_follow_the_rule(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "release/1", "r.txt")
    api(u).post(
        f"/projects/{p['id']}/protected_branches",
        json={"name": "release/*", "push_access_level": 30, "merge_access_level": 30},
    )
    view = api(u).get(branches_url(p, "release/1")).json()
    assert (view["protected"], view["developers_can_push"], view["developers_can_merge"]) == (
        True,
        True,
        True,
    )


# ----------------------------------------------------------------------------- creating


def test_create_answers_201_with_the_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "feature/new", "ref": "main"})
    sha = tip(settings, p, "main")
    assert (r.status_code, r.json()) == (
        201,
        {
            "name": "feature/new",
            "commit": expected_commit(settings, p, sha),
            "merged": False,
            "protected": False,
            "developers_can_push": False,
            "developers_can_merge": False,
            "can_push": True,
            "default": False,
            "web_url": f"{p['web_url']}/-/tree/feature/new",
        },
    )
    assert tip(settings, p, "feature/new") == sha


def test_create_takes_form_and_query_parameters(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p) + "?branch=from-query&ref=main", json={})
    assert (r.status_code, tip(settings, p, "from-query")) == (201, tip(settings, p, "main"))
    r = api(u).post(branches_url(p), data={"branch": "from-form", "ref": "main"})
    assert (r.status_code, tip(settings, p, "from-form")) == (201, tip(settings, p, "main"))


def test_create_from_a_commit_sha_or_a_tag(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = tip(settings, p, "main")
    commit_on(settings, p, "main", "second.txt")
    api(u).post(f"/projects/{p['id']}/repository/tags", json={"tag_name": "v1", "ref": first, "message": "m"})
    assert api(u).post(branches_url(p), json={"branch": "from-sha", "ref": first[:10]}).status_code == 201
    assert api(u).post(branches_url(p), json={"branch": "from-tag", "ref": "v1"}).status_code == 201
    assert tip(settings, p, "from-sha") == tip(settings, p, "from-tag") == first


def test_create_records_a_push_event(api, make, db, settings):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(branches_url(p), json={"branch": "evented", "ref": "main"})
    event = last_event(db, p)
    assert (event.action, event.author_id) == ("pushed", u.id)
    assert {k: event.data[k] for k in ("ref", "before", "after", "action")} == {
        "ref": "refs/heads/evented",
        "before": ZERO,
        "after": tip(settings, p, "main"),
        "action": "created",
    }


def test_create_without_branch_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"ref": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "branch is missing"})


def test_create_with_blank_ref_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "x", "ref": " "})
    assert (r.status_code, r.json()) == (400, {"error": "ref is empty"})


def test_create_with_an_invalid_name_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("a..b", "-dash", "HEAD", "refs/heads/x", "trailing/", "sp ace"):
        r = api(u).post(branches_url(p), json={"branch": name, "ref": "main"})
        assert (name, r.status_code, r.json()) == (name, 400, {"message": "Branch name is invalid"})


def test_create_an_existing_branch_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "main", "ref": "main"})
    assert (r.status_code, r.json()) == (400, {"message": "Branch already exists"})


def test_create_from_an_unknown_ref_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "x", "ref": "nowhere"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Failed to create branch 'x': invalid reference name 'nowhere'"},
    )
    assert tip(settings, p, "x") is None


def test_create_a_40_hex_name_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "a" * 40, "ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You cannot create a branch with a SHA-1 or SHA-256 branch name."},
    )


def test_create_a_name_clashing_with_the_hierarchy_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(branches_url(p), json={"branch": "main/sub", "ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "Failed to create branch 'main/sub': Branch name conflicts with existing branch hierarchy."
        },
    )


def test_create_in_an_empty_repository_first_commits_a_readme_to_the_default_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    r = api(u).post(branches_url(p), json={"branch": "feature", "ref": "main"})
    assert r.status_code == 201
    repo = open_repository(settings, p)
    main = repo.revparse_single("main").peel(pygit2.Commit)
    assert (main.message, [e.name for e in main.tree], main.tree["README.md"].data) == (
        "Add README.md",
        ["README.md"],
        b"",
    )
    assert (main.author.name, main.author.email) == (u.row.name, u.email)
    assert tip(settings, p, "feature") == str(main.id)
    assert_fsck_clean(settings, p)


def test_reporter_may_not_create_branches(api, make, db):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, reporter, 20)
    r = api(reporter).post(branches_url(p), json={"branch": "x", "ref": "main"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_anonymous_create_is_401(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    r = api().post(branches_url(p), json={"branch": "x", "ref": "main"})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_archived_project_refuses_new_branches(api, make):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(f"/projects/{p['id']}/archive")
    r = api(u).post(branches_url(p), json={"branch": "x", "ref": "main"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_developer_creates_an_unprotected_branch(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(dev).post(branches_url(p), json={"branch": "dev-work", "ref": "main"})
    assert (r.status_code, r.json()["can_push"]) == (201, True)


def test_developer_may_not_create_a_branch_only_maintainers_merge_into(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    api(u).post(f"/projects/{p['id']}/protected_branches", json={"name": "release/*"})
    r = api(dev).post(branches_url(p), json={"branch": "release/1", "ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You are not allowed to create protected branches on this project."},
    )
    assert tip(settings, p, "release/1") is None


def test_developer_who_may_merge_creates_a_protected_branch_from_a_protected_commit(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    api(u).post(
        f"/projects/{p['id']}/protected_branches", json={"name": "release/*", "merge_access_level": 30}
    )
    loose = commit_on(settings, p, "loose", "loose.txt")
    r = api(dev).post(branches_url(p), json={"branch": "release/1", "ref": loose})
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "You can only use an existing protected branch ref as the basis of a new protected branch."
        },
    )
    r = api(dev).post(branches_url(p), json={"branch": "release/1", "ref": "main"})
    assert (r.status_code, r.json()["protected"], r.json()["can_push"]) == (201, True, False)


# ----------------------------------------------------------------------------- deleting


def test_delete_answers_204_and_removes_the_branch(api, make, db, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_on(settings, p, "gone", "g.txt")
    r = api(u).delete(branches_url(p, "gone"))
    assert (r.status_code, r.content) == (204, b"")
    assert tip(settings, p, "gone") is None
    event = last_event(db, p)
    assert {k: event.data[k] for k in ("ref", "before", "after", "action")} == {
        "ref": "refs/heads/gone",
        "before": sha,
        "after": ZERO,
        "action": "removed",
    }
    assert_fsck_clean(settings, p)


def test_delete_a_branch_with_slashes_and_dots(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "feature/v1.2.json", "f.txt")
    r = api(u).delete(branches_url(p, "feature/v1.2.json"))
    assert (r.status_code, tip(settings, p, "feature/v1.2.json")) == (204, None)


def test_delete_a_missing_branch_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).delete(branches_url(p, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Branch Not Found"})


def test_delete_the_default_branch_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    api(u).delete(f"/projects/{p['id']}/protected_branches/main")
    r = api(u).delete(branches_url(p, "main"))
    assert (r.status_code, r.json()) == (
        400,
        {"message": "The default branch of a project cannot be deleted."},
    )
    assert tip(settings, p, "main") is not None


def test_developer_may_not_delete_a_protected_branch(api, make, db, settings):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    commit_on(settings, p, "stable", "s.txt")
    api(u).post(f"/projects/{p['id']}/protected_branches", json={"name": "stable", "push_access_level": 30})
    r = api(dev).delete(branches_url(p, "stable"))
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "You are not allowed to delete protected branches from this project. "
            "Only a project maintainer or owner can delete a protected branch."
        },
    )
    assert tip(settings, p, "stable") is not None


def test_maintainer_deletes_a_protected_branch(api, make, db, settings):
    u, maintainer = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, maintainer, 40)
    commit_on(settings, p, "stable", "s.txt")
    api(u).post(f"/projects/{p['id']}/protected_branches", json={"name": "stable"})
    r = api(maintainer).delete(branches_url(p, "stable"))
    assert (r.status_code, tip(settings, p, "stable")) == (204, None)


def test_reporter_may_not_delete_branches(api, make, db, settings):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, reporter, 20)
    commit_on(settings, p, "topic", "t.txt")
    r = api(reporter).delete(branches_url(p, "topic"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_delete_refuses_when_the_branch_changed_after_if_unmodified_since(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "dated", "d.txt", when=(2_000_000_000, 0))
    since = format_datetime(datetime(2020, 1, 1, tzinfo=UTC), usegmt=True)
    r = api(u).delete(branches_url(p, "dated"), headers={"If-Unmodified-Since": since})
    assert (r.status_code, r.json()) == (412, {"message": "412 Precondition Failed"})
    assert tip(settings, p, "dated") is not None


def test_delete_merged_branches_keeps_default_protected_unmerged_and_identical(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = tip(settings, p, "main")
    commit_on(settings, p, "main", "later.txt")
    for name in ("merged-a", "merged/b", "kept-protected"):
        api(u).post(branches_url(p), json={"branch": name, "ref": first})
    api(u).post(f"/projects/{p['id']}/protected_branches", json={"name": "kept-*"})
    api(u).post(branches_url(p), json={"branch": "identical", "ref": "main"})
    commit_on(settings, p, "unmerged", "u.txt")
    r = api(u).delete(f"/projects/{p['id']}/repository/merged_branches")
    assert (r.status_code, r.json()) == (202, {"message": "202 Accepted"})
    names = [b["name"] for b in api(u).get(branches_url(p)).json()]
    assert names == ["identical", "kept-protected", "main", "unmerged"]
    assert_fsck_clean(settings, p)


def test_reporter_may_not_delete_merged_branches(api, make, db):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, reporter, 20)
    r = api(reporter).delete(f"/projects/{p['id']}/repository/merged_branches")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


# ----------------------------------------------------------------------------- races


def test_delete_racing_a_push_fails_and_keeps_the_pushed_commit(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    seen = commit_on(settings, p, "contested", "c.txt")
    pushed = new_commit_object(settings, p, seen)
    with push_lands_while_waiting(repo_path(settings, p), "refs/heads/contested", pushed, seen):
        r = api(u).delete(branches_url(p, "contested"))
    assert (r.status_code, r.json()) == (400, {"message": "Failed to remove branch"})
    assert tip(settings, p, "contested") == pushed
    assert_fsck_clean(settings, p)


def test_create_racing_a_push_of_the_same_name_fails_and_keeps_the_push(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    pushed = new_commit_object(settings, p, tip(settings, p, "main"))
    with push_lands_while_waiting(repo_path(settings, p), "refs/heads/twin", pushed, None):
        r = api(u).post(branches_url(p), json={"branch": "twin", "ref": "main"})
    assert (r.status_code, r.json()) == (400, {"message": "Branch already exists"})
    assert tip(settings, p, "twin") == pushed


@pytest.mark.committing
def test_concurrent_creates_of_one_name_make_one_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = tip(settings, p, "main")
    second = commit_on(settings, p, "other", "o.txt")
    results: list[tuple[int, str]] = []

    def create(ref: str) -> None:
        r = api(u).post(branches_url(p), json={"branch": "same", "ref": ref})
        results.append((r.status_code, ref))

    threads = [threading.Thread(target=create, args=(ref,)) for ref in (first, second) * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [ref for status, ref in results if status == 201]
    assert sorted(s for s, _ in results) == [201, 400, 400, 400, 400, 400]
    assert tip(settings, p, "same") == winners[0]
    assert_fsck_clean(settings, p)


def test_repository_stays_consistent_after_a_branch_scenario(api, make, settings, db):
    u = make.user()
    p = new_project(api, make, u)
    commit_on(settings, p, "work", "w.txt")
    api(u).post(branches_url(p), json={"branch": "copy/of.work", "ref": "work"})
    api(u).delete(branches_url(p, "work"))
    api(u).post(
        f"/projects/{p['id']}/repository/tags", json={"tag_name": "v1", "ref": "copy/of.work", "message": "x"}
    )
    api(u).delete(f"/projects/{p['id']}/repository/merged_branches")
    refs = sorted(open_repository(settings, p).references)
    assert refs == ["refs/heads/copy/of.work", "refs/heads/main", "refs/tags/v1"]
    rules = db.scalars(select(ProtectedBranch.name).where(ProtectedBranch.project_id == p["id"])).all()
    assert rules == ["main"]
    assert_fsck_clean(settings, p)
