"""python-gitlab, as published, working pipelines on a running `kiln serve`; and real `git
push`es making pipelines once the server's job queue runs (skipped ones for `-o ci.skip`
and `[skip ci]`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gitlab.exceptions import GitlabCreateError, GitlabDeleteError, GitlabGetError

from tests.e2e.test_git_http import Git, with_credentials
from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e

CONFIG = """
stages: [build, test]
build:
  stage: build
  script: echo build
test:
  stage: test
  script: echo test
"""


@pytest.fixture
def git(tmp_path: Path) -> Git:
    return Git(tmp_path / "home")


def owned_project(root: Any, base_url: str, unique: Callable[[str], str]) -> tuple[Any, Any, str]:
    """A project of a new user with a CI configuration on main; the user's client and token."""
    owner = create_user(root, unique("ci"))
    token = token_for(root, owner)
    gl = client_of(base_url, token)
    project = gl.projects.create({"name": unique("pipes"), "initialize_with_readme": True})
    project.files.create(
        {"file_path": ".gitlab-ci.yml", "branch": "main", "content": CONFIG, "commit_message": "ci"}
    )
    return gl, project, token


def wait_for(find: Callable[[], Any], timeout: float = 20.0) -> Any:
    """What `find` returns once it returns something (the job queue runs in the server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("nothing appeared in time")


def test_pipelines_through_python_gitlab(root, base_url, unique):
    _gl, project, _token = owned_project(root, base_url, unique)
    # The commit of the configuration through the files API makes a push pipeline.
    pushed = wait_for(lambda: project.pipelines.list(source="push"))
    assert pushed[0].status == "pending"

    made = project.pipelines.create({"ref": "main", "variables": [{"key": "WHO", "value": "e2e"}]})
    assert (made.status, made.ref, made.source) == ("pending", "main", "api")
    assert [(v.key, v.value) for v in made.variables.list()] == [("WHO", "e2e")]

    got = project.pipelines.get(made.id)
    assert (got.id, got.sha, got.detailed_status["group"]) == (made.id, made.sha, "pending")
    assert [p.id for p in project.pipelines.list(ref="main", source="api")] == [made.id]
    assert [p.id for p in project.pipelines.list(status="success")] == []
    assert made.id in [p.id for p in project.pipelines.list(scope="pending", order_by="id", sort="desc")]

    made.cancel()
    assert project.pipelines.get(made.id).status == "canceled"
    made.retry()
    assert project.pipelines.get(made.id).status == "pending"

    before = [p.id for p in project.pipelines.list(get_all=True)]
    with pytest.raises(GitlabCreateError) as refused:
        project.pipelines.create({"ref": "no-such-branch"})
    assert refused.value.response_code == 400
    assert [p.id for p in project.pipelines.list(get_all=True)] == before

    made.delete()
    with pytest.raises(GitlabGetError):
        project.pipelines.get(made.id)


def test_only_owners_delete_pipelines(root, base_url, unique):
    _gl, project, _token = owned_project(root, base_url, unique)
    dev = create_user(root, unique("dev"))
    project.members.create({"user_id": dev.id, "access_level": 30})
    made = project.pipelines.create({"ref": "main"})
    as_dev = client_of(base_url, token_for(root, dev)).projects.get(project.id)
    with pytest.raises(GitlabDeleteError) as refused:
        as_dev.pipelines.delete(made.id)
    assert refused.value.response_code == 403
    assert project.pipelines.get(made.id).id == made.id


def test_git_pushes_make_pipelines(root, base_url, unique, git, tmp_path):
    _gl, project, token = owned_project(root, base_url, unique)
    work = tmp_path / "work"
    git.run("clone", "-q", with_credentials(project.http_url_to_repo, "x", token), str(work))

    sha = git.commit(work, "a.txt", "a\n", "change a")
    git.run("push", "-q", "origin", "main", cwd=work)
    pipeline = wait_for(lambda: project.pipelines.list(sha=sha))[0]
    assert (pipeline.source, pipeline.status, pipeline.ref) == ("push", "pending", "main")

    skipped = git.commit(work, "b.txt", "b\n", "change b")
    git.run("push", "-q", "-o", "ci.skip", "origin", "main", cwd=work)
    assert wait_for(lambda: project.pipelines.list(sha=skipped))[0].status == "skipped"

    marked = git.commit(work, "c.txt", "c\n", "change c [skip ci]")
    git.run("push", "-q", "origin", "main", cwd=work)
    assert wait_for(lambda: project.pipelines.list(sha=marked))[0].status == "skipped"

    git.run("checkout", "-q", "-b", "topic", cwd=work)
    topic = git.commit(work, "d.txt", "d\n", "on a topic")
    git.run("push", "-q", "origin", "topic", cwd=work)
    assert wait_for(lambda: project.pipelines.list(ref="topic"))[0].sha == topic
