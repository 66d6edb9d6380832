"""Real `git` against a running `kiln serve` over smart HTTP: clone, fetch and push with
GitLab's rules (anonymous public reads, tokens, protected branches, archived projects), and
the bookkeeping a push leaves in the database."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import text

from kiln.db import make_engine_unpooled
from kiln.git.layout import repository_path
from tests.e2e.conftest import ROOT_TOKEN, Server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
PASSWORD = "e2e-git-password-123"
ZERO = "0" * 40


# --- helpers ----------------------------------------------------------------------------------


class Git:
    """`git` with no user or system configuration, never prompting for credentials."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "E2E",
            "GIT_AUTHOR_EMAIL": "e2e@example.com",
            "GIT_COMMITTER_NAME": "E2E",
            "GIT_COMMITTER_EMAIL": "e2e@example.com",
            "LC_ALL": "C",
        }

    def run(
        self, *args: str, cwd: Path | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def commit(self, work: Path, name: str, content: str, message: str | None = None) -> str:
        (work / name).write_text(content)
        self.run("add", name, cwd=work)
        self.run("commit", "-q", "-m", message or f"change {name}", cwd=work)
        return self.run("rev-parse", "HEAD", cwd=work).stdout.strip()

    def remote_refs(self, url: str) -> dict[str, str]:
        out = self.run("ls-remote", url).stdout
        return {ref: sha for sha, ref in (line.split("\t") for line in out.splitlines())}


@pytest.fixture
def git(tmp_path: Path) -> Git:
    return Git(tmp_path / "home")


def api(base_url: str, method: str, path: str, token: str = ROOT_TOKEN, **kw: Any) -> httpx.Response:
    return httpx.request(
        method, f"{base_url}/api/v4{path}", headers={"Private-Token": token}, timeout=30, **kw
    )


def create_user(base_url: str, username: str) -> tuple[int, str]:
    """A user and a personal access token of theirs (scope api)."""
    r = api(
        base_url,
        "POST",
        "/users",
        json={
            "username": username,
            "email": f"{username}@example.com",
            "name": username,
            "password": PASSWORD,
            "skip_confirmation": True,
        },
    )
    assert r.status_code == 201, r.text
    user_id = r.json()["id"]
    return user_id, token_of(base_url, user_id, ["api"])


def token_of(base_url: str, user_id: int, scopes: list[str]) -> str:
    r = api(
        base_url, "POST", f"/users/{user_id}/personal_access_tokens", json={"name": "git", "scopes": scopes}
    )
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


def create_project(base_url: str, token: str, name: str, **fields: Any) -> dict[str, Any]:
    r = api(base_url, "POST", "/projects", token, json={"name": name, **fields})
    assert r.status_code == 201, r.text
    return dict(r.json())


def add_member(base_url: str, project_id: int, user_id: int, level: int) -> None:
    r = api(
        base_url, "POST", f"/projects/{project_id}/members", json={"user_id": user_id, "access_level": level}
    )
    assert r.status_code == 201, r.text


def with_credentials(url: str, username: str, secret: str) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{quote(username, safe='')}:{quote(secret, safe='')}@{rest}"


def query(server: Server, sql: str, **params: Any) -> list[Any]:
    """Rows from serve's own database."""
    url = server.env.get("KILN_DATABASE_URL") or f"sqlite:///{server.data_dir / 'kiln.db'}"
    engine = make_engine_unpooled(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(text(sql), params).all())
    finally:
        engine.dispose()


def events_of(server: Server, project_id: int) -> list[dict[str, Any]]:
    """The push events of a project, oldest first."""
    rows = query(
        server,
        "SELECT author_id, action, target_type, data FROM events WHERE project_id = :p ORDER BY id",
        p=project_id,
    )
    out = []
    for author_id, action, target_type, data in rows:
        fields = json.loads(data) if isinstance(data, str) else data
        out.append({**fields, "author_id": author_id, "event": action, "target_type": target_type})
    return out


@pytest.fixture
def owner(base_url: str, unique: Callable[[str], str]) -> tuple[int, str, str]:
    """(id, token, username) of a user who creates the projects of a test."""
    username = unique("gitowner")
    user_id, token = create_user(base_url, username)
    return user_id, token, username


# --- clone and fetch --------------------------------------------------------------------------


def test_anonymous_clone_of_a_public_project(base_url, git, tmp_path, owner, unique):
    project = create_project(
        base_url, owner[1], unique("pub"), visibility="public", initialize_with_readme=True
    )
    assert project["http_url_to_repo"] == f"{base_url}/{project['path_with_namespace']}.git"
    work = tmp_path / "clone"
    git.run("clone", "-q", project["http_url_to_repo"], str(work))
    assert (work / "README.md").read_text() == f"# {project['name']}\n"
    assert git.run("rev-parse", "--abbrev-ref", "HEAD", cwd=work).stdout.strip() == "main"
    assert git.run("fsck", "--strict", cwd=work).returncode == 0


def test_clone_over_protocol_v0_and_without_dot_git(base_url, git, tmp_path, owner, unique):
    project = create_project(
        base_url, owner[1], unique("v0"), visibility="public", initialize_with_readme=True
    )
    url = f"{base_url}/{project['path_with_namespace']}"
    work = tmp_path / "clone"
    git.run("-c", "protocol.version=0", "clone", "-q", url, str(work))
    assert (work / "README.md").is_file()


def test_private_project_needs_credentials_to_clone(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("priv"), initialize_with_readme=True)
    url = project["http_url_to_repo"]
    refused = git.run("clone", "-q", url, str(tmp_path / "anon"), check=False)
    assert refused.returncode != 0
    assert "could not read Username" in refused.stderr or "Authentication failed" in refused.stderr
    assert not (tmp_path / "anon").exists()
    work = tmp_path / "clone"
    git.run("clone", "-q", with_credentials(url, "anything", owner[1]), str(work))
    assert (work / "README.md").is_file()


def test_clone_with_username_and_password(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("pw"), initialize_with_readme=True)
    work = tmp_path / "clone"
    git.run("clone", "-q", with_credentials(project["http_url_to_repo"], owner[2], PASSWORD), str(work))
    assert (work / "README.md").is_file()


def test_wrong_password_is_refused(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("bad"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], owner[2], "not-the-password")
    refused = git.run("clone", "-q", url, str(tmp_path / "clone"), check=False)
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr
    assert "HTTP Basic: Access denied." in refused.stderr


def test_outsider_gets_not_found(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("hidden"), initialize_with_readme=True)
    _, outsider = create_user(base_url, unique("outsider"))
    url = with_credentials(project["http_url_to_repo"], "x", outsider)
    refused = git.run("clone", "-q", url, str(tmp_path / "clone"), check=False)
    assert refused.returncode != 0
    assert "The project you were looking for could not be found" in refused.stderr


def test_fetch_sees_new_commits(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("fetch"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    reader, writer = tmp_path / "reader", tmp_path / "writer"
    git.run("clone", "-q", url, str(reader))
    git.run("clone", "-q", url, str(writer))
    sha = git.commit(writer, "new.txt", "new\n")
    git.run("push", "-q", "origin", "main", cwd=writer)
    # Local commits the server lacks make a long negotiation, which git sends gzipped.
    for n in range(150):
        git.run("commit", "-q", "--allow-empty", "-m", f"local {n}", cwd=reader)
    git.run("fetch", "-q", "origin", cwd=reader)
    assert git.run("rev-parse", "origin/main", cwd=reader).stdout.strip() == sha
    git.run("-c", "protocol.version=0", "fetch", "-q", "origin", cwd=reader)
    assert git.run("fsck", "--strict", cwd=reader).returncode == 0


# --- push -------------------------------------------------------------------------------------


def test_push_into_an_empty_project_sets_its_default_branch(
    base_url, git, tmp_path, owner, unique, kiln_server
):
    project = create_project(base_url, owner[1], unique("empty"))
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("init", "-q", "-b", "trunk", str(work))
    sha = git.commit(work, "a.txt", "a\n", "first")
    git.run("push", "-q", url, "trunk", cwd=work)
    got = api(base_url, "GET", f"/projects/{project['id']}?statistics=true", owner[1]).json()
    assert got["default_branch"] == "trunk"
    assert got["statistics"]["commit_count"] == 1
    assert got["statistics"]["repository_size"] > 0
    assert got["last_activity_at"] > project["last_activity_at"]
    assert git.remote_refs(url)["HEAD"] == sha
    clone = tmp_path / "clone"
    git.run("clone", "-q", url, str(clone))
    assert git.run("rev-parse", "--abbrev-ref", "HEAD", cwd=clone).stdout.strip() == "trunk"
    protected = query(
        kiln_server, "SELECT name FROM protected_branches WHERE project_id = :p", p=project["id"]
    )
    assert "trunk" in {name for (name,) in protected}
    events = events_of(kiln_server, project["id"])
    assert [(e["event"], e["action"], e["ref"], e["before"], e["after"], e["author_id"]) for e in events] == [
        ("pushed", "created", "refs/heads/trunk", ZERO, sha, owner[0])
    ]


def test_first_push_of_the_default_branch_keeps_and_protects_it(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("keep"))
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("init", "-q", "-b", "feature", str(work))
    git.commit(work, "README.md", "# keep\n")
    git.run("branch", "main", cwd=work)
    git.run("push", "-q", url, "feature", "main", cwd=work)
    got = api(base_url, "GET", f"/projects/{project['id']}", owner[1]).json()
    assert (got["default_branch"], got["readme_url"]) == (
        "main",
        f"{project['web_url']}/-/blob/main/README.md",
    )
    rules = api(base_url, "GET", f"/projects/{project['id']}/protected_branches", owner[1]).json()
    assert [rule["name"] for rule in rules] == ["main"]


def test_push_options_reach_the_push_event(base_url, git, tmp_path, owner, unique, kiln_server):
    project = create_project(base_url, owner[1], unique("opts"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    git.run("checkout", "-q", "-b", "topic", cwd=work)
    git.commit(work, "t.txt", "t\n")
    git.run("push", "-q", "-o", "ci.skip", "-o", "merge_request.title=Add t", "origin", "topic", cwd=work)
    pushes = [e for e in events_of(kiln_server, project["id"]) if e["ref"] == "refs/heads/topic"]
    assert [e["push_options"] for e in pushes] == [["ci.skip", "merge_request.title=Add t"]]


def test_push_new_branch_fast_forward_and_events(base_url, git, tmp_path, owner, unique, kiln_server):
    project = create_project(base_url, owner[1], unique("push"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    base = git.run("rev-parse", "HEAD", cwd=work).stdout.strip()
    git.run("checkout", "-q", "-b", "feature", cwd=work)
    first = git.commit(work, "f.txt", "1\n", "feature one")
    git.run("push", "-q", "origin", "feature", cwd=work)
    second = git.commit(work, "f.txt", "2\n", "feature two")
    git.run("push", "-q", "origin", "feature", cwd=work)
    assert git.remote_refs(url)["refs/heads/feature"] == second
    pushes = [e for e in events_of(kiln_server, project["id"]) if e["ref"] == "refs/heads/feature"]
    assert [(e["before"], e["after"], e["action"], e["commit_count"]) for e in pushes] == [
        (ZERO, first, "created", 1),
        (first, second, "pushed", 1),
    ]
    assert pushes[1]["commits"][0]["title"] == "feature two"
    assert base != first


def test_non_fast_forward_push_is_refused_without_force(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("nff"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    one, two = tmp_path / "one", tmp_path / "two"
    git.run("clone", "-q", url, str(one))
    git.run("clone", "-q", url, str(two))
    for work in (one, two):
        git.run("checkout", "-q", "-b", "topic", cwd=work)
    ahead = git.commit(one, "x.txt", "one\n")
    git.run("push", "-q", "origin", "topic", cwd=one)
    diverged = git.commit(two, "x.txt", "two\n")
    refused = git.run("push", "origin", "topic", cwd=two, check=False)
    assert refused.returncode != 0
    assert "! [rejected]        topic -> topic (fetch first)" in refused.stderr
    assert git.remote_refs(url)["refs/heads/topic"] == ahead
    # An unprotected branch takes a force push.
    git.run("push", "-q", "--force", "origin", "topic", cwd=two)
    assert git.remote_refs(url)["refs/heads/topic"] == diverged


def test_developer_cannot_push_to_a_protected_branch(base_url, git, tmp_path, owner, unique, kiln_server):
    project = create_project(base_url, owner[1], unique("prot"), initialize_with_readme=True)
    dev_id, dev_token = create_user(base_url, unique("dev"))
    add_member(base_url, project["id"], dev_id, 30)
    url = with_credentials(project["http_url_to_repo"], "x", dev_token)
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    before = git.run("rev-parse", "HEAD", cwd=work).stdout.strip()
    git.commit(work, "d.txt", "dev\n")
    refused = git.run("push", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0
    assert (
        "remote: GitLab: You are not allowed to push code to protected branches on this project."
        in refused.stderr
    )
    assert "[remote rejected] main -> main (pre-receive hook declined)" in refused.stderr
    assert git.remote_refs(url)["refs/heads/main"] == before
    # Unprotected branches are theirs.
    git.run("push", "-q", "origin", "HEAD:refs/heads/dev-work", cwd=work)
    assert "refs/heads/dev-work" in git.remote_refs(url)
    assert [e["ref"] for e in events_of(kiln_server, project["id"])][-1] == "refs/heads/dev-work"


def test_maintainer_cannot_force_push_a_protected_branch(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("force"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    pushed = git.commit(work, "m.txt", "1\n")
    git.run("push", "-q", "origin", "main", cwd=work)
    git.run("reset", "-q", "--hard", "HEAD~1", cwd=work)
    git.commit(work, "m.txt", "rewritten\n")
    refused = git.run("push", "--force", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0
    assert (
        "remote: GitLab: You are not allowed to force push code to a protected branch on this project."
        in refused.stderr
    )
    assert git.remote_refs(url)["refs/heads/main"] == pushed


def test_protected_and_default_branches_are_not_deleted_by_push(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("del"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    refused = git.run("push", "origin", ":main", cwd=work, check=False)
    assert refused.returncode != 0
    assert "remote: GitLab: The default branch of a project cannot be deleted." in refused.stderr
    git.run("push", "-q", "origin", "HEAD:refs/heads/gone", cwd=work)
    git.run("push", "-q", "origin", ":gone", cwd=work)
    assert "refs/heads/gone" not in git.remote_refs(url)


def test_tag_push(base_url, git, tmp_path, owner, unique, kiln_server):
    project = create_project(base_url, owner[1], unique("tags"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    head = git.run("rev-parse", "HEAD", cwd=work).stdout.strip()
    git.run("tag", "v1", cwd=work)
    git.run("tag", "-a", "v2", "-m", "release two", cwd=work)
    annotated = git.run("rev-parse", "v2", cwd=work).stdout.strip()
    git.run("push", "-q", "origin", "v1", "v2", cwd=work)
    refs = git.remote_refs(url)
    assert (refs["refs/tags/v1"], refs["refs/tags/v2"], refs["refs/tags/v2^{}"]) == (head, annotated, head)
    tags = [e for e in events_of(kiln_server, project["id"]) if e["ref"].startswith("refs/tags/")]
    assert sorted((e["ref"], e["target_type"], e["after"]) for e in tags) == [
        ("refs/tags/v1", "tag", head),
        ("refs/tags/v2", "tag", annotated),
    ]


def test_archived_project_refuses_push(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("arch"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    assert api(base_url, "POST", f"/projects/{project['id']}/archive", owner[1]).status_code == 201
    git.commit(work, "late.txt", "late\n")
    refused = git.run("push", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0
    assert "You can't push code to an archived project." in refused.stderr
    # Reading still works.
    git.run("fetch", "-q", "origin", cwd=work)


def test_read_repository_token_clones_but_does_not_push(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("ro"), initialize_with_readme=True)
    reader = token_of(base_url, owner[0], ["read_repository"])
    url = with_credentials(project["http_url_to_repo"], "x", reader)
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    git.commit(work, "r.txt", "r\n")
    refused = git.run("push", "origin", "main", cwd=work, check=False)
    assert refused.returncode != 0
    assert "You are not allowed to upload code." in refused.stderr


def test_commit_made_through_the_api_is_cloned(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("apifile"), initialize_with_readme=True)
    r = api(
        base_url,
        "POST",
        f"/projects/{project['id']}/repository/files/docs%2Fnote.md",
        owner[1],
        json={"branch": "main", "content": "from the API\n", "commit_message": "add note"},
    )
    assert r.status_code == 201, r.text
    work = tmp_path / "work"
    git.run("clone", "-q", with_credentials(project["http_url_to_repo"], "x", owner[1]), str(work))
    assert (work / "docs" / "note.md").read_text() == "from the API\n"
    assert git.run("log", "-1", "--format=%s", cwd=work).stdout.strip() == "add note"
    assert git.run("fsck", "--strict", cwd=work).returncode == 0


def test_pushed_commit_is_seen_by_files_commits_blame_and_compare(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("seen"), initialize_with_readme=True)
    pid, token = project["id"], owner[1]
    work = tmp_path / "work"
    git.run("clone", "-q", with_credentials(project["http_url_to_repo"], "x", token), str(work))
    base = git.run("rev-parse", "HEAD", cwd=work).stdout.strip()
    pushed = git.commit(work, "app.py", "print('hi')\n", "add app")
    git.run("push", "-q", "origin", "main", cwd=work)

    f = api(base_url, "GET", f"/projects/{pid}/repository/files/app.py?ref=main", token)
    assert f.status_code == 200, f.text
    assert (base64.b64decode(f.json()["content"]), f.json()["last_commit_id"]) == (b"print('hi')\n", pushed)
    commits = api(base_url, "GET", f"/projects/{pid}/repository/commits?ref_name=main", token).json()
    assert [c["id"] for c in commits][:2] == [pushed, base]
    blame = api(base_url, "GET", f"/projects/{pid}/repository/files/app.py/blame?ref=main", token).json()
    assert [(b["commit"]["id"], b["lines"]) for b in blame] == [(pushed, ["print('hi')"])]
    compare = api(base_url, "GET", f"/projects/{pid}/repository/compare?from={base}&to=main", token).json()
    assert [c["id"] for c in compare["commits"]] == [pushed]
    assert [d["new_path"] for d in compare["diffs"]] == ["app.py"]


def test_big_push_and_clone_round_trip(base_url, git, tmp_path, owner, unique, kiln_server):
    """A pack of a few MB: git sends it chunked, in many pieces."""
    project = create_project(base_url, owner[1], unique("big"))
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("init", "-q", "-b", "main", str(work))
    for n in range(30):
        (work / f"blob{n}.bin").write_bytes(os.urandom(64 * 1024))
        git.run("add", ".", cwd=work)
        git.run("commit", "-q", "-m", f"commit {n}", cwd=work)
    git.run("push", "-q", url, "main", cwd=work)
    clone = tmp_path / "clone"
    git.run("clone", "-q", url, str(clone))
    assert git.run("rev-parse", "HEAD", cwd=clone).stdout == git.run("rev-parse", "HEAD", cwd=work).stdout
    assert git.run("fsck", "--strict", cwd=clone).returncode == 0
    on_server = repository_path(kiln_server.data_dir / "repositories", project["id"])
    assert git.run("fsck", "--strict", cwd=on_server).returncode == 0
    assert not list(on_server.glob("objects/tmp_objdir-incoming-*"))


def test_shallow_and_partial_clones(base_url, git, tmp_path, owner, unique):
    project = create_project(base_url, owner[1], unique("shallow"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    git.commit(work, "second.txt", "2\n")
    git.run("push", "-q", "origin", "main", cwd=work)
    shallow = tmp_path / "shallow"
    git.run("clone", "-q", "--depth", "1", url, str(shallow))
    assert git.run("rev-list", "--count", "HEAD", cwd=shallow).stdout.strip() == "1"
    partial = tmp_path / "partial"
    git.run("clone", "-q", "--filter=blob:none", url, str(partial))
    assert (partial / "second.txt").read_text() == "2\n"
    assert git.run("config", "remote.origin.partialclonefilter", cwd=partial).stdout.strip() == "blob:none"


# --- push size ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def limited_server(
    new_database_url: Callable[[], str | None], tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """A server with a 1 MB API body limit and a 4 MB push limit."""
    from tests.e2e.conftest import start_server

    base = tmp_path_factory.mktemp("limits")
    server = start_server(
        base / "data",
        new_database_url(),
        base,
        KILN_MAX_REQUEST_BODY_BYTES=str(1024 * 1024),
        KILN_MAX_PUSH_BYTES=str(4 * 1024 * 1024),
    )
    yield server
    server.stop()


def _push_random(git: Git, work: Path, url: str, size: int) -> subprocess.CompletedProcess[str]:
    git.run("init", "-q", "-b", "main", str(work))
    (work / "noise.bin").write_bytes(os.urandom(size))
    git.run("add", ".", cwd=work)
    git.run("commit", "-q", "-m", "noise", cwd=work)
    return git.run("push", "-q", url, "main", cwd=work, check=False)


def test_a_push_is_not_held_to_the_api_body_limit(limited_server, git, tmp_path, unique):
    owner = create_user(limited_server.url, unique("pusher"))
    project = create_project(limited_server.url, owner[1], unique("over-body-limit"))
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    pushed = _push_random(git, tmp_path / "work", url, 2 * 1024 * 1024)
    assert pushed.returncode == 0, pushed.stderr
    branch = api(limited_server.url, "GET", f"/projects/{project['id']}/repository/branches/main", owner[1])
    assert branch.status_code == 200
    # The API's own limit still holds.
    big = api(
        limited_server.url, "POST", "/projects", owner[1], json={"name": "x", "description": "d" * 2**21}
    )
    assert big.status_code == 413


def test_a_push_over_max_push_bytes_is_refused_and_changes_nothing(limited_server, git, tmp_path, unique):
    owner = create_user(limited_server.url, unique("pusher"))
    project = create_project(limited_server.url, owner[1], unique("over-push-limit"))
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    pushed = _push_random(git, tmp_path / "work", url, 6 * 1024 * 1024)
    # Refused by git's own limit, not by the API's body limit (which would be a 413).
    assert (pushed.returncode != 0, "pack exceeds maximum allowed size" in pushed.stderr) == (True, True)
    branches = api(limited_server.url, "GET", f"/projects/{project['id']}/repository/branches", owner[1])
    assert branches.json() == []
    on_server = repository_path(limited_server.data_dir / "repositories", project["id"])
    assert not list(on_server.glob("objects/tmp_objdir-incoming-*"))
    assert not list(on_server.glob("objects/pack/*.pack"))


# --- hostile pushes ----------------------------------------------------------------------------


def _written(git: Git, work: Path, kind: str, data: bytes) -> str:
    """An object written exactly as given (`git hash-object --literally`)."""
    result = subprocess.run(
        ["git", "hash-object", "-t", kind, "--literally", "-w", "--stdin"],
        cwd=work,
        env=git.env,
        input=data,
        capture_output=True,
        check=True,
    )
    return result.stdout.decode().strip()


def _planted(git: Git, work: Path, name: bytes) -> tuple[str, list[str]]:
    """A commit on top of HEAD whose root holds `name` as a directory with a `config` in it,
    and the ids of what it brings."""
    config = _written(git, work, "blob", f"[core]\n\tfsmonitor = touch /tmp/{os.urandom(4).hex()}\n".encode())
    inner = _written(git, work, "tree", b"100644 config\0" + bytes.fromhex(config))
    root = _written(git, work, "tree", b"40000 " + name + b"\0" + bytes.fromhex(inner))
    commit = git.run("commit-tree", root, "-p", "HEAD", "-m", "planted", cwd=work).stdout.strip()
    return commit, [commit, root, inner, config]


def test_a_planted_dot_git_is_refused_with_gits_message_and_leaves_nothing(
    base_url, git, tmp_path, owner, unique, kiln_server
):
    project = create_project(base_url, owner[1], unique("planted"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    before = git.remote_refs(url)
    commit, objects = _planted(git, work, b".GIT")
    refused = git.run("push", url, f"{commit}:refs/heads/main", cwd=work, check=False)
    assert refused.returncode != 0
    assert "hasDotgit: contains '.git'" in refused.stderr
    assert git.remote_refs(url) == before
    on_server = repository_path(kiln_server.data_dir / "repositories", project["id"])
    held = [
        oid for oid in objects if git.run("cat-file", "-e", oid, cwd=on_server, check=False).returncode == 0
    ]
    assert held == []
    assert not list(on_server.glob("objects/tmp_objdir-incoming-*"))
    r = api(base_url, "GET", f"/projects/{project['id']}/repository/files/.GIT%2Fconfig?ref=main", owner[1])
    assert r.status_code == 404


def test_a_path_kiln_refuses_is_declined_by_the_servers_hook(
    base_url, git, tmp_path, owner, unique, kiln_server
):
    """git's fsck lets a tab in a name through; kiln's pre-receive hook, run by the server's
    own interpreter, doesn't."""
    project = create_project(base_url, owner[1], unique("tab"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    before = git.remote_refs(url)
    commit, objects = _planted(git, work, b"tab\tname")
    refused = git.run("push", url, f"{commit}:refs/heads/main", cwd=work, check=False)
    assert refused.returncode != 0
    assert 'remote: GitLab: You cannot push "tab\\tname": invalid path.' in refused.stderr
    assert "pre-receive hook declined" in refused.stderr
    assert git.remote_refs(url) == before
    on_server = repository_path(kiln_server.data_dir / "repositories", project["id"])
    held = [
        oid for oid in objects if git.run("cat-file", "-e", oid, cwd=on_server, check=False).returncode == 0
    ]
    assert held == []


# --- instance settings and what a push starts ------------------------------------------------


@pytest.fixture
def instance(base_url: str) -> Iterator[Callable[..., None]]:
    """Changes instance settings through the application settings API; puts back what it
    changed (the server is shared by every test of the worker)."""
    before: dict[str, Any] = {}

    def change(**values: Any) -> None:
        current = api(base_url, "GET", "/application/settings").json()
        for key in values:
            before.setdefault(key, current[key])
        r = api(base_url, "PUT", "/application/settings", json=values)
        assert r.status_code == 200, r.text

    yield change
    if before:
        r = api(base_url, "PUT", "/application/settings", json=before)
        assert r.status_code == 200, r.text


def test_ssh_only_refuses_clone_and_push_over_http(base_url, git, tmp_path, owner, unique, instance):
    project = create_project(base_url, owner[1], unique("sshonly"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    git.commit(work, "b.txt", "b\n")
    instance(enabled_git_access_protocol="ssh")
    refused = git.run("clone", "-q", url, str(tmp_path / "again"), check=False)
    assert refused.returncode != 0
    assert "Git access over HTTP is not allowed" in refused.stderr
    pushed = git.run("push", "-q", "origin", "main", cwd=work, check=False)
    assert pushed.returncode != 0
    assert "Git access over HTTP is not allowed" in pushed.stderr
    instance(enabled_git_access_protocol="http")
    git.run("push", "-q", "origin", "main", cwd=work)


def test_password_for_git_disabled_needs_a_token(base_url, git, tmp_path, owner, unique, instance):
    project = create_project(base_url, owner[1], unique("nopw"), initialize_with_readme=True)
    instance(password_authentication_enabled_for_git=False)
    with_password = with_credentials(project["http_url_to_repo"], owner[2], PASSWORD)
    refused = git.run("clone", "-q", with_password, str(tmp_path / "pw"), check=False)
    assert refused.returncode != 0
    assert "HTTP Basic: Access denied." in refused.stderr
    with_token = with_credentials(project["http_url_to_repo"], owner[2], owner[1])
    git.run("clone", "-q", with_token, str(tmp_path / "token"))


def test_a_push_to_the_default_branch_makes_the_project_findable_by_language(
    base_url, git, tmp_path, owner, unique
):
    project = create_project(base_url, owner[1], unique("lang"), initialize_with_readme=True)
    url = with_credentials(project["http_url_to_repo"], "x", owner[1])
    work = tmp_path / "work"
    git.run("clone", "-q", url, str(work))
    git.commit(work, "app.py", "print('hello')\n" * 100)
    git.run("push", "-q", "origin", "main", cwd=work)
    found: list[int] = []
    deadline = time.monotonic() + 30
    while project["id"] not in found and time.monotonic() < deadline:
        r = api(base_url, "GET", "/projects?with_programming_language=Python&owned=true", owner[1])
        found = [p["id"] for p in r.json()]
        time.sleep(0.1)
    assert project["id"] in found
    # Nobody asked for the languages: the push's job computed them.
    assert api(base_url, "GET", f"/projects/{project['id']}/languages", owner[1]).json()["Python"] > 90
