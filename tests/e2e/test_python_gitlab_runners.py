"""python-gitlab, as published, managing runners on a running `kiln serve`: registration with
a project's token, verify, list, get, update, enable and disable on projects, removal."""

from __future__ import annotations

import pytest
from gitlab.exceptions import GitlabDeleteError, GitlabGetError, GitlabVerifyError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


def test_runners_end_to_end(root, base_url, unique):
    owner = create_user(root, unique("runner-owner"))
    gl = client_of(base_url, token_for(root, owner))
    first = gl.projects.create({"name": unique("ci-a")})
    second = gl.projects.create({"name": unique("ci-b")})
    registration = gl.projects.get(first.id).runners_token

    made = gl.runners.create({"token": registration, "description": "e2e", "tag_list": ["docker", "linux"]})
    assert made.token.startswith("glrt-")
    gl.runners.verify(made.token)
    with pytest.raises(GitlabVerifyError):
        gl.runners.verify("glrt-not-a-token")

    assert [r.id for r in gl.runners.list()] == [made.id]
    assert [r.id for r in gl.runners.list(type="project_type", tag_list=["docker"])] == [made.id]
    assert gl.runners.list(status="online") == []
    assert [r.id for r in gl.runners.list(scope="active")] == [made.id]
    assert made.id in [r.id for r in root.runners.all(scope="specific", get_all=True)]
    runner = gl.runners.get(made.id)
    assert (runner.description, runner.status, runner.tag_list) == (
        "e2e",
        "not_connected",
        ["docker", "linux"],
    )
    assert [p["id"] for p in runner.projects] == [first.id]

    runner.description = "renamed"
    runner.tag_list = ["gpu"]
    runner.active = False
    runner.save()
    again = gl.runners.get(made.id)
    assert (again.description, again.tag_list, again.status) == ("renamed", ["gpu"], "paused")
    assert made.id in [r.id for r in root.runners_all.list(type="project_type", get_all=True)]

    second.runners.create({"runner_id": made.id})
    assert [r.id for r in second.runners.list(type="project_type")] == [made.id]
    second.runners.delete(made.id)
    assert second.runners.list(type="project_type") == []
    with pytest.raises(GitlabDeleteError) as err:
        first.runners.delete(made.id)
    assert err.value.response_code == 403
    assert [r.id for r in first.runners.list(type="project_type")] == [made.id]

    assert runner.jobs.list() == []
    gl.runners.delete(made.id)
    with pytest.raises(GitlabGetError):
        gl.runners.get(made.id)
    with pytest.raises(GitlabVerifyError):
        gl.runners.verify(made.token)
