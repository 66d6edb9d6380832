"""A job's artifacts: its archive downloaded as stored, streamed; one file out of it; the
archive of the latest successful job of a name on a ref; kept past expiry; deleted by
Maintainers. Anonymous callers on public projects and CI job tokens download them too."""

from __future__ import annotations

import io
import os
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln import storage
from kiln.auth.tokens import digest
from kiln.db import transaction
from kiln.models import CiJob, JobArtifact, Pipeline
from kiln.models.namespaces import DEVELOPER, REPORTER
from kiln.services import ci_jobs
from tests.api.test_ci_jobs import (
    FEATURE,
    add_archive,
    add_trace,
    job_id,
    jobs_url,
    pipeline,
    project_with_commit,
    zip_bytes,
)

FILES = {"out/report.txt": b"all good\n", "out/deep/data.bin": bytes(range(256)) * 4, "top.txt": b"top"}


def artifact_rows(db: Any, jid: int) -> int:
    return int(db.scalar(select(func.count()).select_from(JobArtifact).where(JobArtifact.job_id == jid)))


def with_archive(make: Any, db: Any, settings: Any, **fields: Any) -> tuple[Any, Any, int, bytes]:
    owner, p, sha = project_with_commit(make, **fields)
    pl = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success")
    jid = job_id(db, pl, "build")
    data = zip_bytes(FILES)
    add_archive(db, settings, p.id, jid, data)
    return owner, p, jid, data


# ----------------------------------------------------------------------------- by job


def test_the_archive_comes_back_byte_for_byte_as_an_attachment(api, make, db, settings):
    owner, p, jid, data = with_archive(make, db, settings)
    r = api(owner).get(jobs_url(p, jid, "/artifacts"))
    assert r.status_code == 200
    assert r.content == data
    assert r.headers["content-length"] == str(len(data))
    assert r.headers["content-disposition"].startswith('attachment; filename="artifacts.zip"')
    assert r.headers["x-content-type-options"] == "nosniff"


def test_a_large_archive_is_streamed_in_pieces(api, make, db, settings, monkeypatch):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "build", "status": "success"}])
    jid = job_id(db, pl, "build")
    data = os.urandom(3 * 1024 * 1024 + 17)
    add_archive(db, settings, p.id, jid, data)
    pieces: list[int] = []
    original = storage.LocalStorage.iter_bytes

    def counted(self: Any, key: str) -> Any:
        for chunk in original(self, key):
            pieces.append(len(chunk))
            yield chunk

    monkeypatch.setattr(storage.LocalStorage, "iter_bytes", counted)
    r = api(owner).get(jobs_url(p, jid, "/artifacts"))
    assert r.content == data
    assert len(pieces) == 4
    assert max(pieces) <= storage.CHUNK


def test_a_job_without_an_archive_has_nothing_to_download(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make, p, sha, [{"name": "bare", "status": "success"}, {"name": "lost", "status": "success"}]
    )
    add_archive(db, settings, p.id, job_id(db, pl, "lost"), b"PK")
    storage.ci(settings).delete(storage.artifact_key(p.id, job_id(db, pl, "lost"), "archive"))
    for name in ("bare", "lost"):
        r = api(owner).get(jobs_url(p, job_id(db, pl, name), "/artifacts"))
        assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})
    assert api(owner).get(jobs_url(p, 99999, "/artifacts")).status_code == 404


def test_one_file_comes_out_of_the_archive(api, make, db, settings):
    owner, p, jid, _ = with_archive(make, db, settings)
    r = api(owner).get(jobs_url(p, jid, "/artifacts/out/report.txt"))
    assert (r.status_code, r.content) == (200, b"all good\n")
    assert r.headers["content-type"].startswith("text/plain")
    deep = api(owner).get(jobs_url(p, jid, "/artifacts/out/deep/data.bin"))
    assert deep.content == FILES["out/deep/data.bin"]
    assert deep.headers["content-disposition"].startswith('attachment; filename="data.bin"')


def test_a_file_not_in_the_archive_a_folder_or_a_path_leaving_it_is_refused(api, make, db, settings):
    owner, p, jid, _ = with_archive(make, db, settings)
    for path, status in (("missing.txt", 404), ("out", 404), ("out/", 404), ("out/%2E%2E/top.txt", 400)):
        r = api(owner).get(jobs_url(p, jid, f"/artifacts/{path}"))
        assert r.status_code == status, path


def test_a_big_file_inside_the_archive_is_inflated_as_it_streams(api, make, db, settings, monkeypatch):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "build", "status": "success"}])
    jid = job_id(db, pl, "build")
    big = os.urandom(1024 * 1024 + 3)
    add_archive(db, settings, p.id, jid, zip_bytes({"big.bin": big}))
    monkeypatch.setattr(ci_jobs, "ZIP_CHUNK", 64 * 1024)
    r = api(owner).get(jobs_url(p, jid, "/artifacts/big.bin"))
    assert r.content == big
    assert r.headers["content-length"] == str(len(big))


# ----------------------------------------------------------------------------- by ref


def test_the_latest_successful_pipeline_on_the_ref_gives_the_archive(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    old = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success")
    add_archive(db, settings, p.id, job_id(db, old, "build"), zip_bytes({"v.txt": b"old"}))
    new = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success")
    add_archive(db, settings, p.id, job_id(db, new, "build"), zip_bytes({"v.txt": b"new"}))
    failed = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="failed")
    add_archive(db, settings, p.id, job_id(db, failed, "build"), zip_bytes({"v.txt": b"failed"}))
    other_ref = pipeline(
        make, p, sha, [{"name": "build", "status": "success"}], status="success", ref="other"
    )
    add_archive(db, settings, p.id, job_id(db, other_ref, "build"), zip_bytes({"v.txt": b"other"}))
    base = f"/projects/{p.id}/jobs/artifacts"
    r = api(owner).get(f"{base}/{FEATURE}/download", params={"job": "build"})
    assert r.status_code == 200, r.text
    assert zipfile.ZipFile(io.BytesIO(r.content)).read("v.txt") == b"new"
    raw = api(owner).get(f"{base}/{FEATURE}/raw/v.txt", params={"job": "build"})
    assert (raw.status_code, raw.content) == (200, b"new")
    assert api(owner).get(f"{base}/other/raw/v.txt", params={"job": "build"}).content == b"other"


def test_an_older_pipeline_is_searched_only_when_asked(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    old = pipeline(make, p, sha, [{"name": "docs", "status": "success"}], status="success")
    add_archive(db, settings, p.id, job_id(db, old, "docs"), zip_bytes({"index.html": b"<p>"}))
    pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success")
    url = f"/projects/{p.id}/jobs/artifacts/{FEATURE}/download"
    r = api(owner).get(url, params={"job": "docs"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    found = api(owner).get(url, params={"job": "docs", "search_recent_successful_pipelines": True})
    assert found.status_code == 200


def test_a_ref_with_slashes_is_found_encoded_or_not(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success", ref="release/v1")
    add_archive(db, settings, p.id, job_id(db, pl, "build"), zip_bytes({"a/b.txt": b"ab"}))
    base = f"/projects/{p.id}/jobs/artifacts"
    for ref in ("release/v1", "release%2Fv1"):
        assert api(owner).get(f"{base}/{ref}/download?job=build").status_code == 200, ref
        assert api(owner).get(f"{base}/{ref}/raw/a/b.txt?job=build").content == b"ab", ref


def test_the_job_name_is_required_by_ref(api, make, db, settings):
    owner, p, _, _ = with_archive(make, db, settings)
    r = api(owner).get(f"/projects/{p.id}/jobs/artifacts/{FEATURE}/download")
    assert (r.status_code, r.json()) == (400, {"error": "job is missing"})
    assert api(owner).get(f"/projects/{p.id}/jobs/artifacts/{FEATURE}/elsewhere?job=b").status_code == 404


# ----------------------------------------------------------------------------- who downloads


def test_anyone_downloads_a_public_projects_artifacts_but_no_one_a_hidden_ones(api, make, db, settings):
    _, public, jid, data = with_archive(make, db, settings, visibility="public")
    assert api().get(jobs_url(public, jid, "/artifacts")).content == data
    assert api().get(jobs_url(public, jid, "/artifacts/top.txt")).content == b"top"
    _, private, pjid, _ = with_archive(make, db, settings)
    for url in (jobs_url(private, pjid, "/artifacts"), jobs_url(private, pjid, "/artifacts/top.txt")):
        r = api().get(url)
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_running_jobs_token_downloads_its_projects_artifacts(api, make, db, settings):
    dev = make.user()
    _owner, p, jid, data = with_archive(make, db, settings, members={dev: DEVELOPER})
    token = "glcbt-test-job-token"
    pl_id = db.get(CiJob, jid).pipeline_id
    running = make.ci_job(_pipeline(db, pl_id), name="deploy")
    with transaction(db):
        running.status = "running"
        running.user_id = dev.id
        running.started_at = datetime.now(UTC) - timedelta(seconds=5)
        running.token_digest = digest(token)
    assert api(**{"JOB-TOKEN": token}).get(jobs_url(p, jid, "/artifacts")).content == data
    by_param = api().get(jobs_url(p, jid, "/artifacts/top.txt"), params={"job_token": token})
    assert by_param.content == b"top"
    by_ref = api().get(f"/projects/{p.id}/jobs/artifacts/{FEATURE}/raw/top.txt?job=build&job_token={token}")
    assert (by_ref.status_code, by_ref.content) == (200, b"top")
    bad = api(**{"JOB-TOKEN": "glcbt-wrong"}).get(jobs_url(p, jid, "/artifacts"))
    assert bad.status_code == 401


def _pipeline(db: Any, pipeline_id: int) -> Any:
    return db.get(Pipeline, pipeline_id)


# ----------------------------------------------------------------------------- keep and delete


def test_kept_artifacts_lose_their_expiry(api, make, db, settings):
    dev = make.user()
    owner, p, jid, _ = with_archive(make, db, settings, members={dev: DEVELOPER})
    soon = datetime.now(UTC) + timedelta(days=1)
    with transaction(db):
        db.get(CiJob, jid).artifacts_expire_at = soon
    assert api(owner).get(jobs_url(p, jid)).json()["artifacts_expire_at"] is not None
    r = api(dev).post(jobs_url(p, jid, "/artifacts/keep"))
    assert (r.status_code, r.json()["artifacts_expire_at"]) == (200, None)
    db.expire_all()
    assert db.scalar(select(JobArtifact.expire_at).where(JobArtifact.job_id == jid)) is None


def test_keeping_needs_artifacts_and_a_developer(api, make, db, settings):
    reporter = make.user()
    owner, p, sha = project_with_commit(make, members={reporter: REPORTER})
    pl = pipeline(
        make, p, sha, [{"name": "bare", "status": "success"}, {"name": "built", "status": "success"}]
    )
    add_archive(db, settings, p.id, job_id(db, pl, "built"), zip_bytes({"a": b"a"}))
    assert api(owner).post(jobs_url(p, job_id(db, pl, "bare"), "/artifacts/keep")).status_code == 404
    assert api(reporter).post(jobs_url(p, job_id(db, pl, "built"), "/artifacts/keep")).status_code == 403


def test_a_maintainer_deletes_a_jobs_artifacts_but_not_its_log(api, make, db, settings):
    owner, p, jid, _ = with_archive(make, db, settings)
    log = add_trace(db, settings, p.id, jid, b"log\n")
    archive = storage.artifact_key(p.id, jid, "archive")
    r = api(owner).delete(jobs_url(p, jid, "/artifacts"))
    assert r.status_code == 204
    assert not storage.ci(settings).exists(archive)
    assert storage.ci(settings).exists(log)
    assert artifact_rows(db, jid) == 0
    assert api(owner).get(jobs_url(p, jid, "/artifacts")).status_code == 404


def test_developers_may_not_delete_artifacts(api, make, db, settings):
    dev = make.user()
    owner, p, jid, data = with_archive(make, db, settings, members={dev: DEVELOPER})
    for r in (
        api(dev).delete(jobs_url(p, jid, "/artifacts")),
        api(dev).delete(f"/projects/{p.id}/artifacts"),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert artifact_rows(db, jid) == 1
    assert api(owner).get(jobs_url(p, jid, "/artifacts")).content == data


def test_deleting_a_projects_artifacts_is_accepted_and_done_in_the_background(api, make, db, settings, drain):
    owner, p, jid, _ = with_archive(make, db, settings)
    pl_id = db.get(CiJob, jid).pipeline_id
    second = make.ci_job(_pipeline(db, pl_id), name="second", status="success")
    add_archive(db, settings, p.id, second.id, zip_bytes({"b": b"b"}))
    _, other, other_jid, _ = with_archive(make, db, settings)
    r = api(owner).delete(f"/projects/{p.id}/artifacts")
    assert (r.status_code, r.json()) == (202, {"message": "202 Accepted"})
    assert artifact_rows(db, jid) == artifact_rows(db, second.id) == 0
    assert api(owner).get(jobs_url(p, jid)).json()["artifacts"] == []
    drain()
    files = storage.ci(settings)
    assert not files.exists(storage.artifact_key(p.id, jid, "archive"))
    assert not files.exists(storage.artifact_key(p.id, second.id, "archive"))
    assert files.exists(storage.artifact_key(other.id, other_jid, "archive"))


@pytest.mark.parametrize("method", ["post", "delete"])
def test_artifact_changes_take_a_signed_in_caller(api, make, db, settings, method):
    _, p, jid, _ = with_archive(make, db, settings, visibility="public")
    url = jobs_url(p, jid, "/artifacts/keep") if method == "post" else jobs_url(p, jid, "/artifacts")
    assert getattr(api(), method)(url).status_code == 401


def test_expired_artifacts_are_no_longer_offered(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "build", "status": "success"}], status="success")
    jid = job_id(db, pl, "build")
    add_archive(db, settings, p.id, jid, zip_bytes(FILES), expire_at=datetime.now(UTC) - timedelta(minutes=1))
    job = api(owner).get(jobs_url(p, jid)).json()
    assert "artifacts_file" not in job
    assert [a["file_type"] for a in job["artifacts"]] == ["archive"]
    base = f"/projects/{p.id}/jobs/artifacts/{FEATURE}"
    for r in (
        api(owner).get(jobs_url(p, jid, "/artifacts")),
        api(owner).get(jobs_url(p, jid, "/artifacts/top.txt")),
        api(owner).get(f"{base}/download?job=build"),
        api(owner).get(f"{base}/raw/top.txt?job=build"),
        api(owner).post(jobs_url(p, jid, "/artifacts/keep")),
    ):
        assert r.status_code == 404
