"""python-gitlab, as published, working pipeline schedules and their variables, trigger
tokens and the pipelines they start, and commit statuses on a running `kiln serve`."""

from __future__ import annotations

import time

import pytest
from gitlab.exceptions import GitlabCreateError, GitlabGetError, GitlabUpdateError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e

CI = "build:\n  script: echo hi\n"


def _project_with_ci(gl, name):
    project = gl.projects.create({"name": name, "initialize_with_readme": True})
    project.files.create(
        {"file_path": ".gitlab-ci.yml", "branch": "main", "content": CI, "commit_message": "ci"}
    )
    return project


def _wait_for(find, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_pipeline_schedules_and_their_variables(root, base_url, unique):
    owner = create_user(root, unique("owner"))
    gl = client_of(base_url, token_for(root, owner))
    project = _project_with_ci(gl, unique("scheduled"))

    schedule = project.pipelineschedules.create(
        {"description": "nightly", "ref": "main", "cron": "0 1 * * *", "cron_timezone": "UTC"}
    )
    assert schedule.ref == "refs/heads/main"
    assert schedule.next_run_at.endswith("T01:00:00.000Z")
    assert [s.id for s in project.pipelineschedules.list()] == [schedule.id]

    variable = schedule.variables.create({"key": "GREETING", "value": "hello"})
    assert (variable.key, variable.value) == ("GREETING", "hello")
    got = project.pipelineschedules.get(schedule.id)
    # python-gitlab's `variables` is the manager; the view's list is in the attributes.
    assert [(v["key"], v["value"]) for v in got.attributes["variables"]] == [("GREETING", "hello")]

    schedule.description = "every night"
    schedule.save()
    assert project.pipelineschedules.get(schedule.id).description == "every night"

    schedule_id = schedule.id
    # GitLab answers play with {"message": "201 Created"}, which python-gitlab takes as the
    # schedule's attributes: the schedule is read again afterwards.
    schedule.play()
    schedule = project.pipelineschedules.get(schedule_id)
    made = _wait_for(lambda: project.pipelineschedules.get(schedule_id).last_pipeline)
    pipeline = project.pipelines.get(made["id"])
    assert pipeline.source == "schedule"
    assert [p.id for p in schedule.pipelines.list()] == [made["id"]]

    with pytest.raises(GitlabCreateError) as err:
        project.pipelineschedules.create({"description": "bad", "ref": "main", "cron": "61 * * * *"})
    assert err.value.response_code == 400
    assert [s.id for s in project.pipelineschedules.list()] == [schedule.id]
    schedule.cron_timezone = "Mars/Olympus"
    with pytest.raises(GitlabUpdateError):
        schedule.save()
    assert project.pipelineschedules.get(schedule.id).cron_timezone != "Mars/Olympus"

    schedule.variables.delete("GREETING")
    assert project.pipelineschedules.get(schedule.id).attributes["variables"] == []
    project.pipelineschedules.delete(schedule.id)
    with pytest.raises(GitlabGetError):
        project.pipelineschedules.get(schedule.id)


def test_trigger_tokens_start_pipelines(root, base_url, unique):
    owner = create_user(root, unique("owner"))
    gl = client_of(base_url, token_for(root, owner))
    project = _project_with_ci(gl, unique("triggered"))

    trigger = project.triggers.create({"description": "deploy"})
    assert trigger.token.startswith("glptt-")
    assert [t.id for t in project.triggers.list()] == [trigger.id]

    pipeline = project.trigger_pipeline("main", trigger.token, variables={"DEPLOY": "yes"})
    assert (pipeline.ref, pipeline.source) == ("main", "trigger")
    assert [(v.key, v.value) for v in project.pipelines.get(pipeline.id).variables.list()] == [
        ("DEPLOY", "yes")
    ]

    trigger.delete()
    assert project.triggers.list() == []


def test_commit_statuses(root, base_url, unique):
    owner = create_user(root, unique("owner"))
    gl = client_of(base_url, token_for(root, owner))
    project = gl.projects.create({"name": unique("statused"), "initialize_with_readme": True})
    commit = project.commits.get("main")

    status = commit.statuses.create(
        {"state": "running", "name": "ci/ext", "target_url": "https://ci.example/1"}
    )
    assert (status.status, status.name) == ("running", "ci/ext")
    commit.statuses.create({"state": "success", "name": "ci/ext"})
    listed = commit.statuses.list()
    assert [(s.name, s.status) for s in listed] == [("ci/ext", "success")]
    again = project.commits.get(commit.id)
    assert again.status == "success"
    assert again.last_pipeline["id"] == listed[0].pipeline_id
