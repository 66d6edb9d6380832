"""What users do to jobs: retry a finished one, cancel one still going, play a manual one,
erase a finished one's log and artifacts. Developers do it (on a protected branch only those
who may push or merge to it); a refused or invalid request changes nothing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from kiln import storage
from kiln.db import transaction
from kiln.models import CiJob, JobArtifact
from kiln.models.namespaces import DEVELOPER, REPORTER
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


def job_count(db: Any, project_id: int) -> int:
    return int(db.scalar(select(func.count()).select_from(CiJob).where(CiJob.project_id == project_id)))


def status_of(db: Any, jid: int) -> str:
    db.expire_all()
    return str(db.get(CiJob, jid).status)


def with_developer(make: Any, **fields: Any) -> tuple[Any, Any, Any, str]:
    dev = make.user()
    owner, p, sha = project_with_commit(make, members={dev: DEVELOPER}, **fields)
    return dev, owner, p, sha


# ----------------------------------------------------------------------------- retry


def test_retrying_a_finished_job_answers_its_new_copy(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "test", "status": "failed", "failure_reason": "script_failure"}])
    old = job_id(db, pl, "test")
    r = api(dev).post(jobs_url(p, old, "/retry"))
    assert r.status_code == 201, r.text
    new = r.json()
    assert (new["name"], new["status"], new["user"]["id"]) == ("test", "pending", dev.id)
    assert new["id"] != old
    assert "failure_reason" not in new
    db.expire_all()
    assert db.get(CiJob, old).retried is True
    assert [j["id"] for j in api(dev).get(f"/projects/{p.id}/pipelines/{pl.id}/jobs").json()] == [new["id"]]


def test_a_job_still_going_or_already_retried_is_not_retryable(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(
        make,
        p,
        sha,
        [{"name": "run", "status": "running"}, {"name": "old", "status": "failed", "retried": True}],
    )
    before = job_count(db, p.id)
    for name in ("run", "old"):
        r = api(dev).post(jobs_url(p, job_id(db, pl, name), "/retry"))
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Job is not retryable"})
    assert job_count(db, p.id) == before


def test_reporters_may_not_retry_cancel_play_or_erase(api, make, db):
    reporter = make.user()
    _, p, sha = project_with_commit(make, members={reporter: REPORTER})
    pl = pipeline(
        make,
        p,
        sha,
        [
            {"name": "done", "status": "failed"},
            {"name": "going", "status": "pending"},
            {"name": "manual", "status": "manual", "when": "manual"},
        ],
    )
    before = job_count(db, p.id)
    for name, action in (("done", "retry"), ("going", "cancel"), ("manual", "play"), ("done", "erase")):
        r = api(reporter).post(jobs_url(p, job_id(db, pl, name), f"/{action}"))
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"}), action
    assert job_count(db, p.id) == before
    assert status_of(db, job_id(db, pl, "going")) == "pending"
    assert status_of(db, job_id(db, pl, "manual")) == "manual"
    assert api().post(jobs_url(p, job_id(db, pl, "done"), "/retry")).status_code == 401


def test_a_stranger_to_a_private_project_is_told_nothing(api, make, db):
    stranger = make.user()
    _, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "done", "status": "failed"}])
    r = api(stranger).post(jobs_url(p, job_id(db, pl, "done"), "/retry"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_job_of_a_protected_branch_is_theirs_who_may_push_or_merge_to_it(api, make, db):
    dev, owner, p, _ = with_developer(make)
    main_sha = make.commit(p, {"m.txt": "m"}, branch=p.default_branch)
    pl = pipeline(
        make,
        p,
        main_sha,
        [
            {"name": "done", "status": "failed"},
            {"name": "going", "status": "pending"},
            {"name": "manual", "status": "manual", "when": "manual"},
        ],
        ref=p.default_branch,
    )
    before = job_count(db, p.id)
    for name, action in (("done", "retry"), ("going", "cancel"), ("manual", "play")):
        r = api(dev).post(jobs_url(p, job_id(db, pl, name), f"/{action}"))
        assert r.status_code == 403, action
    assert job_count(db, p.id) == before
    assert api(owner).post(jobs_url(p, job_id(db, pl, "done"), "/retry")).status_code == 201


def test_an_archived_projects_jobs_are_not_retried(api, make, db):
    _, owner, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "done", "status": "failed"}])
    with transaction(db):
        p.archived = True
    assert api(owner).post(jobs_url(p, job_id(db, pl, "done"), "/retry")).status_code == 403


# ----------------------------------------------------------------------------- cancel


def test_canceling_a_job_still_going_answers_it_canceled(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "going", "status": "running"}, {"name": "later", "stage_idx": 1}])
    r = api(dev).post(jobs_url(p, job_id(db, pl, "going"), "/cancel"))
    assert (r.status_code, r.json()["status"]) == (201, "canceled")
    assert r.json()["finished_at"] is not None


def test_canceling_a_finished_job_answers_it_unchanged(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "done", "status": "success"}])
    r = api(dev).post(jobs_url(p, job_id(db, pl, "done"), "/cancel"))
    assert (r.status_code, r.json()["status"]) == (201, "success")


def test_a_job_stuck_canceling_is_ended_by_a_maintainers_force(api, make, db):
    dev, owner, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "stuck", "status": "canceling"}])
    jid = job_id(db, pl, "stuck")
    assert api(dev).post(jobs_url(p, jid, "/cancel")).json()["status"] == "canceling"
    assert api(dev).post(jobs_url(p, jid, "/cancel"), json={"force": True}).status_code == 403
    assert status_of(db, jid) == "canceling"
    r = api(owner).post(jobs_url(p, jid, "/cancel"), json={"force": True})
    assert (r.status_code, r.json()["status"]) == (201, "canceled")


def test_bridges_are_not_canceled_through_jobs(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "trigger", "type": "bridge", "status": "pending"}])
    r = api(dev).post(jobs_url(p, job_id(db, pl, "trigger"), "/cancel"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


# ----------------------------------------------------------------------------- play


def test_playing_a_manual_job_queues_it_with_its_variables(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "deploy", "status": "manual", "when": "manual"}])
    jid = job_id(db, pl, "deploy")
    body = {"job_variables_attributes": [{"key": "TARGET", "value": "prod"}]}
    r = api(dev).post(jobs_url(p, jid, "/play"), json=body)
    assert r.status_code == 200, r.text
    assert (r.json()["id"], r.json()["status"], r.json()["user"]["id"]) == (jid, "pending", dev.id)
    db.expire_all()
    assert db.get(CiJob, jid).options["job_variables"] == [{"key": "TARGET", "value": "prod"}]


def test_playing_a_finished_manual_job_runs_a_copy(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "deploy", "status": "success", "when": "manual"}])
    jid = job_id(db, pl, "deploy")
    r = api(dev).post(jobs_url(p, jid, "/play"))
    assert r.status_code == 200
    assert r.json()["id"] != jid
    assert r.json()["status"] == "pending"


def test_a_job_that_is_no_action_or_still_going_is_unplayable(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(
        make,
        p,
        sha,
        [{"name": "build", "status": "success"}, {"name": "deploy", "status": "running", "when": "manual"}],
    )
    before = job_count(db, p.id)
    for name in ("build", "deploy"):
        r = api(dev).post(jobs_url(p, job_id(db, pl, name), "/play"))
        assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Unplayable Job"})
    assert job_count(db, p.id) == before


def test_play_variables_need_a_key_and_a_value(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "deploy", "status": "manual", "when": "manual"}])
    jid = job_id(db, pl, "deploy")
    r = api(dev).post(jobs_url(p, jid, "/play"), json={"job_variables_attributes": [{"key": "A"}]})
    assert r.status_code == 400
    assert "value" in r.json()["error"]
    assert status_of(db, jid) == "manual"


# ----------------------------------------------------------------------------- erase


def test_erasing_a_finished_job_removes_its_log_and_artifacts(api, make, db, settings):
    _dev, owner, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "done", "status": "success"}])
    jid = job_id(db, pl, "done")
    archive = add_archive(db, settings, p.id, jid, zip_bytes({"a.txt": b"a"}))
    log = add_trace(db, settings, p.id, jid, b"log\n")
    r = api(owner).post(jobs_url(p, jid, "/erase"))
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["erased_at"] is not None
    assert job["artifacts"] == []
    assert "artifacts_file" not in job
    files = storage.ci(settings)
    assert not files.exists(archive)
    assert not files.exists(log)
    assert api(owner).get(jobs_url(p, jid, "/trace")).content == b""
    db.expire_all()
    assert db.get(CiJob, jid).erased_by_id == owner.id


def test_a_developer_erases_only_their_own_jobs(api, make, db, settings):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(
        make,
        p,
        sha,
        [{"name": "mine", "status": "success", "user_id": dev.id}, {"name": "theirs", "status": "success"}],
    )
    for name in ("mine", "theirs"):
        add_trace(db, settings, p.id, job_id(db, pl, name), b"log\n")
    r = api(dev).post(jobs_url(p, job_id(db, pl, "theirs"), "/erase"))
    assert r.status_code == 403
    assert storage.ci(settings).exists(storage.trace_key(p.id, job_id(db, pl, "theirs")))
    assert api(dev).post(jobs_url(p, job_id(db, pl, "mine"), "/erase")).status_code == 201


def test_a_job_still_going_or_with_nothing_stored_is_not_erasable(api, make, db, settings):
    _, owner, p, sha = with_developer(make)
    pl = pipeline(
        make, p, sha, [{"name": "going", "status": "running"}, {"name": "bare", "status": "success"}]
    )
    log = add_trace(db, settings, p.id, job_id(db, pl, "going"), b"so far\n")
    for name in ("going", "bare"):
        r = api(owner).post(jobs_url(p, job_id(db, pl, name), "/erase"))
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Job is not erasable!"})
    assert storage.ci(settings).exists(log)
    db.expire_all()
    assert db.get(CiJob, job_id(db, pl, "going")).erased_at is None


def test_artifact_rows_go_with_the_erase(api, make, db, settings):
    _, owner, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "done", "status": "failed"}])
    jid = job_id(db, pl, "done")
    add_archive(db, settings, p.id, jid, zip_bytes({"a": b"a"}))
    api(owner).post(jobs_url(p, jid, "/erase"))
    assert db.scalar(select(func.count()).select_from(JobArtifact).where(JobArtifact.job_id == jid)) == 0


def test_jobs_on_an_unprotected_branch_are_developers(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "going", "status": "pending"}], ref=FEATURE)
    assert api(dev).post(jobs_url(p, job_id(db, pl, "going"), "/cancel")).status_code == 201


def test_playing_a_delayed_job_runs_it_now(api, make, db):
    dev, _, p, sha = with_developer(make)
    pl = pipeline(make, p, sha, [{"name": "later", "status": "scheduled", "when": "delayed"}])
    jid = job_id(db, pl, "later")
    r = api(dev).post(jobs_url(p, jid, "/play"))
    assert r.status_code == 200
    assert (r.json()["id"], r.json()["status"]) == (jid, "pending")
