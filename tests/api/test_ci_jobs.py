"""Jobs of a project's pipelines (GitLab's Jobs API): a project's and a pipeline's lists,
newest first, filtered by status scopes; one job with what GitLab shows beside it; its log;
who may read them."""

from __future__ import annotations

import io
import zipfile
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from kiln import storage
from kiln.db import transaction
from kiln.models import CiJob, JobArtifact
from kiln.models.namespaces import GUEST, MAINTAINER, REPORTER
from tests.statements import count

# The caller's token, read again once other users' tokens were made: not the route's cost.
AUTHENTICATION = ("personal_access_tokens",)
# A branch no rule protects (the default branch is protected as the instance protects it).
FEATURE = "feature"


def jobs_url(p: Any, job_id: int | None = None, tail: str = "") -> str:
    base = f"/projects/{p.id}/jobs"
    return base if job_id is None else f"{base}/{job_id}{tail}"


def project_with_commit(make: Any, **fields: Any) -> tuple[Any, Any, str]:
    """A project whose Maintainer is its owner, with a commit on a `feature` branch."""
    owner = make.user()
    members = {owner: MAINTAINER, **fields.pop("members", {})}
    p = make.project_with_repository(owner=owner, members=members, **fields)
    sha = make.commit(p, {"app.py": "print('hi')\n"}, branch=FEATURE, message="Add app")
    return owner, p, sha


def pipeline(make: Any, p: Any, sha: str, jobs: list[dict[str, Any]], **fields: Any) -> Any:
    """A pipeline on `feature` whose jobs keep the statuses given (a job's `user_id` is its
    own, else the pipeline's user)."""
    fields.setdefault("ref", FEATURE)
    users = [spec.get("user_id") for spec in jobs]
    specs = [{k: v for k, v in spec.items() if k != "user_id"} for spec in jobs]
    made = make.pipeline(p, sha=sha, jobs=specs, process=False, **fields)
    if any(u is not None for u in users):
        ids = make.db.scalars(select(CiJob.id).where(CiJob.pipeline_id == made.id).order_by(CiJob.id)).all()
        with transaction(make.db):
            for jid, user_id in zip(ids, users, strict=True):
                if user_id is not None:
                    make.db.get(CiJob, jid).user_id = user_id
    return made


def job_id(db: Any, pl: Any, name: str) -> int:
    return int(db.scalar(select(func.max(CiJob.id)).where(CiJob.pipeline_id == pl.id, CiJob.name == name)))


def _entry(name: str) -> zipfile.ZipInfo:
    """A compressed entry with a fixed time, so the same files make the same bytes."""
    entry = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def zip_bytes(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(_entry(name), data)
    return out.getvalue()


def add_archive(db: Any, settings: Any, project_id: int, jid: int, data: bytes, **fields: Any) -> str:
    """A job's archive stored as the runner protocol stores it."""
    key = storage.artifact_key(project_id, jid, "archive")
    storage.ci(settings).put(key, io.BytesIO(data))
    with transaction(db):
        db.add(
            JobArtifact(
                job_id=jid,
                project_id=project_id,
                file_type="archive",
                file_format="zip",
                filename="artifacts.zip",
                size=len(data),
                store_key=key,
                **fields,
            )
        )
    return key


def add_trace(db: Any, settings: Any, project_id: int, jid: int, text: bytes) -> str:
    key = storage.trace_key(project_id, jid)
    size = storage.ci(settings).write_at(key, 0, text)
    with transaction(db):
        db.get(CiJob, jid).trace_size = size
    return key


# ----------------------------------------------------------------------------- the project's list


def test_a_projects_jobs_are_listed_newest_first_with_retried_ones_and_without_bridges(api, make, db):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make,
        p,
        sha,
        [
            {"name": "old", "status": "failed", "retried": True},
            {"name": "build", "status": "success"},
            {"name": "deploy", "status": "success", "type": "bridge"},
            {"name": "test", "status": "running"},
        ],
    )
    listed = api(owner).get(jobs_url(p)).json()
    assert [j["name"] for j in listed] == ["test", "build", "old"]
    assert [j["name"] for j in api(owner).get(jobs_url(p), params={"include_retried": "false"}).json()] == [
        "test",
        "build",
    ]
    assert all(j["pipeline"]["id"] == pl.id for j in listed)


def test_scope_filters_by_one_status_an_array_or_a_hash(api, make):
    owner, p, sha = project_with_commit(make)
    pipeline(
        make,
        p,
        sha,
        [
            {"name": "a", "status": "pending"},
            {"name": "b", "status": "running"},
            {"name": "c", "status": "failed"},
            {"name": "d", "status": "manual"},
        ],
    )
    get = api(owner).get
    assert [j["name"] for j in get(jobs_url(p), params={"scope": "running"}).json()] == ["b"]
    both = get(f"{jobs_url(p)}?scope[]=pending&scope[]=failed").json()
    assert [j["name"] for j in both] == ["c", "a"]
    hashed = get(f"{jobs_url(p)}?scope[0]=manual&scope[1]=running").json()
    assert [j["name"] for j in hashed] == ["d", "b"]
    assert get(jobs_url(p), params={"scope": "skipped"}).json() == []


def test_an_unknown_scope_is_refused(api, make):
    owner, p, sha = project_with_commit(make)
    pipeline(make, p, sha, [{"name": "a", "status": "pending"}])
    for query in ("scope=bogus", "scope[]=pending&scope[]=bogus", "scope[]="):
        r = api(owner).get(f"{jobs_url(p)}?{query}")
        assert (r.status_code, r.json()) == (400, {"error": "scope does not have a valid value"}), query


def test_the_list_is_paginated(api, make):
    owner, p, sha = project_with_commit(make)
    pipeline(make, p, sha, [{"name": f"j{i}", "status": "success"} for i in range(3)])
    r = api(owner).get(jobs_url(p), params={"per_page": 2})
    assert [j["name"] for j in r.json()] == ["j2", "j1"]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    assert [j["name"] for j in api(owner).get(jobs_url(p), params={"per_page": 2, "page": 2}).json()] == [
        "j0"
    ]


def test_the_list_costs_the_same_statements_for_few_or_many_jobs(api, make, db, settings, runtime):
    owner, p, sha = project_with_commit(make)
    runner = make.runner(project=p)
    pl = pipeline(
        make, p, sha, [{"name": "one", "status": "success", "runner_id": runner.id, "user_id": owner.id}]
    )
    add_archive(db, settings, p.id, job_id(db, pl, "one"), zip_bytes({"a": b"a"}))
    few = count(runtime, lambda: api(owner).get(jobs_url(p)), leaving_out=AUTHENTICATION)
    other_sha = make.commit(p, {"b.txt": "b"}, branch=FEATURE)
    for n in range(2):
        user = make.user()
        r2 = make.runner(project=p)
        more = pipeline(
            make,
            p,
            other_sha if n else sha,
            [
                {"name": f"m{n}{i}", "status": "success", "runner_id": r2.id, "user_id": user.id}
                for i in range(3)
            ],
        )
        add_archive(db, settings, p.id, job_id(db, more, f"m{n}0"), zip_bytes({"a": b"a"}))
    many = count(runtime, lambda: api(owner).get(jobs_url(p)), leaving_out=AUTHENTICATION)
    assert len(api(owner).get(jobs_url(p)).json()) == 7
    assert few == many


# ----------------------------------------------------------------------------- a pipeline's lists


def test_a_pipelines_jobs_leave_retried_ones_out_unless_asked(api, make):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make,
        p,
        sha,
        [{"name": "t", "status": "failed", "retried": True}, {"name": "t", "status": "pending"}],
    )
    pipeline(make, p, sha, [{"name": "elsewhere", "status": "pending"}])
    url = f"/projects/{p.id}/pipelines/{pl.id}/jobs"
    assert [j["status"] for j in api(owner).get(url).json()] == ["pending"]
    assert [j["status"] for j in api(owner).get(url, params={"include_retried": True}).json()] == [
        "pending",
        "failed",
    ]
    assert [
        j["status"] for j in api(owner).get(url, params={"scope": "failed", "include_retried": True}).json()
    ] == ["failed"]
    assert api(owner).get(f"{url}?scope=nope").status_code == 400


def test_a_pipelines_bridges_show_no_downstream_pipeline(api, make):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make, p, sha, [{"name": "build", "status": "success"}, {"name": "trigger", "type": "bridge"}]
    )
    bridges = api(owner).get(f"/projects/{p.id}/pipelines/{pl.id}/bridges").json()
    assert [(b["name"], b["downstream_pipeline"]) for b in bridges] == [("trigger", None)]
    assert "runner" not in bridges[0]
    jobs = api(owner).get(f"/projects/{p.id}/pipelines/{pl.id}/jobs").json()
    assert [j["name"] for j in jobs] == ["build"]


def test_a_pipeline_of_another_project_is_not_found(api, make):
    owner, p, _sha = project_with_commit(make)
    _, other, other_sha = project_with_commit(make)
    theirs = pipeline(make, other, other_sha, [{"name": "x"}])
    for tail in ("jobs", "bridges"):
        r = api(owner).get(f"/projects/{p.id}/pipelines/{theirs.id}/{tail}")
        assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_a_pipelines_list_costs_the_same_statements_for_few_or_many_jobs(api, make, runtime):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make, p, sha, [{"name": "a", "status": "success", "user_id": owner.id, "runner_id": make.runner().id}]
    )
    url = f"/projects/{p.id}/pipelines/{pl.id}/jobs"
    few = count(runtime, lambda: api(owner).get(url), leaving_out=AUTHENTICATION)
    for i in range(4):
        job = make.ci_job(pl, name=f"b{i}", status="success", runner_id=make.runner().id)
        with transaction(make.db):
            job.user_id = make.user().id
    many = count(runtime, lambda: api(owner).get(url), leaving_out=AUTHENTICATION)
    assert few == many


# ----------------------------------------------------------------------------- one job


def test_a_job_shows_its_user_commit_pipeline_runner_artifacts_and_tags(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    runner = make.runner(
        project=p, description="builder", contacted_at=datetime.now(UTC), ip_address="10.0.0.9"
    )
    queued = datetime.now(UTC) - timedelta(seconds=30)
    pl = pipeline(
        make,
        p,
        sha,
        [
            {
                "name": "build",
                "stage": "build",
                "status": "failed",
                "failure_reason": "script_failure",
                "user_id": owner.id,
                "runner_id": runner.id,
                "tag_list": ["linux", "docker"],
                "coverage": 87.5,
                "queued_at": queued,
                "started_at": queued + timedelta(seconds=10),
                "finished_at": queued + timedelta(seconds=20),
                "duration": 10.0,
                "allow_failure": True,
            }
        ],
    )
    jid = job_id(db, pl, "build")
    add_archive(db, settings, p.id, jid, zip_bytes({"out.txt": b"x"}))
    job = api(owner).get(jobs_url(p, jid)).json()
    assert {
        k: job[k] for k in ("id", "name", "stage", "status", "ref", "tag", "coverage", "allow_failure")
    } == {
        "id": jid,
        "name": "build",
        "stage": "build",
        "status": "failed",
        "ref": FEATURE,
        "tag": False,
        "coverage": 87.5,
        "allow_failure": True,
    }
    assert job["failure_reason"] == "script_failure"
    assert (job["duration"], job["queued_duration"]) == (10.0, 10.0)
    assert job["user"]["username"] == owner.username
    assert "bio" in job["user"]
    assert job["commit"]["id"] == sha
    assert job["commit"]["title"] == "Add app"
    assert {k: job["pipeline"][k] for k in ("id", "iid", "project_id", "sha", "ref", "status", "source")} == {
        "id": pl.id,
        "iid": pl.iid,
        "project_id": p.id,
        "sha": sha,
        "ref": FEATURE,
        "status": "created",
        "source": "push",
    }
    assert job["web_url"].endswith(f"/{owner.username}/{p.path}/-/jobs/{jid}")
    assert job["project"] == {"ci_job_token_scope_enabled": False}
    size = len(zip_bytes({"out.txt": b"x"}))
    assert job["artifacts"] == [
        {"file_type": "archive", "size": size, "filename": "artifacts.zip", "file_format": "zip"}
    ]
    assert job["artifacts_file"] == {"filename": "artifacts.zip", "size": size}
    assert {
        k: job["runner"][k]
        for k in ("id", "description", "active", "paused", "is_shared", "status", "online")
    } == {
        "id": runner.id,
        "description": "builder",
        "active": True,
        "paused": False,
        "is_shared": False,
        "status": "online",
        "online": True,
    }
    assert job["runner"]["runner_type"] == "project_type"
    assert (job["runner_manager"], job["archived"], job["tag_list"]) == (None, False, ["docker", "linux"])


def test_a_running_job_has_run_for_as_long_as_since_it_started(api, make, db):
    """GitLab counts a running job's duration up to now; a finished one's is fixed."""
    owner, p, sha = project_with_commit(make)
    started = datetime.now(UTC) - timedelta(seconds=40)
    fields = {"queued_at": started - timedelta(seconds=5), "started_at": started}
    pl = pipeline(make, p, sha, [{"name": "long", "status": "running", **fields}])
    job = api(owner).get(jobs_url(p, job_id(db, pl, "long"))).json()
    assert 40 <= job["duration"] < 100
    assert job["queued_duration"] == 5.0
    listed = api(owner).get(jobs_url(p)).json()
    assert 40 <= listed[0]["duration"] < 100


def test_a_job_that_did_not_fail_shows_no_failure_reason_nor_artifacts_file(api, make, db):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "ok", "status": "success"}])
    job = api(owner).get(jobs_url(p, job_id(db, pl, "ok"))).json()
    assert "failure_reason" not in job
    assert "artifacts_file" not in job
    assert (job["artifacts"], job["runner"], job["user"], job["erased_at"]) == ([], None, None, None)


def test_a_commit_missing_from_the_repository_shows_as_null(api, make, db):
    owner, p, _ = project_with_commit(make)
    pl = pipeline(make, p, "f" * 40, [{"name": "gone", "status": "success"}])
    assert api(owner).get(jobs_url(p, job_id(db, pl, "gone"))).json()["commit"] is None


def test_an_unknown_job_a_bridge_or_another_projects_job_is_not_found(api, make, db):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(
        make, p, sha, [{"name": "trigger", "type": "bridge"}, {"name": "status", "type": "external"}]
    )
    _, other, other_sha = project_with_commit(make)
    theirs = pipeline(make, other, other_sha, [{"name": "x"}])
    for jid in (999999, job_id(db, pl, "trigger"), job_id(db, pl, "status"), job_id(db, theirs, "x")):
        r = api(owner).get(jobs_url(p, jid))
        assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    assert api(owner).get(jobs_url(p) + "/abc").status_code == 400


# ----------------------------------------------------------------------------- the log


def test_the_log_is_the_stored_text(api, make, db, settings):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "t", "status": "success"}, {"name": "quiet", "status": "pending"}])
    jid = job_id(db, pl, "t")
    add_trace(db, settings, p.id, jid, b"$ make\nok \xe2\x9c\x93\n")
    r = api(owner).get(jobs_url(p, jid, "/trace"))
    assert r.status_code == 200
    assert r.content == b"$ make\nok \xe2\x9c\x93\n"
    assert r.headers["content-type"].startswith("text/plain")
    assert r.headers["content-disposition"] == f'infile; filename="{jid}.log"'
    empty = api(owner).get(jobs_url(p, job_id(db, pl, "quiet"), "/trace"))
    assert (empty.status_code, empty.content) == (200, b"")


# ----------------------------------------------------------------------------- who reads


def test_reading_jobs_takes_a_signed_in_caller(api, make, db):
    _, p, sha = project_with_commit(make, visibility="public")
    pl = pipeline(make, p, sha, [{"name": "t", "status": "success"}])
    for url in (jobs_url(p), jobs_url(p, job_id(db, pl, "t")), jobs_url(p, job_id(db, pl, "t"), "/trace")):
        assert api().get(url).status_code == 401


def test_a_private_projects_jobs_are_its_reporters_and_its_guests_while_pipelines_are_public(api, make, db):
    guest, reporter, stranger = make.user(), make.user(), make.user()
    _owner, p, sha = project_with_commit(make, members={guest: GUEST, reporter: REPORTER})
    pl = pipeline(make, p, sha, [{"name": "t", "status": "success"}])
    jid = job_id(db, pl, "t")
    assert api(guest).get(jobs_url(p)).status_code == 200
    with transaction(db):
        p.public_jobs = False
    for url in (
        jobs_url(p),
        jobs_url(p, jid),
        jobs_url(p, jid, "/trace"),
        f"/projects/{p.id}/pipelines/{pl.id}/jobs",
    ):
        r = api(stranger).get(url)
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"}), url
        assert api(guest).get(url).status_code == 403, url
        assert api(reporter).get(url).status_code == 200, url
        assert api("root").get(url).status_code == 200, url
    assert api().get(f"/projects/{p.id}/pipelines/{pl.id}/jobs").status_code == 404


def test_a_public_projects_jobs_are_open_to_all_unless_its_pipelines_are_not(api, make, db):
    stranger = make.user()
    owner, p, sha = project_with_commit(make, visibility="public")
    pl = pipeline(make, p, sha, [{"name": "t", "status": "success"}])
    assert [j["name"] for j in api(stranger).get(jobs_url(p)).json()] == ["t"]
    assert api().get(f"/projects/{p.id}/pipelines/{pl.id}/jobs").status_code == 200
    with transaction(db):
        p.public_jobs = False
    assert api(stranger).get(jobs_url(p)).status_code == 403
    assert api().get(f"/projects/{p.id}/pipelines/{pl.id}/jobs").status_code == 403
    assert api(owner).get(jobs_url(p)).status_code == 200
    with transaction(db):
        p.public_jobs = True
        p.builds_access_level = "private"
    assert api(stranger).get(jobs_url(p)).status_code == 403
    with transaction(db):
        p.builds_access_level = "disabled"
    assert api(owner).get(jobs_url(p)).status_code == 403


def test_a_growing_log_is_answered_as_long_as_it_was_when_asked(api, make, db, settings, monkeypatch):
    owner, p, sha = project_with_commit(make)
    pl = pipeline(make, p, sha, [{"name": "t", "status": "running"}])
    jid = job_id(db, pl, "t")
    key = add_trace(db, settings, p.id, jid, b"line 1\n")
    original = storage.LocalStorage.iter_bytes

    def appended_meanwhile(self: Any, k: str) -> Any:
        self.write_at(key, 7, b"line 2\n")
        yield from original(self, k)

    monkeypatch.setattr(storage.LocalStorage, "iter_bytes", appended_meanwhile)
    r = api(owner).get(jobs_url(p, jid, "/trace"))
    assert (r.content, r.headers["content-length"]) == (b"line 1\n", "7")
