"""Artifacts over the runner protocol (authorize, upload, download with the tokens the payload
hands out), GET /job, and the job token (CI_JOB_TOKEN) as a credential of the job's user."""

from __future__ import annotations

import base64
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln import storage
from kiln.models import Issue
from kiln.models.ci import CiJob, JobArtifact, Pipeline
from kiln.services import instance_settings
from tests.api.test_runner_jobs import ask, one_job, pipeline_jobs, short_poll  # noqa: F401
from tests.factories.repositories import open_repository

pytestmark = pytest.mark.usefixtures("short_poll")

ZIP = b"PK\x05\x06" + b"\x00" * 18  # an empty zip archive


def running(api: Any, make: Any, project: Any = None, **job: Any) -> tuple[CiJob, str]:
    project = project or make.project(owner=make.user())
    row = one_job(make, project, **job)
    body = ask(api, make.runner()).json()
    assert body["id"] == row.id
    return row, body["token"]


def upload(api: Any, job: CiJob, token: str, data: bytes = ZIP, query: str = "", **headers: str) -> Any:
    return api().post(
        f"/jobs/{job.id}/artifacts{query}",
        files={"file": ("artifacts.zip", io.BytesIO(data), "application/zip")},
        headers={"JOB-TOKEN": token, **headers},
    )


def artifacts(db: Any) -> int:
    return db.scalar(select(func.count()).select_from(JobArtifact))


def test_an_upload_is_stored_with_its_row(api, make, db, settings):
    job, token = running(api, make)
    r = upload(api, job, token, query="?artifact_format=zip&artifact_type=archive&expire_in=1+week")
    assert r.status_code == 201
    row = db.scalar(select(JobArtifact).where(JobArtifact.job_id == job.id))
    assert (row.file_type, row.file_format, row.filename, row.size) == (
        "archive",
        "zip",
        "artifacts.zip",
        len(ZIP),
    )
    assert row.file_sha256 is not None
    assert timedelta(days=6) < row.expire_at - datetime.now(UTC) <= timedelta(days=7)
    db.expire_all()
    assert db.get(CiJob, job.id).artifacts_expire_at == row.expire_at
    stored = storage.ci(settings).open(storage.artifact_key(job.project_id, job.id, "archive")).read()
    assert stored == ZIP


def test_an_upload_without_authorize_and_without_expire_in_takes_the_default(api, make, db):
    job, token = running(api, make)
    assert upload(api, job, token).status_code == 201
    row = db.scalar(select(JobArtifact).where(JobArtifact.job_id == job.id))
    assert timedelta(days=29) < row.expire_at - datetime.now(UTC) <= timedelta(days=30)


def test_never_expiring_artifacts(api, make, db):
    job, token = running(api, make)
    assert upload(api, job, token, query="?expire_in=never").status_code == 201
    assert db.scalar(select(JobArtifact.expire_at).where(JobArtifact.job_id == job.id)) is None


def test_a_report_is_kept_beside_the_archive(api, make, db):
    job, token = running(api, make)
    upload(api, job, token)
    r = upload(api, job, token, b"<xml/>", query="?artifact_type=junit&artifact_format=gzip")
    assert r.status_code == 201
    kinds = db.scalars(select(JobArtifact.file_type).where(JobArtifact.job_id == job.id)).all()
    assert sorted(kinds) == ["archive", "junit"]


def test_authorize_answers_where_and_how_much(api, make):
    job, token = running(api, make)
    r = api().post(f"/jobs/{job.id}/artifacts/authorize", json={"token": token, "filesize": 100})
    assert r.status_code == 200
    assert r.json()["MaximumSize"] == 100 * 1024 * 1024
    assert "TempPath" in r.json()


def test_an_upload_over_the_limit_is_413_and_nothing_is_written(api, make, db, settings):
    instance_settings.update(db, {"max_artifacts_size": 1})
    job, token = running(api, make)
    r = api().post(f"/jobs/{job.id}/artifacts/authorize", json={"token": token, "filesize": 2 * 1024 * 1024})
    assert r.status_code == 413
    before = artifacts(db)
    r = upload(api, job, token, b"x" * (1024 * 1024 + 1))
    assert r.status_code == 413
    assert artifacts(db) == before
    assert not storage.ci(settings).exists(storage.artifact_key(job.project_id, job.id, "archive"))


def test_an_upload_with_another_token_is_refused(api, make, db):
    job, _token = running(api, make)
    assert upload(api, job, "glcbt-wrong").status_code == 403
    assert artifacts(db) == 0


def test_an_upload_without_a_file_or_with_a_bad_format_is_400(api, make, db):
    job, token = running(api, make)
    r = api().post(f"/jobs/{job.id}/artifacts", data={"token": token})
    assert (r.status_code, r.json()) == (400, {"error": "file is missing"})
    r = upload(api, job, token, query="?artifact_format=rar")
    assert (r.status_code, r.json()) == (400, {"error": "artifact_format does not have a valid value"})
    assert artifacts(db) == 0


def test_a_finished_job_uploads_nothing(api, make, db):
    job, token = running(api, make)
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "success"})
    r = upload(api, job, token)
    assert (r.status_code, r.json(), r.headers["Job-Status"]) == (
        403,
        {"message": "403 Forbidden - Job is not running"},
        "success",
    )
    assert artifacts(db) == 0


def test_a_later_job_downloads_an_earlier_ones_artifacts_with_its_own_token(api, make, db):
    project = make.project(owner=make.user())
    pipeline = make.pipeline(
        project,
        jobs=[
            {"name": "build", "stage": "build", "stage_idx": 0},
            {"name": "test", "stage": "test", "stage_idx": 1},
        ],
    )
    build, _test = pipeline_jobs(db, pipeline)
    first = ask(api, make.runner()).json()
    assert first["id"] == build.id
    upload(api, build, first["token"], b"PK-the-archive")
    api().put(f"/jobs/{build.id}", json={"token": first["token"], "state": "success"})
    second = ask(api, make.runner()).json()
    dep = second["dependencies"][0]
    assert dep["artifacts_file"] == {"filename": "artifacts.zip", "size": len(b"PK-the-archive")}
    r = api().get(f"/jobs/{dep['id']}/artifacts", headers={"JOB-TOKEN": dep["token"]})
    assert r.status_code == 200
    assert r.content == b"PK-the-archive"
    assert "artifacts.zip" in r.headers["Content-Disposition"]
    r = api().get(f"/jobs/{dep['id']}/artifacts?direct_download=true&token={dep['token']}")
    assert r.status_code == 200


def test_another_projects_job_token_downloads_nothing(api, make, db):
    job, token = running(api, make)
    upload(api, job, token)
    _other, other_token = running(api, make)
    assert api().get(f"/jobs/{job.id}/artifacts", headers={"JOB-TOKEN": other_token}).status_code == 403
    assert api().get(f"/jobs/{job.id}/artifacts").status_code == 401


def test_a_job_without_artifacts_is_404(api, make):
    job, token = running(api, make)
    assert api().get(f"/jobs/{job.id}/artifacts", headers={"JOB-TOKEN": token}).status_code == 404


# ---------------------------------------------------------------------------- the job token


def test_get_job_shows_the_tokens_job(api, make):
    job, token = running(api, make)
    r = api().get("/job", headers={"JOB-TOKEN": token})
    assert r.status_code == 200
    body = r.json()
    assert (body["id"], body["status"], body["name"]) == (job.id, "running", "build")
    assert body["pipeline"]["id"] == job.pipeline_id


def test_get_job_takes_the_token_as_every_api_call_does(api, make):
    """GitLab's documented forms: the JOB-TOKEN header, `job_token`, and the runner's `token`."""
    job, token = running(api, make)
    for query in ({"job_token": token}, {"token": token}):
        r = api().get("/job", params=query)
        assert (r.status_code, r.json()["id"]) == (200, job.id)
    assert api().get("/job", params={"job_token": "glcbt-nope"}).status_code == 401


def test_get_job_without_a_good_token_is_401(api, make):
    assert api().get("/job").status_code == 401
    assert api().get("/job", headers={"JOB-TOKEN": "glcbt-nope"}).status_code == 401


def test_the_job_token_reads_its_project_as_the_jobs_user(api, make):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    other = make.project(owner=owner, visibility="private")
    pipeline = make.pipeline(project, user=owner, jobs=[{"name": "build"}])
    assert pipeline_jobs(make.db, pipeline)
    token = ask(api, make.runner()).json()["token"]
    r = api().get(f"/projects/{project.id}", headers={"JOB-TOKEN": token})
    assert r.status_code == 200
    # Its own project only: the user's other projects are out of its reach.
    assert api().get(f"/projects/{other.id}", headers={"JOB-TOKEN": token}).status_code == 404


def test_a_job_token_carries_no_admin_powers(api, make):
    pipeline_owner = make.admin()
    project = make.project(owner=pipeline_owner)
    make.pipeline(project, user=pipeline_owner, jobs=[{"name": "build"}])
    token = ask(api, make.runner()).json()["token"]
    assert api().get("/application/settings", headers={"JOB-TOKEN": token}).status_code == 403


def test_a_job_token_changes_nothing_in_its_own_project(api, make, db):
    """GitLab takes a job token on few endpoints: its job's user may write to the project,
    the token may not (no issue, no settings, no pipeline deleted)."""
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    pipeline = make.pipeline(project, user=owner, jobs=[{"name": "build"}])
    token = ask(api, make.runner()).json()["token"]
    headers = {"JOB-TOKEN": token}
    assert api().post(f"/projects/{project.id}/issues", json={"title": "x"}, headers=headers).status_code in (
        401,
        403,
        404,
    )
    assert api().put(f"/projects/{project.id}", json={"description": "x"}, headers=headers).status_code in (
        401,
        403,
        404,
    )
    assert api().delete(f"/projects/{project.id}/pipelines/{pipeline.id}", headers=headers).status_code in (
        401,
        403,
        404,
    )
    db.expire_all()
    assert db.scalar(select(func.count()).select_from(Issue)) == 0
    assert db.get(Pipeline, pipeline.id) is not None
    # What it is for still works: its project's pipelines and jobs are readable.
    assert api().get(f"/projects/{project.id}/pipelines", headers=headers).status_code == 200


def test_a_finished_jobs_token_is_no_credential(api, make):
    owner = make.user()
    project = make.project(owner=owner)
    make.pipeline(project, user=owner, jobs=[{"name": "build"}])
    body = ask(api, make.runner()).json()
    api().put(f"/jobs/{body['id']}", json={"token": body["token"], "state": "success"})
    assert api().get(f"/projects/{project.id}", headers={"JOB-TOKEN": body["token"]}).status_code == 401


def test_a_job_token_clones_its_project_over_git_http_and_pushes_nothing(api, client, make, settings):
    owner = make.user()
    project = make.project_with_repository(owner=owner, path="app")
    head = str(open_repository(settings, project).head.target)
    make.pipeline(project, sha=head, user=owner, jobs=[{"name": "build"}])
    body = ask(api, make.runner()).json()
    v = {x["key"]: x["value"] for x in body["variables"]}
    assert v["CI_COMMIT_MESSAGE"].startswith("Initial commit")
    assert v["CI_COMMIT_TITLE"] == "Initial commit"
    assert v["CI_COMMIT_AUTHOR"] == f"{owner.row.name} <{owner.row.email}>"
    assert v["CI_COMMIT_TIMESTAMP"].endswith("Z")
    basic = base64.b64encode(f"gitlab-ci-token:{body['token']}".encode()).decode()
    auth = {"Authorization": f"Basic {basic}"}
    r = client.get(f"/{owner.username}/app.git/info/refs?service=git-upload-pack", headers=auth)
    assert r.status_code == 200
    r = client.get(f"/{owner.username}/app.git/info/refs?service=git-receive-pack", headers=auth)
    assert r.status_code == 403


def test_expired_artifacts_are_gone(api, make, db):
    job, token = running(api, make)
    upload(api, job, token, query="?expire_in=1+day")
    row = db.scalar(select(JobArtifact).where(JobArtifact.job_id == job.id))
    row.expire_at = datetime.now(UTC) - timedelta(seconds=1)
    db.flush()
    assert api().get(f"/jobs/{job.id}/artifacts", headers={"JOB-TOKEN": token}).status_code == 404


def test_a_jobs_commit_title_and_description_are_gitlabs(api, make):
    """The description is what follows the first line, its blank line kept and its last
    line break dropped, as GitLab's commit gives it."""
    owner = make.user()
    project = make.project_with_repository(owner=owner)
    sha = make.commit(project, {"a.txt": "a"}, message="Fix the build\n\nBecause it broke.\n")
    make.pipeline(project, sha=sha, user=owner, jobs=[{"name": "build"}])
    v = {x["key"]: x["value"] for x in ask(api, make.runner()).json()["variables"]}
    assert v["CI_COMMIT_TITLE"] == "Fix the build"
    assert v["CI_COMMIT_DESCRIPTION"] == "\nBecause it broke."
    assert v["CI_COMMIT_MESSAGE"] == "Fix the build\n\nBecause it broke.\n"
