"""Paths and ref names an attacker gives the files and commits APIs: every spelling of `.git`
git's fsck knows, paths too deep to walk, names that read as options, refs or commit ids.
One rule for each (kiln.git.names), used by every write; reads of what can't exist are 404."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from kiln.git.names import MAX_PATH_DEPTH
from kiln.services.repositories import store
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import git

INVALID_PATH = "Your changes could not be committed, because the file path is invalid"
DOTGIT_SPELLINGS = [
    ".git/config",
    ".GIT/config",
    ".Git/hooks/pre-receive",
    "git~1/config",
    "GIT~1/config",
    ".git./config",
    ".git../config",
    ".git /config",
    ".git. . /config",
    ".git\\config",
    "a\\.git\\config",
    ".g\u200cit/config",
    "\u200c.git/config",
    ".git\ufeff/config",
    ".gi\u200dt/config",
    ".GIT\u206a/config",
    ".git::$INDEX_ALLOCATION/config",
    "sub/.git/config",
    "sub/.GiT",
]
OTHER_BAD_PATHS = ["../escape", "a/../b", "./a", "a/./b", "a//b", "/abs", "a/", "tab\tname", "bell\x07"]
REFUSED_NEW_BRANCHES = [
    "-x",
    "--output=x",
    "-",
    "refs/heads/x",
    "refs/remotes/x",
    "HEAD",
    "a..b",
    "a b",
    "x.lock",
]
HEX_NAMES = ["a" * 40, "0123456789abcdef0123456789abcdef01234567", "b" * 64]


def _tip(settings: Any, project: dict[str, Any], branch: str = "main") -> str:
    path = store(settings).path(project["id"])
    return git(path, "rev-parse", f"refs/heads/{branch}").stdout.decode().strip()


def _refs(settings: Any, project: dict[str, Any]) -> list[str]:
    path = store(settings).path(project["id"])
    return git(path, "for-each-ref", "--format=%(refname)").stdout.decode().split()


def _create_file(api: Any, owner: Any, project: dict[str, Any], path: str, **fields: Any) -> Any:
    body = {"branch": "main", "content": "x", "commit_message": "m", **fields}
    return api(owner).post(f"/projects/{project['id']}/repository/files/{quote(path, safe='')}", json=body)


def _commit(
    api: Any, owner: Any, project: dict[str, Any], actions: list[dict[str, Any]], **fields: Any
) -> Any:
    body = {"branch": "main", "commit_message": "m", "actions": actions, **fields}
    return api(owner).post(f"/projects/{project['id']}/repository/commits", json=body)


# ---------------------------------------------------------------------------- paths


@pytest.mark.parametrize("path", DOTGIT_SPELLINGS)
def test_files_api_refuses_every_spelling_of_dotgit(api, owner, project, settings, path):
    before = _tip(settings, project)
    r = _create_file(api, owner, project, path)
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith(INVALID_PATH)
    assert _tip(settings, project) == before


@pytest.mark.parametrize("path", DOTGIT_SPELLINGS)
def test_commits_api_refuses_every_spelling_of_dotgit(api, owner, project, settings, path):
    before = _tip(settings, project)
    r = _commit(api, owner, project, [{"action": "create", "file_path": path, "content": "x"}])
    assert r.status_code == 400, r.text
    assert r.json()["message"].startswith(INVALID_PATH)
    assert _tip(settings, project) == before


def test_a_move_may_not_take_a_file_into_dotgit(api, owner, project, settings):
    before = _tip(settings, project)
    r = _commit(
        api, owner, project, [{"action": "move", "file_path": ".GIT/config", "previous_path": "README.md"}]
    )
    assert r.status_code == 400, r.text
    assert _tip(settings, project) == before


@pytest.mark.parametrize("path", OTHER_BAD_PATHS)
def test_paths_that_leave_or_break_the_tree_are_refused(api, owner, project, settings, path):
    before = _tip(settings, project)
    r = _commit(api, owner, project, [{"action": "create", "file_path": path, "content": "x"}])
    assert r.status_code == 400, r.text
    assert _tip(settings, project) == before


@pytest.mark.parametrize(
    "path", [".GIT/config", "git~1/config", ".git./config", ".git\\config", ".g\u200cit/config"]
)
def test_reading_a_dotgit_spelling_is_not_found_never_a_git_error(api, owner, project, path):
    """These spellings made libgit2 raise (a 500); no tree kiln accepts holds them."""
    pid = project["id"]
    enc = quote(path, safe="")
    for url, answer in (
        (f"/projects/{pid}/repository/files/{enc}?ref=main", (404, {"message": "404 File Not Found"})),
        (f"/projects/{pid}/repository/files/{enc}/raw?ref=main", (404, {"message": "404 File Not Found"})),
        (f"/projects/{pid}/repository/files/{enc}/blame?ref=main", (404, {"message": "404 File Not Found"})),
        (f"/projects/{pid}/repository/tree?path={enc}", (404, {"message": "404 Tree Not Found"})),
        (f"/projects/{pid}/repository/commits?path={enc}", (200, [])),
    ):
        r = api(owner).get(url)
        assert (r.status_code, r.json()) == answer, url


def test_a_path_deeper_than_the_rule_is_refused(api, owner, project, settings):
    before = _tip(settings, project)
    deep = "/".join(["d"] * 2000) + "/f.txt"
    r = _create_file(api, owner, project, deep)
    assert r.status_code == 400, r.text
    assert _tip(settings, project) == before


def test_a_path_as_deep_as_the_rule_allows_is_written_and_read(api, owner, project):
    deep = "/".join(["d"] * (MAX_PATH_DEPTH - 1)) + "/f.txt"
    assert _create_file(api, owner, project, deep).status_code == 201
    r = api(owner).get(f"/projects/{project['id']}/repository/files/{quote(deep, safe='')}/raw?ref=main")
    assert r.status_code == 200, r.text
    assert r.content == b"x"


def test_reads_of_a_path_too_deep_for_any_tree_are_not_found(api, owner, project):
    deep = quote("/".join(["d"] * 2000) + "/f.txt", safe="")
    pid = project["id"]
    for url, answer in (
        (f"/projects/{pid}/repository/files/{deep}?ref=main", {"message": "404 File Not Found"}),
        (f"/projects/{pid}/repository/tree?path={deep}", {"message": "404 Tree Not Found"}),
    ):
        r = api(owner).get(url)
        assert (r.status_code, r.json()) == (404, answer), url


# ---------------------------------------------------------------------------- ref names


@pytest.mark.parametrize("name", REFUSED_NEW_BRANCHES)
def test_files_api_refuses_branch_names_the_branches_api_refuses(api, owner, project, settings, name):
    refs = _refs(settings, project)
    r = _create_file(api, owner, project, "new.txt", branch=name, start_branch="main")
    assert r.status_code == 400, r.text
    assert _refs(settings, project) == refs


@pytest.mark.parametrize("name", REFUSED_NEW_BRANCHES + HEX_NAMES)
def test_commits_api_refuses_branch_names_the_branches_api_refuses(api, owner, project, settings, name):
    refs = _refs(settings, project)
    r = _commit(
        api,
        owner,
        project,
        [{"action": "create", "file_path": "n.txt", "content": "x"}],
        branch=name,
        start_branch="main",
    )
    assert r.status_code == 400, r.text
    assert _refs(settings, project) == refs


@pytest.mark.parametrize("name", HEX_NAMES)
def test_no_write_creates_a_branch_named_like_a_commit_id(api, owner, project, settings, name):
    refs = _refs(settings, project)
    assert _create_file(api, owner, project, "n.txt", branch=name, start_branch="main").status_code == 400
    r = api(owner).post(
        f"/projects/{project['id']}/repository/branches", json={"branch": name, "ref": "main"}
    )
    assert r.status_code == 400, r.text
    assert _refs(settings, project) == refs


def test_a_start_branch_of_ten_thousand_characters_is_refused(api, owner, project, settings):
    refs = _refs(settings, project)
    r = _create_file(api, owner, project, "n.txt", branch="side", start_branch="x" * 10_000)
    assert r.status_code == 400, r.text
    r = _commit(
        api,
        owner,
        project,
        [{"action": "create", "file_path": "n.txt", "content": "x"}],
        branch="side",
        start_branch="x" * 10_000,
    )
    assert r.status_code == 400, r.text
    assert _refs(settings, project) == refs


def test_a_ref_of_ten_thousand_characters_is_not_found(api, owner, project):
    pid = project["id"]
    long = "x" * 10_000
    for url in (
        f"/projects/{pid}/repository/files/README.md?ref={long}",
        f"/projects/{pid}/repository/commits/{long}",
        f"/projects/{pid}/repository/tree?ref={long}",
        f"/projects/{pid}/repository/archive?sha={long}",
    ):
        assert api(owner).get(url).status_code == 404, url


def test_a_commit_id_names_that_commit_even_where_a_branch_has_its_name(api, owner, project, settings):
    repo = open_repository(settings, project)
    first = _tip(settings, project)
    later = write_commit(repo, {"README.md": "shadow\n"}, branch="other", start=first)
    # a branch named like the first commit, pointing elsewhere (as an old push could leave it)
    git(store(settings).path(project["id"]), "update-ref", f"refs/heads/{first}", later)
    pid = project["id"]
    assert api(owner).get(f"/projects/{pid}/repository/commits/{first}").json()["id"] == first
    raw = api(owner).get(f"/projects/{pid}/repository/files/README.md/raw?ref={first}")
    assert raw.status_code == 200
    assert raw.content != b"shadow\n"
    archive = api(owner).get(f"/projects/{pid}/repository/archive?sha={first}")
    assert archive.status_code == 200
    assert first in archive.headers["content-disposition"]
    git(store(settings).path(project["id"]), "update-ref", "-d", f"refs/heads/{first}")
