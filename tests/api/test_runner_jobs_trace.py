"""A runner's word on its job: PUT /jobs/:id (its state) and PATCH /jobs/:id/trace (its log),
and the job queue's check of jobs whose runner went silent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from kiln import storage
from kiln.jobs import run_due
from kiln.models.ci import CANCELED, FAILED, RUNNING, SUCCESS, CiJob, Pipeline
from kiln.models.jobs import Job
from kiln.services import pipeline_processing, runner_jobs
from tests.api.test_runner_jobs import ask, one_job, short_poll  # noqa: F401

pytestmark = pytest.mark.usefixtures("short_poll")


def running(api: Any, make: Any, **job: Any) -> tuple[CiJob, str, Any]:
    """A job taken by a runner: the job, its token and the runner."""
    project = make.project(owner=make.user())
    row = one_job(make, project, **job)
    runner = make.runner()
    body = ask(api, runner).json()
    assert body["id"] == row.id
    return row, body["token"], runner


def fresh(db: Any, job: CiJob) -> CiJob:
    db.expire_all()
    return db.get(CiJob, job.id)


def patch(api: Any, job: CiJob, token: str, data: bytes, start: int, end: int | None = None) -> Any:
    end = start + len(data) if end is None else end
    return api().patch(
        f"/jobs/{job.id}/trace",
        content=data,
        headers={"JOB-TOKEN": token, "Content-Range": f"{start}-{end}", "Content-Type": "text/plain"},
    )


def log_of(settings: Any, job: CiJob) -> bytes:
    files = storage.ci(settings)
    key = storage.trace_key(job.project_id, job.id)
    return b"".join(files.iter_bytes(key)) if files.exists(key) else b""


# ---------------------------------------------------------------------------- PUT /jobs/:id


def test_success_ends_the_job_and_moves_the_pipeline(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "success", "exit_code": 0})
    assert r.status_code == 200
    assert r.headers["Job-Status"] == SUCCESS
    row = fresh(db, job)
    assert (row.status, row.exit_code, row.token_digest) == (SUCCESS, 0, None)
    assert db.get(Pipeline, job.pipeline_id).status == SUCCESS


def test_failed_records_the_reason_and_exit_code(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(
        f"/jobs/{job.id}",
        json={
            "token": token,
            "state": "failed",
            "failure_reason": "script_failure",
            "exit_code": 2,
            "output": {"checksum": "crc32:0", "bytesize": 0},
        },
    )
    assert r.status_code == 200
    row = fresh(db, job)
    assert (row.status, row.failure_reason, row.exit_code) == (FAILED, "script_failure", 2)


def test_an_unknown_failure_reason_is_an_unknown_failure(api, make, db):
    job, token, _ = running(api, make)
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "failed", "failure_reason": "cosmic_rays"})
    assert fresh(db, job).failure_reason == "unknown_failure"


def test_an_old_runners_bare_update_ends_the_job_at_once(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", data={"token": token, "state": "success", "info[name]": "old"})
    assert r.status_code == 200
    assert fresh(db, job).status == SUCCESS


def test_the_job_token_may_come_in_the_job_token_header(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"state": "success"}, headers={"JOB-TOKEN": token})
    assert r.status_code == 200


def test_running_is_a_heartbeat(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "running"})
    assert (r.status_code, r.headers["Job-Status"]) == (200, RUNNING)
    assert fresh(db, job).status == RUNNING


def test_another_jobs_token_is_refused_and_changes_nothing(api, make, db):
    project = make.project(owner=make.user())
    first, second = one_job(make, project), one_job(make, project)
    runner_a, runner_b = make.runner(), make.runner()
    token_a = ask(api, runner_a).json()["token"]
    ask(api, runner_b)
    r = api().put(f"/jobs/{second.id}", json={"token": token_a, "state": "success"})
    assert r.status_code == 403
    assert fresh(db, second).status == RUNNING
    r = api().put(f"/jobs/{first.id}", json={"token": "glcbt-made-up", "state": "success"})
    assert r.status_code == 403
    assert fresh(db, first).status == RUNNING


def test_a_runner_token_is_no_job_token(api, make, db):
    job, _token, runner = running(api, make)
    assert api().put(f"/jobs/{job.id}", json={"token": runner.token, "state": "success"}).status_code == 403
    assert fresh(db, job).status == RUNNING


def test_a_finished_job_is_not_running(api, make, db):
    job, token, _ = running(api, make)
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "success"})
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "failed"})
    assert r.status_code == 403
    assert r.json() == {"message": "403 Forbidden - Job is not running"}
    assert r.headers["Job-Status"] == SUCCESS
    assert fresh(db, job).status == SUCCESS


def test_a_canceled_jobs_runner_is_told_so(api, make, db):
    job, token, _ = running(api, make)
    pipeline_processing.cancel_job(db, fresh(db, job), actor=None)
    db.flush()
    r = api().put(
        f"/jobs/{job.id}", json={"token": token, "state": "failed", "failure_reason": "script_failure"}
    )
    assert (r.status_code, r.headers["Job-Status"]) == (200, CANCELED)
    assert fresh(db, job).status == CANCELED


def test_an_unknown_job_is_404(api):
    assert api().put("/jobs/999999", json={"token": "x", "state": "success"}).status_code == 404


def test_an_unknown_state_is_400(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "exploded"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})
    assert fresh(db, job).status == RUNNING


# ---------------------------------------------------------------------------- PATCH trace


def test_a_log_is_appended_where_it_ends(api, make, db, settings):
    job, token, _ = running(api, make)
    r = patch(api, job, token, b"hello ", 0, 5)  # GitLab's runner: the end inclusive
    assert r.status_code == 202
    assert (r.headers["Range"], r.headers["Job-Status"], r.headers["X-GitLab-Trace-Update-Interval"]) == (
        "0-6",
        RUNNING,
        "3",
    )
    r = patch(api, job, token, b"world\n", 6)  # others: start + length
    assert (r.status_code, r.headers["Range"]) == (202, "0-12")
    assert log_of(settings, job) == b"hello world\n"
    row = fresh(db, job)
    assert row.trace_size == 12
    assert row.trace_updated_at is not None


def test_an_append_at_the_wrong_offset_is_416_with_where_to_resume(api, make, db, settings):
    job, token, _ = running(api, make)
    patch(api, job, token, b"abc", 0)
    r = patch(api, job, token, b"zzz", 10)
    assert r.status_code == 416
    assert r.headers["Range"] == "0-3"
    r = patch(api, job, token, b"zzz", 0)
    assert (r.status_code, r.headers["Range"]) == (416, "0-3")
    assert log_of(settings, job) == b"abc"
    assert fresh(db, job).trace_size == 3


def test_an_empty_body_is_a_heartbeat(api, make, db, settings):
    job, token, _ = running(api, make)
    patch(api, job, token, b"abc", 0)
    r = api().patch(
        f"/jobs/{job.id}/trace", content=b"", headers={"JOB-TOKEN": token, "Content-Range": "0-0"}
    )
    assert (r.status_code, r.headers["Range"], r.headers["Job-Status"]) == (202, "0-3", RUNNING)
    assert log_of(settings, job) == b"abc"


def test_a_trace_append_with_a_bad_token_is_refused(api, make, settings):
    job, _token, _ = running(api, make)
    r = patch(api, job, "glcbt-wrong", b"evil", 0)
    assert r.status_code == 403
    assert log_of(settings, job) == b""


def test_a_canceled_job_hears_it_on_its_next_append(api, make, db):
    job, token, _ = running(api, make)
    pipeline_processing.cancel_job(db, fresh(db, job), actor=None)
    db.flush()
    r = patch(api, job, token, b"more", 0)
    assert (r.status_code, r.headers["Job-Status"]) == (202, CANCELED)


def test_a_finished_jobs_log_takes_no_more(api, make, db, settings):
    job, token, _ = running(api, make)
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "success"})
    r = patch(api, job, token, b"late", 0)
    assert (r.status_code, r.headers["Job-Status"]) == (403, SUCCESS)
    assert log_of(settings, job) == b""


def test_a_malformed_content_range_is_400(api, make, settings):
    job, token, _ = running(api, make)
    r = api().patch(
        f"/jobs/{job.id}/trace", content=b"x", headers={"JOB-TOKEN": token, "Content-Range": "abc"}
    )
    assert r.status_code == 400
    assert log_of(settings, job) == b""


def test_a_100_mb_log_streamed_in_pieces_is_kept_whole(api, make, db, settings):
    job, token, _ = running(api, make)
    piece = b"0123456789abcdef" * 65536  # 1 MiB
    size = 0
    for _ in range(100):
        r = patch(api, job, token, piece, size)
        assert r.status_code == 202
        size += len(piece)
    assert size == runner_jobs.TRACE_SIZE_LIMIT
    assert fresh(db, job).trace_size == size
    assert storage.ci(settings).size(storage.trace_key(job.project_id, job.id)) == size
    assert fresh(db, job).status == RUNNING
    # One byte more is past GitLab's limit: the log stays at it and the job fails.
    r = patch(api, job, token, b"!", size)
    assert (r.status_code, r.headers["Job-Status"]) == (403, FAILED)
    assert r.json() == {"message": "403 Forbidden - The job log size limit was reached"}
    row = fresh(db, job)
    assert (row.status, row.failure_reason, row.trace_size) == (FAILED, "trace_size_exceeded", size)


# ---------------------------------------------------------------------------- stuck jobs


def test_a_killed_runners_job_fails_once_silent_past_its_timeout(api, make, db, runtime):
    job, token, _ = running(api, make, options={"script": ["sleep 1000"], "timeout": 600})
    patch(api, job, token, b"started\n", 0)
    row = fresh(db, job)
    row.trace_updated_at = datetime.now(UTC) - timedelta(seconds=601)
    db.query(Job).filter(Job.kind == runner_jobs.CHECK_STUCK).update({"run_at": datetime.now(UTC)})
    db.commit()
    run_due(runtime.sessions, runtime.settings)
    row = fresh(db, job)
    assert (row.status, row.failure_reason) == (FAILED, "stuck_or_timeout_failure")
    assert db.get(Pipeline, job.pipeline_id).status == FAILED


def test_a_job_running_past_its_timeout_fails(api, make, db, runtime):
    job, _token, _ = running(api, make, options={"script": ["x"], "timeout": 60})
    row = fresh(db, job)
    row.started_at = (
        datetime.now(UTC) - timedelta(seconds=60) - runner_jobs.STUCK_GRACE - timedelta(seconds=1)
    )
    row.trace_updated_at = datetime.now(UTC)
    db.query(Job).filter(Job.kind == runner_jobs.CHECK_STUCK).update({"run_at": datetime.now(UTC)})
    db.commit()
    run_due(runtime.sessions, runtime.settings)
    row = fresh(db, job)
    assert (row.status, row.failure_reason) == (FAILED, "job_execution_timeout")


def test_a_job_that_still_speaks_is_looked_at_again_later(api, make, db, runtime):
    job, _token, _ = running(api, make, options={"script": ["x"], "timeout": 600})
    db.query(Job).filter(Job.kind == runner_jobs.CHECK_STUCK).update({"run_at": datetime.now(UTC)})
    db.commit()
    run_due(runtime.sessions, runtime.settings)
    assert fresh(db, job).status == RUNNING
    later = db.scalars(
        select(Job.run_at).where(Job.kind == runner_jobs.CHECK_STUCK, Job.state == "queued")
    ).all()
    assert len(later) == 1
    assert later[0] > datetime.now(UTC) + timedelta(seconds=500)


def test_the_check_leaves_a_finished_job_alone(api, make, db, runtime):
    job, token, _ = running(api, make, options={"script": ["x"], "timeout": 60})
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "success"})
    db.query(Job).filter(Job.kind == runner_jobs.CHECK_STUCK).update({"run_at": datetime.now(UTC)})
    db.commit()
    run_due(runtime.sessions, runtime.settings)
    assert fresh(db, job).status == SUCCESS


def test_a_runner_may_cancel_its_own_job(api, make, db):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "canceled"})
    assert (r.status_code, r.headers["Job-Status"]) == (200, CANCELED)
    assert fresh(db, job).status == CANCELED


def test_an_old_runners_whole_log_in_the_update_is_kept(api, make, db, settings):
    job, token, _ = running(api, make)
    r = api().put(f"/jobs/{job.id}", json={"token": token, "state": "success", "trace": "all of it\n"})
    assert r.status_code == 200
    assert log_of(settings, job) == b"all of it\n"
    assert fresh(db, job).trace_size == len(b"all of it\n")


def test_a_retried_job_runs_with_a_new_token(api, make, db):
    job, token, _ = running(api, make)
    api().put(f"/jobs/{job.id}", json={"token": token, "state": "failed", "failure_reason": "script_failure"})
    copy = pipeline_processing.retry_job(db, fresh(db, job), actor=None)
    db.flush()
    body = ask(api, make.runner()).json()
    assert body["id"] == copy.id
    assert body["token"] != token
    assert api().put(f"/jobs/{copy.id}", json={"token": token, "state": "success"}).status_code == 403
