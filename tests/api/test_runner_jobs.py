"""POST /jobs/request: which runner gets which job, and the payload it runs (the runner
protocol, GitLab's lib/api/ci/runner.rb and the notes on runners in use)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln.auth.sealing import seal
from kiln.jobs import run_due
from kiln.models import Project
from kiln.models.ci import (
    FAILED,
    GROUP_TYPE,
    PENDING,
    REF_PROTECTED,
    RUNNING,
    CiJob,
    Pipeline,
    PipelineVariable,
    ProjectVariable,
    Runner,
)
from kiln.models.jobs import Job
from kiln.services import runner_jobs

pytestmark = pytest.mark.usefixtures("short_poll")


@pytest.fixture
def short_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """A job request without a job answers at once (the hold has tests of its own)."""
    monkeypatch.setenv("KILN_CI_LONG_POLL_SECONDS", "0")


def ask(api: Any, runner: Any, **body: Any) -> Any:
    return api().post("/jobs/request", json={"token": runner.token, **body})


def one_job(make: Any, project: Any, **job: Any) -> CiJob:
    """A pipeline of one job, processed so that the job is pending."""
    pipeline = make.pipeline(project, jobs=[{"name": "build", "stage": "build", **job}])
    return pipeline_jobs(make.db, pipeline)[0]


def pipeline_jobs(db: Any, pipeline: Pipeline) -> list[CiJob]:
    return list(db.scalars(select(CiJob).where(CiJob.pipeline_id == pipeline.id).order_by(CiJob.id)))


def variables_of(payload: dict[str, Any]) -> dict[str, str]:
    return {v["key"]: v["value"] for v in payload["variables"]}


# ---------------------------------------------------------------------------- authentication


def test_an_unknown_token_is_refused_and_nothing_is_written(api, make, db):
    project = make.project(owner=make.user())
    job = one_job(make, project)
    before = db.scalar(select(func.count()).select_from(Job))
    r = api().post("/jobs/request", json={"token": "glrt-not-a-token"})
    assert r.status_code == 403
    db.expire_all()
    assert db.get(CiJob, job.id).status == PENDING
    assert db.scalar(select(func.count()).select_from(Job)) == before


def test_a_request_without_any_token_is_refused(api):
    assert api().post("/jobs/request", json={}).status_code == 403


def test_an_expired_runner_token_is_refused(api, make):
    from datetime import UTC, datetime, timedelta

    runner = make.runner(token_expires_at=datetime.now(UTC) - timedelta(minutes=1))
    assert ask(api, runner).status_code == 403


def test_the_token_may_come_in_the_runner_token_header(api, make):
    project = make.project(owner=make.user())
    one_job(make, project)
    runner = make.runner()
    r = api().post("/jobs/request", json={}, headers={"RUNNER-TOKEN": runner.token})
    assert r.status_code == 201


def test_no_job_is_204_with_the_queue_version(api, make):
    runner = make.runner()
    r = ask(api, runner, info={"name": "gitlab-runner"})
    assert r.status_code == 204
    assert r.content == b""
    assert r.headers["X-GitLab-Last-Update"] == r.headers["X-Service-Last-Update"]
    assert r.headers["X-GitLab-Last-Update"]


def test_the_queue_version_changes_when_a_job_is_queued(api, make):
    runner = make.runner(tags=["gpu"])
    first = ask(api, runner).headers["X-GitLab-Last-Update"]
    one_job(make, make.project(owner=make.user()))  # untagged, but the runner... takes untagged
    make.runner(tags=["other"])
    second = api().post("/jobs/request", json={"token": make.runner(run_untagged=False).token})
    assert second.status_code == 204
    assert second.headers["X-GitLab-Last-Update"] != first


def test_a_request_records_the_runners_contact_and_what_it_says_of_itself(api, make, db):
    runner = make.runner()
    info = {
        "name": "gitlab-runner",
        "version": "17.5.0",
        "revision": "abc",
        "platform": "linux",
        "architecture": "amd64",
        "executor": "shell",
        "features": {"variables": True},
    }
    assert ask(api, runner, info=info).status_code == 204
    row = db.get(Runner, runner.id, populate_existing=True)
    assert row.contacted_at is not None
    assert (row.name, row.version, row.revision, row.platform, row.architecture, row.executor_type) == (
        "gitlab-runner",
        "17.5.0",
        "abc",
        "linux",
        "amd64",
        "shell",
    )


def test_old_runners_without_system_id_or_last_update_get_a_job(api, make):
    one_job(make, make.project(owner=make.user()))
    runner = make.runner()
    assert api().post("/jobs/request", json={"token": runner.token}).status_code == 201


def test_a_form_encoded_request_gets_a_job(api, make):
    one_job(make, make.project(owner=make.user()))
    runner = make.runner()
    r = api().post(
        "/jobs/request",
        data={"token": runner.token, "info[name]": "old-runner", "info[version]": "1.0"},
    )
    assert r.status_code == 201
    assert r.json()["job_info"]["name"] == "build"


def test_a_malformed_body_with_a_good_token_is_never_a_4xx(api, make):
    runner = make.runner()
    r = api().post(
        "/jobs/request",
        json={"token": runner.token, "info": "not a hash", "system_id": 5, "last_update": ["x"]},
    )
    assert r.status_code == 204


# ---------------------------------------------------------------------------- which runner


def test_an_instance_runner_takes_jobs_of_projects_with_shared_runners(api, make, db):
    project = make.project(owner=make.user())
    job = one_job(make, project)
    runner = make.runner()
    r = ask(api, runner)
    assert r.status_code == 201
    assert r.json()["id"] == job.id
    db.expire_all()
    taken = db.get(CiJob, job.id)
    assert (taken.status, taken.runner_id) == (RUNNING, runner.id)
    assert taken.token_digest is not None


def test_an_instance_runner_takes_nothing_where_shared_runners_are_off(api, make, db):
    project = make.project(owner=make.user())
    db.get(Project, project.id).shared_runners_enabled = False
    db.flush()
    one_job(make, project)
    assert ask(api, make.runner()).status_code == 204


def test_a_project_runner_takes_its_projects_jobs_only(api, make):
    owner = make.user()
    mine, other = make.project(owner=owner), make.project(owner=owner)
    one_job(make, other)
    runner = make.runner(project=mine)
    assert ask(api, runner).status_code == 204
    job = one_job(make, mine)
    assert ask(api, runner).json()["id"] == job.id


def test_a_locked_project_runner_still_takes_only_its_own_projects_jobs(api, make):
    owner = make.user()
    mine, other = make.project(owner=owner), make.project(owner=owner)
    one_job(make, other)
    runner = make.runner(project=mine, locked=True)
    assert ask(api, runner).status_code == 204


def test_a_group_runner_takes_jobs_of_the_group_and_its_subgroups(api, make, db):
    owner = make.user()
    top = make.group(owners=[owner])
    sub = make.group(parent=top)
    outside = make.group(owners=[owner])
    one_job(make, make.project(owner=owner, namespace=outside))
    job = one_job(make, make.project(owner=owner, namespace=sub))
    runner = make.runner(group=top)
    assert db.get(Runner, runner.id).runner_type == GROUP_TYPE
    assert ask(api, runner).json()["id"] == job.id
    assert ask(api, runner).status_code == 204


def test_a_group_runner_takes_nothing_where_group_runners_are_off(api, make, db):
    owner = make.user()
    group = make.group(owners=[owner])
    project = make.project(owner=owner, namespace=group)
    db.get(Project, project.id).group_runners_enabled = False
    db.flush()
    one_job(make, project)
    assert ask(api, make.runner(group=group)).status_code == 204


def test_projects_with_ci_disabled_or_archived_hand_out_nothing(api, make, db):
    owner = make.user()
    disabled, archived = make.project(owner=owner), make.project(owner=owner)
    db.get(Project, disabled.id).builds_access_level = "disabled"
    db.get(Project, archived.id).archived = True
    db.flush()
    one_job(make, disabled)
    one_job(make, archived)
    assert ask(api, make.runner()).status_code == 204


def test_the_oldest_pending_job_is_taken_first(api, make):
    project = make.project(owner=make.user())
    first = one_job(make, project)
    one_job(make, project)
    assert ask(api, make.runner()).json()["id"] == first.id


def test_a_tagged_job_needs_a_runner_with_all_its_tags(api, make):
    project = make.project(owner=make.user())
    job = one_job(make, project, tag_list=["docker", "linux"])
    assert ask(api, make.runner(tags=["docker"])).status_code == 204
    assert ask(api, make.runner(tags=["docker", "linux", "gpu"])).json()["id"] == job.id


def test_an_untagged_job_goes_only_to_runners_that_run_untagged(api, make):
    project = make.project(owner=make.user())
    job = one_job(make, project)
    assert ask(api, make.runner(tags=["docker"], run_untagged=False)).status_code == 204
    assert ask(api, make.runner(tags=["docker"], run_untagged=True)).json()["id"] == job.id


def test_a_runner_for_protected_refs_takes_only_protected_jobs(api, make):
    project = make.project(owner=make.user())
    plain = one_job(make, project)
    runner = make.runner(access_level=REF_PROTECTED)
    assert ask(api, runner).status_code == 204
    pipeline = make.pipeline(project, protected=True, jobs=[{"name": "deploy"}])
    protected = pipeline_jobs(make.db, pipeline)[0]
    assert ask(api, runner).json()["id"] == protected.id
    assert ask(api, make.runner()).json()["id"] == plain.id


def test_a_paused_runner_gets_nothing(api, make):
    one_job(make, make.project(owner=make.user()))
    assert ask(api, make.runner(active=False)).status_code == 204


def test_jobs_not_yet_pending_are_not_handed_out(api, make):
    project = make.project(owner=make.user())
    pipeline = make.pipeline(
        project,
        jobs=[
            {"name": "build", "stage": "build", "stage_idx": 0},
            {"name": "test", "stage": "test", "stage_idx": 1},
            {"name": "deploy", "stage": "deploy", "stage_idx": 2, "when": "manual"},
        ],
    )
    build = pipeline_jobs(make.db, pipeline)[0]
    runner = make.runner()
    assert ask(api, runner).json()["id"] == build.id
    assert ask(api, runner).status_code == 204


def test_taking_a_job_moves_its_pipeline_to_running_and_queues_its_stuck_check(api, make, db):
    project = make.project(owner=make.user())
    job = one_job(make, project)
    ask(api, make.runner())
    db.expire_all()
    assert db.get(Pipeline, job.pipeline_id).status == RUNNING
    kinds = db.scalars(select(Job.kind).where(Job.kind == runner_jobs.CHECK_STUCK)).all()
    assert kinds == [runner_jobs.CHECK_STUCK]


def test_the_runners_maximum_timeout_caps_the_jobs_timeout(api, make):
    project = make.project(owner=make.user())
    one_job(make, project, options={"script": ["true"], "timeout": 7200})
    body = ask(api, make.runner(maximum_timeout=600)).json()
    assert body["runner_info"]["timeout"] == 600
    assert body["steps"][0]["timeout"] == 600
    assert variables_of(body)["CI_JOB_TIMEOUT"] == "600"


def test_a_job_without_a_timeout_has_its_projects(api, make, db):
    project = make.project(owner=make.user())
    db.get(Project, project.id).build_timeout = 1800
    db.flush()
    one_job(make, project)
    assert ask(api, make.runner()).json()["runner_info"]["timeout"] == 1800


@pytest.mark.committing
def test_two_runners_racing_for_one_job_never_both_get_it(api, make, db, runtime):
    project = make.project(owner=make.user())
    job = one_job(make, project)
    runners = [make.runner() for _ in range(6)]
    db.commit()
    answers: list[int] = []
    barrier = threading.Barrier(len(runners))

    def race(runner: Any) -> None:
        barrier.wait()
        answers.append(ask(api, runner).status_code)

    threads = [threading.Thread(target=race, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [201] + [204] * (len(runners) - 1)
    db.expire_all()
    assert db.get(CiJob, job.id).runner_id in {r.id for r in runners}


# ---------------------------------------------------------------------------- the long poll


@pytest.mark.committing
def test_a_held_request_answers_201_as_soon_as_a_job_appears(api, make, db, monkeypatch):
    monkeypatch.setenv("KILN_CI_LONG_POLL_SECONDS", "20")
    project = make.project(owner=make.user())
    runner = make.runner()
    db.commit()
    answer: list[Any] = []
    started = time.monotonic()
    held = threading.Thread(target=lambda: answer.append(ask(api, runner)))
    held.start()
    time.sleep(0.5)
    assert not answer  # held: there is no job
    job = one_job(make, project)
    db.commit()
    held.join(10)
    assert answer
    assert answer[0].status_code == 201
    assert answer[0].json()["id"] == job.id
    assert time.monotonic() - started < 5


@pytest.mark.committing
def test_a_held_request_ends_with_204_when_the_poll_is_over(api, make, db, monkeypatch):
    monkeypatch.setenv("KILN_CI_LONG_POLL_SECONDS", "0.6")
    runner = make.runner()
    db.commit()
    started = time.monotonic()
    assert ask(api, runner).status_code == 204
    assert 0.5 <= time.monotonic() - started < 5


@pytest.mark.committing
def test_held_runners_keep_no_request_out(api, make, db, configure, monkeypatch):
    """A held job request gives its database slot back while it waits: with one slot, three
    runners waiting leave room for an ordinary request, and each still gets its answer."""
    monkeypatch.setenv("KILN_CI_LONG_POLL_SECONDS", "2")
    configure(max_db_requests=1)
    runners = [make.runner() for _ in range(3)]
    db.commit()
    answers: list[int] = []
    held = [threading.Thread(target=lambda r=r: answers.append(ask(api, r).status_code)) for r in runners]
    for thread in held:
        thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    assert api("root").get("/version").status_code == 200
    assert api("root").get("/user").status_code == 200
    assert time.monotonic() - started < 1.5
    for thread in held:
        thread.join(10)
    assert answers == [204, 204, 204]


# ---------------------------------------------------------------------------- the payload


def test_the_payload_has_every_key_runners_read(api, make, db):
    owner = make.user()
    group = make.group(owners=[owner])
    project = make.project(owner=owner, namespace=group, path="app")
    job = one_job(
        make, project, options={"script": ["make"], "before_script": ["setup"], "after_script": ["clean"]}
    )
    body = ask(api, make.runner(tags=["linux"]), info={"features": {"refspecs": True}}).json()
    assert set(body) >= {
        "id",
        "token",
        "allow_git_fetch",
        "job_info",
        "git_info",
        "runner_info",
        "variables",
        "steps",
        "image",
        "services",
        "artifacts",
        "cache",
        "credentials",
        "dependencies",
        "features",
    }
    assert body["id"] == job.id
    assert body["token"].startswith("glcbt-")
    assert body["image"] is None
    assert body["services"] == []
    assert body["credentials"] == []
    assert body["job_info"]["name"] == "build"
    assert body["job_info"]["stage"] == "build"
    assert body["job_info"]["project_id"] == project.id
    assert body["job_info"]["project_full_path"] == f"{group.full_path}/app"
    assert body["steps"] == [
        {
            "name": "script",
            "script": ["setup", "make"],
            "timeout": 3600,
            "when": "on_success",
            "allow_failure": False,
        },
        {
            "name": "after_script",
            "script": ["clean"],
            "timeout": 3600,
            "when": "always",
            "allow_failure": True,
        },
    ]
    assert body["features"]["trace_sections"] is True
    assert "script_failure" in body["features"]["failure_reasons"]
    assert all(isinstance(v["value"], str) for v in body["variables"])
    assert all(set(v) == {"key", "value", "public", "masked", "file", "raw"} for v in body["variables"])


def test_git_info_carries_the_job_token_and_the_refspecs(api, make, db):
    owner = make.user()
    project = make.project(owner=owner, path="app")
    db.get(Project, project.id).ci_default_git_depth = 5
    db.flush()
    job = one_job(make, project)
    body = ask(api, make.runner()).json()
    git = body["git_info"]
    namespace = owner.username
    assert git["repo_url"] == f"http://gitlab-ci-token:{body['token']}@kiln.test/{namespace}/app.git"
    assert git["repo_object_format"] == "sha1"
    assert (git["ref"], git["sha"], git["ref_type"], git["depth"], git["protected"]) == (
        "main",
        job.sha,
        "branch",
        5,
        False,
    )
    assert git["refspecs"] == [
        "+refs/heads/main:refs/remotes/origin/main",
        f"+{job.sha}:refs/pipelines/{job.pipeline_id}",
    ]


def test_a_tag_pipelines_refspec_fetches_the_tag(api, make):
    project = make.project(owner=make.user())
    make.pipeline(project, ref="v1.0", tag=True, jobs=[{"name": "release"}])
    git = ask(api, make.runner()).json()["git_info"]
    assert git["ref_type"] == "tag"
    assert git["refspecs"][0] == "+refs/tags/v1.0:refs/tags/v1.0"


def test_the_predefined_variables(api, make, db):
    owner = make.user()
    group = make.group(owners=[owner], path="team")
    project = make.project(owner=owner, namespace=group, path="My.App", name="My App")
    pipeline = make.pipeline(
        project, ref="feature/X-1", user=owner, jobs=[{"name": "unit test", "stage": "test"}]
    )
    job = pipeline_jobs(db, pipeline)[0]
    runner = make.runner(tags=["linux"], description="box")
    body = ask(api, runner).json()
    v = variables_of(body)
    base = "http://kiln.test"
    expected = {
        "CI": "true",
        "GITLAB_CI": "true",
        "CI_SERVER_URL": base,
        "CI_SERVER_HOST": "kiln.test",
        "CI_SERVER_PORT": "80",
        "CI_SERVER_PROTOCOL": "http",
        "CI_SERVER_NAME": "GitLab",
        "CI_API_V4_URL": f"{base}/api/v4",
        "CI_PROJECT_ID": str(project.id),
        "CI_PROJECT_NAME": "My.App",
        "CI_PROJECT_TITLE": "My App",
        "CI_PROJECT_PATH": "team/My.App",
        "CI_PROJECT_PATH_SLUG": "team-my-app",
        "CI_PROJECT_NAMESPACE": "team",
        "CI_PROJECT_ROOT_NAMESPACE": "team",
        "CI_PROJECT_URL": f"{base}/team/My.App",
        "CI_PROJECT_VISIBILITY": project.visibility,
        "CI_CONFIG_PATH": ".gitlab-ci.yml",
        "CI_COMMIT_SHA": job.sha,
        "CI_COMMIT_SHORT_SHA": job.sha[:8],
        "CI_COMMIT_REF_NAME": "feature/X-1",
        "CI_COMMIT_REF_SLUG": "feature-x-1",
        "CI_COMMIT_BRANCH": "feature/X-1",
        "CI_COMMIT_REF_PROTECTED": "false",
        "CI_PIPELINE_ID": str(pipeline.id),
        "CI_PIPELINE_IID": str(pipeline.iid),
        "CI_PIPELINE_SOURCE": "push",
        "CI_PIPELINE_URL": f"{base}/team/My.App/-/pipelines/{pipeline.id}",
        "CI_JOB_ID": str(job.id),
        "CI_JOB_NAME": "unit test",
        "CI_JOB_NAME_SLUG": "unit-test",
        "CI_JOB_STAGE": "test",
        "CI_JOB_TOKEN": body["token"],
        "CI_JOB_URL": f"{base}/team/My.App/-/jobs/{job.id}",
        "CI_JOB_TIMEOUT": "3600",
        "CI_NODE_TOTAL": "1",
        "CI_REGISTRY_USER": "gitlab-ci-token",
        "CI_REPOSITORY_URL": body["git_info"]["repo_url"],
        "CI_RUNNER_ID": str(runner.id),
        "CI_RUNNER_DESCRIPTION": "box",
        "CI_RUNNER_TAGS": '["linux"]',
        "GITLAB_USER_ID": str(owner.id),
        "GITLAB_USER_LOGIN": owner.username,
    }
    assert {k: v.get(k) for k in expected} == expected
    assert "CI_COMMIT_TAG" not in v
    assert "CI_PROJECT_DIR" not in v  # the runner's own
    token = next(x for x in body["variables"] if x["key"] == "CI_JOB_TOKEN")
    assert (token["public"], token["masked"]) == (False, True)


def test_slugs_turn_each_other_character_into_a_dash_as_gitlabs_do(api, make):
    """GitLab's slugify does not fold a run of other characters into one dash; the slugs a
    job gets match the ones its configuration's rules read."""
    project = make.project(owner=make.user())
    make.pipeline(project, ref="Feature//X__1-", jobs=[{"name": "unit :: test"}])
    v = variables_of(ask(api, make.runner()).json())
    assert (v["CI_COMMIT_REF_SLUG"], v["CI_JOB_NAME_SLUG"]) == ("feature--x--1", "unit----test")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("production", "production"),
        ("staging-", "staging"),
        ("review/fix--it", "review-fix-it-"),
        ("Production", "production-"),
        ("1st", "env-1st-"),
        ("a-very-long-environment-name", "a-very-long-envir-"),
    ],
)
def test_an_environment_slug_is_gitlabs(api, make, name, expected):
    """A slug starts with a letter and folds runs of dashes; one that is not the name, or
    is over 24 characters, is cut to 17 and given a six-character suffix."""
    project = make.project(owner=make.user())
    one_job(make, project, options={"script": ["x"], "environment": {"name": name}})
    v = variables_of(ask(api, make.runner()).json())
    made = v["CI_ENVIRONMENT_SLUG"]
    if expected.endswith("-"):
        assert made[: len(expected)] == expected
        assert len(made) == len(expected) + 6 <= 24
    else:
        assert made == expected


def test_a_parallel_job_has_its_node_index(api, make):
    project = make.project(owner=make.user())
    one_job(make, project, options={"script": ["t"], "parallel": {"number": 2, "total": 3}})
    v = variables_of(ask(api, make.runner()).json())
    assert (v["CI_NODE_INDEX"], v["CI_NODE_TOTAL"]) == ("2", "3")


def test_variables_come_in_gitlabs_order_of_precedence(api, make, db, settings):
    project = make.project(owner=make.user())
    db.add(ProjectVariable(project_id=project.id, key="LEVEL", value=seal(settings, "project")))
    db.add(ProjectVariable(project_id=project.id, key="SECRET", value=seal(settings, "s3cr3t"), masked=True))
    db.flush()
    pipeline = make.pipeline(
        project,
        jobs=[
            {
                "name": "build",
                "yaml_variables": [{"key": "LEVEL", "value": "yaml"}, {"key": "ONLY_YAML", "value": 5}],
                "options": {"script": ["x"], "job_variables": [{"key": "PLAYED", "value": "yes"}]},
            }
        ],
    )
    db.add(PipelineVariable(pipeline_id=pipeline.id, key="FROM_API", value=seal(settings, "api")))
    db.flush()
    body = ask(api, make.runner()).json()
    keys = [v["key"] for v in body["variables"]]
    levels = [v["value"] for v in body["variables"] if v["key"] == "LEVEL"]
    assert levels == ["yaml", "project"]  # the runner takes the last
    assert keys.index("CI_JOB_ID") < keys.index("ONLY_YAML") < keys.index("SECRET") < keys.index("FROM_API")
    assert keys.index("FROM_API") < keys.index("PLAYED")
    v = variables_of(body)
    assert (v["ONLY_YAML"], v["SECRET"], v["FROM_API"], v["PLAYED"]) == ("5", "s3cr3t", "api", "yes")
    secret = next(x for x in body["variables"] if x["key"] == "SECRET")
    assert secret["masked"] is True


def test_image_services_artifacts_and_cache_in_the_runners_shapes(api, make):
    project = make.project(owner=make.user())
    one_job(
        make,
        project,
        options={
            "script": ["x"],
            "image": "alpine:3",
            "services": ["postgres:16", {"name": "redis", "alias": "cache"}],
            "artifacts": {"paths": ["dist/"], "expire_in": "1 week", "reports": {"junit": ["report.xml"]}},
            "cache": {"key": "deps", "paths": ["vendor/"]},
        },
    )
    body = ask(api, make.runner()).json()
    assert body["image"] == {"name": "alpine:3"}
    assert body["services"] == [{"name": "postgres:16"}, {"name": "redis", "alias": "cache"}]
    assert body["artifacts"] == [
        {
            "name": None,
            "untracked": False,
            "paths": ["dist/"],
            "exclude": [],
            "when": "on_success",
            "artifact_type": "archive",
            "artifact_format": "zip",
            "expire_in": "1 week",
        },
        {
            "name": None,
            "untracked": False,
            "paths": ["report.xml"],
            "exclude": [],
            "when": "always",
            "artifact_type": "junit",
            "artifact_format": "gzip",
            "expire_in": "1 week",
        },
    ]
    assert body["cache"] == [
        {
            "key": "deps",
            "untracked": False,
            "policy": "pull-push",
            "paths": ["vendor/"],
            "when": "on_success",
            "fallback_keys": [],
        }
    ]


def test_dependencies_are_the_earlier_stages_jobs_with_artifacts_file_only_when_there_is_one(api, make, db):
    from kiln.models.ci import SUCCESS, JobArtifact

    project = make.project(owner=make.user())
    pipeline = make.pipeline(
        project,
        jobs=[
            {"name": "compile", "stage": "build", "stage_idx": 0},
            {"name": "docs", "stage": "build", "stage_idx": 0},
            {"name": "test", "stage": "test", "stage_idx": 1},
        ],
    )
    compile_job, docs, test = pipeline_jobs(db, pipeline)
    db.add(
        JobArtifact(
            job_id=compile_job.id,
            project_id=project.id,
            file_type="archive",
            filename="artifacts.zip",
            size=42,
            store_key="k",
        )
    )
    for j in (compile_job, docs):
        j.status = SUCCESS
    db.flush()
    from kiln.services import pipeline_processing

    pipeline_processing.process(db, pipeline.id)
    db.flush()
    body = ask(api, make.runner()).json()
    assert body["id"] == test.id
    assert body["dependencies"] == [
        {
            "id": compile_job.id,
            "name": "compile",
            "token": body["token"],
            "artifacts_file": {"filename": "artifacts.zip", "size": 42},
        },
        {"id": docs.id, "name": "docs", "token": body["token"]},
    ]


def test_dependencies_named_by_the_job_are_the_only_ones(api, make, db):
    from kiln.models.ci import SUCCESS

    project = make.project(owner=make.user())
    pipeline = make.pipeline(
        project,
        jobs=[
            {"name": "a", "stage": "build", "stage_idx": 0},
            {"name": "b", "stage": "build", "stage_idx": 0},
            {
                "name": "c",
                "stage": "test",
                "stage_idx": 1,
                "options": {"script": ["x"], "dependencies": ["b"]},
            },
        ],
    )
    a, b, _c = pipeline_jobs(db, pipeline)
    for j in (a, b):
        j.status = SUCCESS
    db.flush()
    from kiln.services import pipeline_processing

    pipeline_processing.process(db, pipeline.id)
    db.flush()
    body = ask(api, make.runner()).json()
    assert [d["name"] for d in body["dependencies"]] == ["b"]


# ---------------------------------------------------------------------------- pending too long


def test_a_job_pending_for_a_day_fails_as_stuck(make, db, runtime, settings):
    from datetime import UTC, datetime, timedelta

    from kiln import jobs
    from kiln.db import transaction

    project = make.project(owner=make.user())
    old = one_job(make, project)
    fresh = one_job(make, project)
    old.queued_at = datetime.now(UTC) - timedelta(hours=25)
    with transaction(db):
        jobs.enqueue(db, runner_jobs.DROP_STALE_PENDING, {"once": True})
    db.commit()
    run_due(runtime.sessions, runtime.settings)
    db.expire_all()
    stale = db.get(CiJob, old.id)
    assert (stale.status, stale.failure_reason) == (FAILED, "stuck_or_timeout_failure")
    assert db.get(CiJob, fresh.id).status == PENDING


def test_needs_without_artifacts_are_no_dependencies(api, make, db):
    from kiln.models.ci import SUCCESS
    from kiln.services import pipeline_processing

    project = make.project(owner=make.user())
    needs = [{"job": "a", "artifacts": False}, {"job": "b", "artifacts": True}]
    pipeline = make.pipeline(
        project,
        jobs=[
            {"name": "a", "stage": "build", "stage_idx": 0},
            {"name": "b", "stage": "build", "stage_idx": 0},
            {
                "name": "c",
                "stage": "test",
                "stage_idx": 1,
                "scheduling_type": "dag",
                "options": {"script": ["x"], "needs": needs},
            },
        ],
    )
    for j in pipeline_jobs(db, pipeline)[:2]:
        j.status = SUCCESS
    db.flush()
    pipeline_processing.process(db, pipeline.id)
    db.flush()
    assert [d["name"] for d in ask(api, make.runner()).json()["dependencies"]] == ["b"]


def test_a_payload_costs_the_same_however_many_jobs_came_before(api, make, db, runtime):
    from kiln.models.ci import SUCCESS, JobArtifact
    from kiln.services import pipeline_processing
    from tests.statements import count

    def costs(earlier: int) -> int:
        project = make.project(owner=make.user())
        specs = [{"name": f"e{i}", "stage": "build", "stage_idx": 0} for i in range(earlier)]
        pipeline = make.pipeline(project, jobs=[*specs, {"name": "last", "stage": "test", "stage_idx": 1}])
        for j in pipeline_jobs(db, pipeline)[:earlier]:
            j.status = SUCCESS
            db.add(
                JobArtifact(
                    job_id=j.id, project_id=project.id, file_type="archive", filename="a.zip", store_key="k"
                )
            )
        db.flush()
        pipeline_processing.process(db, pipeline.id)
        db.flush()
        runner = make.runner(project=project)
        return count(runtime, lambda: ask(api, runner), warm_up=0, status=201)

    costs(1)  # the first request of the process also looks for the stale jobs' sweep
    assert costs(1) == costs(8)
