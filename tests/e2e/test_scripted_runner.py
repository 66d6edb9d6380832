"""A second runner, independent of `kiln runner`: a few lines of HTTP written only against the
runner protocol's notes (protocols.md 5.1), as the older third-party runners speak it. It asks
a running `kiln serve` for a job, clones the project with the credentials the payload carries,
streams its log, uploads an artifact without the authorize step, and ends the job.

The runner and the pending job are written into the server's database as registration and
pipeline creation leave them, so that only the protocol itself is exercised here."""

from __future__ import annotations

import io
import os
import subprocess
import threading
import time
import uuid
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.auth.tokens import digest, new_secret
from kiln.db import make_engine_unpooled
from kiln.models.ci import INSTANCE_TYPE, PENDING, SUCCESS, CiJob, Pipeline, Runner, RunnerTag
from tests.e2e.conftest import ROOT_TOKEN, Server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}


def _session(server: Server) -> Session:
    url = server.env.get("KILN_DATABASE_URL") or f"sqlite:///{server.data_dir / 'kiln.db'}"
    return Session(make_engine_unpooled(url))


def _project_with_a_commit(base: str, name: str) -> tuple[dict[str, Any], str]:
    r = httpx.post(
        f"{base}/api/v4/projects", headers=ROOT, json={"name": name, "initialize_with_readme": True}
    )
    assert r.status_code == 201, r.text
    project = r.json()
    branch = project["default_branch"]
    r = httpx.get(f"{base}/api/v4/projects/{project['id']}/repository/branches/{branch}", headers=ROOT)
    assert r.status_code == 200, r.text
    return project, r.json()["commit"]["id"]


def _runner(server: Server, tag: str) -> str:
    """An instance runner that takes only jobs tagged `tag`; its token."""
    token = new_secret("glrt-")
    with _session(server) as db:
        runner = Runner(
            runner_type=INSTANCE_TYPE,
            token_digest=digest(token),
            token_prefix=token[:9],
            description="scripted",
            run_untagged=False,
        )
        db.add(runner)
        db.flush()
        db.add(RunnerTag(runner_id=runner.id, name=tag))
        db.commit()
    return token


def _pending_job(server: Server, project: dict[str, Any], sha: str, tag: str) -> int:
    """A pipeline of one pending job tagged `tag`, committed by another process than the
    server's."""
    with _session(server) as db:
        pipeline = Pipeline(
            iid=1,
            project_id=project["id"],
            ref=project["default_branch"],
            sha=sha,
            source="push",
            status=PENDING,
            config_path=".gitlab-ci.yml",
            user_id=1,
        )
        db.add(pipeline)
        db.flush()
        job = CiJob(
            pipeline_id=pipeline.id,
            project_id=project["id"],
            name="scripted",
            stage="test",
            status=PENDING,
            queued_at=datetime.now(UTC),
            ref=pipeline.ref,
            sha=sha,
            user_id=1,
            tag_list=[tag],
            options={
                "script": ["cat README.md"],
                "artifacts": [{"paths": ["out.txt"], "artifact_type": "archive"}],
            },
            yaml_variables=[{"key": "GREETING", "value": "hello"}],
        )
        db.add(job)
        db.commit()
        return job.id


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd or Path.cwd()),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_scripted_runner_gets_runs_and_finishes_a_job(kiln_server: Server, unique, tmp_path: Path) -> None:
    base = kiln_server.url
    project, sha = _project_with_a_commit(base, unique("scripted"))
    tag = f"scripted-{uuid.uuid4().hex[:8]}"
    runner_token = _runner(kiln_server, tag)
    api = httpx.Client(base_url=f"{base}/api/v4", timeout=70)

    # 1. Ask for a job, as an old runner does: no system_id, no last_update. There is none
    # yet: the request is held, and answered as soon as another process queues one.
    answers: list[httpx.Response] = []
    ask = {"token": runner_token, "info": {"name": "scripted", "version": "0.1"}}
    held = threading.Thread(target=lambda: answers.append(api.post("/jobs/request", json=ask)))
    held.start()
    time.sleep(1.0)
    assert not answers
    queued = time.monotonic()
    job_id = _pending_job(kiln_server, project, sha, tag)
    held.join(60)
    assert time.monotonic() - queued < 10
    r = answers[0]
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["id"] == job_id
    token = job["token"]
    assert job["image"] is None
    assert job["services"] == []
    variables = {v["key"]: v["value"] for v in job["variables"]}
    assert all(isinstance(v["value"], str) for v in job["variables"])
    assert variables["CI_PROJECT_PATH"] == project["path_with_namespace"]
    assert variables["CI_COMMIT_SHA"] == sha
    assert variables["CI_CONFIG_PATH"] == ".gitlab-ci.yml"
    assert variables["CI_PIPELINE_ID"] == str(job["job_info"]["pipeline_id"])
    assert variables["CI_JOB_TOKEN"] == token
    assert variables["GREETING"] == "hello"
    assert job["steps"][0]["script"] == ["cat README.md"]

    # 2. Fetch as GitLab's runner does: the refspecs, at the depth, with the payload's
    # credentials; then check out the job's commit.
    git = job["git_info"]
    work = tmp_path / "build"
    work.mkdir()
    assert _git("init", "--quiet", cwd=work).returncode == 0
    fetch = _git("fetch", "--quiet", f"--depth={git['depth']}", git["repo_url"], *git["refspecs"], cwd=work)
    assert fetch.returncode == 0, fetch.stderr
    assert _git("checkout", "--quiet", git["sha"], cwd=work).returncode == 0
    assert (
        _git("rev-parse", f"refs/pipelines/{job['job_info']['pipeline_id']}", cwd=work).stdout.strip() == sha
    )
    readme = (work / "README.md").read_text()

    # 3. Stream the log in two pieces (start + length, as third-party runners send it).
    sent = 0
    for piece in (b"$ cat README.md\n", readme.encode()):
        r = api.patch(
            f"/jobs/{job_id}/trace",
            content=piece,
            headers={"JOB-TOKEN": token, "Content-Range": f"{sent}-{sent + len(piece)}"},
        )
        assert r.status_code == 202, r.text
        sent += len(piece)
        assert r.headers["Range"] == f"0-{sent}"
        assert r.headers["Job-Status"] == "running"
    r = api.patch(
        f"/jobs/{job_id}/trace", content=b"", headers={"JOB-TOKEN": token, "Content-Range": f"{sent}-{sent}"}
    )
    assert r.status_code == 202  # a heartbeat
    assert r.headers["Range"] == f"0-{sent}"

    # 4. Upload the artifact archive straight away, without the authorize step.
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("out.txt", "built\n")
    r = api.post(
        f"/jobs/{job_id}/artifacts",
        params={"artifact_format": "zip", "artifact_type": "archive", "expire_in": "1 day"},
        files={"file": ("artifacts.zip", archive.getvalue(), "application/zip")},
        headers={"JOB-TOKEN": token},
    )
    assert r.status_code == 201, r.text
    r = api.get(f"/jobs/{job_id}/artifacts", headers={"JOB-TOKEN": token})
    assert r.status_code == 200
    assert zipfile.ZipFile(io.BytesIO(r.content)).read("out.txt") == b"built\n"
    assert api.get("/job", headers={"JOB-TOKEN": token}).json()["id"] == job_id

    # 5. End the job with only a token, a state and info, as old runners do.
    r = api.put(f"/jobs/{job_id}", json={"token": token, "state": "success", "info": {"name": "scripted"}})
    assert r.status_code == 200, r.text

    deadline = time.monotonic() + 10
    with _session(kiln_server) as db:
        while True:
            row = db.scalars(select(CiJob).where(CiJob.id == job_id)).one()
            if row.status == SUCCESS or time.monotonic() > deadline:
                break
            db.rollback()
            time.sleep(0.1)
        assert (row.status, row.trace_size) == (SUCCESS, sent)
        assert db.get(Pipeline, row.pipeline_id).status == SUCCESS
    # The job token ended with its job: no more git, no more API.
    assert _git("ls-remote", job["git_info"]["repo_url"], cwd=tmp_path).returncode != 0
    ended = api.get("/job", headers={"JOB-TOKEN": token})
    assert (ended.status_code, ended.json()) == (401, {"message": "401 Unauthorized"})
