"""python-gitlab, as published, reading and driving a project's jobs on a running `kiln serve`:
lists, one job, its log, retry, cancel, play, erase, and its artifacts by job and by ref.

The jobs are written into the server's database and storage as the pipeline and runner
code writes them (rows through the models, files under the storage keys), so the test
depends only on the Jobs API it exercises."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from gitlab.exceptions import GitlabJobPlayError, GitlabJobRetryError

from kiln import storage
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker, transaction
from kiln.models import CiJob, JobArtifact, Pipeline
from kiln.services import internal_ids
from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e

REPORT = b"tests: 12 passed\n"
LOG = b"$ make test\n12 passed\n"


def _archive() -> bytes:
    """The same bytes every time (an entry's time is part of them)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        entry = zipfile.ZipInfo("out/report.txt", date_time=(2026, 1, 1, 0, 0, 0))
        entry.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(entry, REPORT)
    return out.getvalue()


@pytest.fixture
def served(kiln_server: Any) -> Iterator[tuple[Settings, Any]]:
    """The server's settings and a session on its database."""
    settings = Settings(data_dir=kiln_server.data_dir, database_url=kiln_server.env.get("KILN_DATABASE_URL"))
    engine = make_engine(settings)
    with make_sessionmaker(engine)() as db:
        yield settings, db
    engine.dispose()


def _seed(settings: Settings, db: Any, project_id: int, user_id: int, ref: str, sha: str) -> dict[str, int]:
    """A successful pipeline on `ref` whose jobs stand as the test wants them."""
    now = datetime.now(UTC)
    jobs = {
        "build": {"status": "success", "started_at": now - timedelta(minutes=2), "finished_at": now},
        "test": {"status": "failed", "failure_reason": "script_failure", "finished_at": now},
        "deploy": {"status": "manual", "when": "manual"},
        "long": {"status": "running", "started_at": now},
    }
    with transaction(db):
        pl = Pipeline(
            iid=internal_ids.next_iid(db, "ci_pipelines", project_id),
            project_id=project_id,
            ref=ref,
            sha=sha,
            source="push",
            status="success",
            user_id=user_id,
        )
        db.add(pl)
        db.flush()
        ids: dict[str, int] = {}
        for name, fields in jobs.items():
            job = CiJob(
                pipeline_id=pl.id,
                project_id=project_id,
                name=name,
                ref=ref,
                sha=sha,
                user_id=user_id,
                **fields,
            )
            db.add(job)
            db.flush()
            ids[name] = job.id
        files = storage.ci(settings)
        data = _archive()
        key = storage.artifact_key(project_id, ids["build"], "archive")
        files.put(key, io.BytesIO(data))
        db.add(
            JobArtifact(
                job_id=ids["build"],
                project_id=project_id,
                file_type="archive",
                file_format="zip",
                filename="artifacts.zip",
                size=len(data),
                store_key=key,
            )
        )
        files.write_at(storage.trace_key(project_id, ids["build"]), 0, LOG)
        db.get(CiJob, ids["build"]).trace_size = len(LOG)
    return ids


def test_jobs_with_python_gitlab(root, base_url, unique, served):
    settings, db = served
    owner = create_user(root, unique("jobs"))
    gl = client_of(base_url, token_for(root, owner))
    project = gl.projects.create({"name": unique("ci"), "initialize_with_readme": True})
    branch = project.default_branch
    sha = project.branches.get(branch).commit["id"]
    ids = _seed(settings, db, project.id, owner.id, branch, sha)

    listed = project.jobs.list(get_all=True)
    assert [j.name for j in listed] == ["long", "deploy", "test", "build"]
    assert [j.name for j in project.jobs.list(scope=["failed", "manual"])] == ["deploy", "test"]

    build = project.jobs.get(ids["build"])
    assert (build.status, build.commit["id"], build.user["username"]) == ("success", sha, owner.username)
    assert build.artifacts_file == {"filename": "artifacts.zip", "size": len(_archive())}
    assert build.trace() == LOG
    assert build.artifacts() == _archive()
    assert build.artifact("out/report.txt") == REPORT
    assert project.artifacts.download(ref_name=branch, job="build") == _archive()
    assert project.artifacts.raw(ref_name=branch, artifact_path="out/report.txt", job="build") == REPORT

    retried = project.jobs.get(ids["test"]).retry()
    assert (retried["name"], retried["status"]) == ("test", "pending")
    with pytest.raises(GitlabJobRetryError):
        project.jobs.get(ids["long"]).retry()

    assert project.jobs.get(ids["long"]).cancel()["status"] == "canceled"

    deploy = project.jobs.get(ids["deploy"])
    deploy.play()
    assert project.jobs.get(ids["deploy"]).status == "pending"
    with pytest.raises(GitlabJobPlayError):
        build.play()

    build.erase()
    erased = project.jobs.get(ids["build"])
    assert erased.erased_at is not None
    assert erased.attributes["artifacts"] == []
    assert erased.trace() == b""
