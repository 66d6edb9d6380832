"""What users do to a pipeline: retry its failed jobs (→ pending), cancel it (→ canceled),
rename it, read its variables, delete it with its jobs, logs and artifacts; Developers retry
and cancel (on a protected branch those who may push to it), Owners delete."""

from __future__ import annotations

import io
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln import storage
from kiln.auth.sealing import seal
from kiln.db import transaction
from kiln.models import CiJob, Event, JobArtifact, Pipeline, PipelineVariable
from kiln.models.namespaces import DEVELOPER, MAINTAINER, REPORTER
from tests.test_pipeline_processing import finish


def one(project: Any, pipeline: Any, suffix: str = "") -> str:
    return f"/projects/{project.id}/pipelines/{pipeline.id}{suffix}"


def written(db: Any) -> tuple[int, ...]:
    return tuple(
        db.scalar(select(func.count()).select_from(m)) for m in (Pipeline, CiJob, PipelineVariable, Event)
    )


@pytest.fixture
def owner(make):
    return make.user()


@pytest.fixture
def project(make, owner):
    return make.project(owner=owner)


def failed_pipeline(make: Any, project: Any, ref: str = "feature") -> Any:
    p = make.pipeline(project, ref=ref, jobs=[{"name": "build"}])
    finish(make.db, p, "build", "failed")
    return p


def running_pipeline(make: Any, project: Any, ref: str = "feature") -> Any:
    p = make.pipeline(project, ref=ref, jobs=[{"name": "build"}, {"name": "test", "stage_idx": 1}])
    finish(make.db, p, "build", "running")
    return p


# ----------------------------------------------------------------------------- retry


def test_retry_runs_failed_jobs_again(api, make, owner, project, db):
    p = failed_pipeline(make, project)
    r = api(owner).post(one(project, p, "/retry"))
    assert (r.status_code, r.json()["status"], r.json()["id"]) == (201, "pending", p.id)
    db.expire_all()
    jobs = db.scalars(select(CiJob).where(CiJob.pipeline_id == p.id).order_by(CiJob.id)).all()
    assert [(j.status, j.retried) for j in jobs] == [("failed", True), ("pending", False)]


def test_retry_of_a_pipeline_without_failures_changes_nothing(api, make, owner, project, db):
    p = make.pipeline(project, jobs=[{"name": "build"}])
    before = written(db)
    r = api(owner).post(one(project, p, "/retry"))
    assert (r.status_code, r.json()["status"]) == (201, "pending")
    assert written(db) == before


# ----------------------------------------------------------------------------- cancel


def test_cancel_cancels_every_unfinished_job(api, make, owner, project, db):
    p = running_pipeline(make, project)
    r = api(owner).post(one(project, p, "/cancel"))
    assert (r.status_code, r.json()["status"]) == (200, "canceled")
    db.expire_all()
    assert {j.status for j in db.scalars(select(CiJob).where(CiJob.pipeline_id == p.id))} == {"canceled"}


def test_cancel_of_a_finished_pipeline_leaves_it(api, make, owner, project):
    p = failed_pipeline(make, project)
    assert api(owner).post(one(project, p, "/cancel")).json()["status"] == "failed"


# ----------------------------------------------------------------------------- who retries and cancels


@pytest.mark.parametrize("action", ["/retry", "/cancel"])
def test_developers_retry_and_cancel(api, make, project, action):
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    p = failed_pipeline(make, project) if action == "/retry" else running_pipeline(make, project)
    assert api(dev).post(one(project, p, action)).status_code == (201 if action == "/retry" else 200)


@pytest.mark.parametrize("action", ["/retry", "/cancel", "/metadata"])
def test_reporters_may_not_and_nothing_is_written(api, make, project, db, action):
    reporter = make.user()
    make.member(project, reporter, REPORTER)
    p = failed_pipeline(make, project)
    before = written(db)
    method = api(reporter).put if action == "/metadata" else api(reporter).post
    r = method(one(project, p, action), json={"name": "x"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert written(db) == before


@pytest.mark.parametrize("action", ["/retry", "/cancel"])
def test_a_protected_branch_takes_someone_who_may_push_to_it(api, make, owner, db, action):
    project = make.project_with_repository(owner=owner)  # main is protected
    dev, maintainer = make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    make.member(project, maintainer, MAINTAINER)
    p = (
        failed_pipeline(make, project, ref="main")
        if action == "/retry"
        else running_pipeline(make, project, "main")
    )
    before = written(db)
    assert api(dev).post(one(project, p, action)).status_code == 403
    assert written(db) == before
    assert api(maintainer).post(one(project, p, action)).status_code in (200, 201)


def test_outsiders_see_no_pipeline(api, make, project):
    p = failed_pipeline(make, project)
    for action in ("/retry", "/cancel"):
        r = api(make.user()).post(one(project, p, action))
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api().post(one(project, p, "/retry")).status_code == 401


def test_an_unknown_pipeline_is_404(api, owner, project):
    r = api(owner).post(f"/projects/{project.id}/pipelines/999999/retry")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


# ----------------------------------------------------------------------------- metadata


def test_metadata_renames_the_pipeline(api, make, owner, project):
    p = make.pipeline(project)
    r = api(owner).put(one(project, p, "/metadata"), json={"name": "Nightly"})
    assert (r.status_code, r.json()["name"]) == (200, "Nightly")
    assert api(owner).get(one(project, p)).json()["name"] == "Nightly"


def test_metadata_needs_a_name(api, make, owner, project):
    p = make.pipeline(project)
    r = api(owner).put(one(project, p, "/metadata"), json={})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})


# ----------------------------------------------------------------------------- variables


def with_variable(make: Any, project: Any, user: Any = None) -> Any:
    p = make.pipeline(project, user=user)
    with transaction(make.db):
        make.db.add(PipelineVariable(pipeline_id=p.id, key="TOKEN", value=seal(make.settings, "s3cret")))
    return p


def test_variables_are_shown_to_developers(api, make, project):
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    p = with_variable(make, project)
    assert api(dev).get(one(project, p, "/variables")).json() == [
        {"variable_type": "env_var", "key": "TOKEN", "value": "s3cret", "raw": False}
    ]


def test_variables_are_kept_from_reporters_but_not_from_the_user_who_ran_it(api, make, project):
    reporter, runner_of_it = make.user(), make.user()
    make.member(project, reporter, REPORTER)
    make.member(project, runner_of_it, REPORTER)
    p = with_variable(make, project, user=runner_of_it)
    assert api(reporter).get(one(project, p, "/variables")).status_code == 403
    assert api(runner_of_it).get(one(project, p, "/variables")).status_code == 200


# ----------------------------------------------------------------------------- delete


def test_owners_delete_a_pipeline_with_its_jobs_logs_and_artifacts(api, make, owner, project, db, settings):
    p = make.pipeline(project, jobs=[{"name": "build"}])
    job = db.scalars(select(CiJob).where(CiJob.pipeline_id == p.id)).one()
    files = storage.ci(settings)
    files.put(storage.trace_key(project.id, job.id), io.BytesIO(b"log"))
    key = storage.artifact_key(project.id, job.id, "archive")
    files.put(key, io.BytesIO(b"zip"))
    with transaction(db):
        db.add(
            JobArtifact(
                job_id=job.id, project_id=project.id, file_type="archive", filename="a.zip", store_key=key
            )
        )
        db.add(PipelineVariable(pipeline_id=p.id, key="A", value=seal(settings, "x")))
    kept = make.pipeline(project, jobs=[{"name": "other"}])
    pipeline_id, job_id, path = p.id, job.id, one(project, p)
    r = api(owner).delete(path)
    assert r.status_code == 204
    db.expire_all()
    assert db.get(Pipeline, pipeline_id) is None
    assert db.scalars(select(CiJob).where(CiJob.pipeline_id == pipeline_id)).all() == []
    assert db.scalars(select(JobArtifact).where(JobArtifact.job_id == job_id)).all() == []
    assert db.scalars(select(PipelineVariable).where(PipelineVariable.pipeline_id == pipeline_id)).all() == []
    assert not files.exists(storage.trace_key(project.id, job_id))
    assert not files.exists(key)
    assert api(owner).get(path).status_code == 404
    assert api(owner).get(one(project, kept)).status_code == 200


@pytest.mark.parametrize("level", [DEVELOPER, MAINTAINER])
def test_only_owners_delete(api, make, project, db, level, settings):
    member = make.user()
    make.member(project, member, level)
    p = make.pipeline(project, jobs=[{"name": "build"}])
    job = db.scalars(select(CiJob).where(CiJob.pipeline_id == p.id)).one()
    storage.ci(settings).put(storage.trace_key(project.id, job.id), io.BytesIO(b"log"))
    before = written(db)
    r = api(member).delete(one(project, p))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert written(db) == before
    assert storage.ci(settings).exists(storage.trace_key(project.id, job.id))


def test_administrators_delete(api, make, project):
    p = make.pipeline(project)
    assert api("root").delete(one(project, p)).status_code == 204
