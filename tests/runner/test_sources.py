"""Sources: the job's commit fetched with the payload's git_info."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kiln.runner.job import clean_url, duration_text, expand, project_folder
from tests.runner.conftest import run_jobs


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def repository(tmp_path: Path) -> tuple[Path, str, str]:
    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    (origin / "file.txt").write_text("first\n")
    git(origin, "add", ".")
    git(origin, "commit", "-q", "-m", "first")
    first = git(origin, "rev-parse", "HEAD")
    (origin / "file.txt").write_text("second\n")
    git(origin, "commit", "-q", "-am", "second")
    second = git(origin, "rev-parse", "HEAD")
    return origin, first, second


def test_the_job_commit_is_checked_out(server, config, tmp_path):
    origin, first, _second = repository(tmp_path)
    job = server.add_job(
        ["cat file.txt", "git rev-parse HEAD"],
        git_info={
            "repo_url": f"file://{origin}",
            "ref": "main",
            "sha": first,
            "ref_type": "branch",
            "refspecs": ["+refs/heads/main:refs/remotes/origin/main"],
            "depth": 0,
        },
    )
    run_jobs(config)
    server.wait(job)
    assert job.state == "success", job.text()
    assert "first\n" in job.text()
    assert f"{first}\n" in job.text()
    assert f"Checking out {first[:8]}" in job.text()


def test_a_shallow_fetch_uses_the_depth(server, config, tmp_path):
    origin, _first, second = repository(tmp_path)
    job = server.add_job(
        ["git rev-list --count HEAD"],
        git_info={
            "repo_url": f"file://{origin}",
            "ref": "main",
            "sha": second,
            "refspecs": ["+refs/heads/main:refs/remotes/origin/main"],
            "depth": 1,
        },
    )
    run_jobs(config)
    server.wait(job)
    assert job.state == "success", job.text()
    assert "git depth set to 1" in job.text()
    assert "\n1\n" in job.text()


def test_a_failing_fetch_fails_the_job_without_running_the_script(server, config, tmp_path):
    job = server.add_job(
        ["echo script-ran"],
        git_info={"repo_url": f"file://{tmp_path}/missing", "ref": "main", "sha": "a" * 40, "depth": 0},
    )
    run_jobs(config)
    server.wait(job)
    assert job.state == "failed"
    assert job.failure_reason == "script_failure"
    assert "script-ran" not in job.text()


def test_credentials_never_appear_in_a_logged_url():
    assert clean_url("https://gitlab-ci-token:abc@host/g/p.git") == "https://host/g/p.git"
    assert clean_url("https://host/g/p.git") == "https://host/g/p.git"


def test_values_expand_earlier_variables():
    known = {"A": "1", "B": "two"}
    assert expand("$A-${B}-$MISSING-$$A", known) == "1-two--$A"


def test_the_project_folder_never_leaves_the_job_folder():
    assert str(project_folder({"job_info": {"project_full_path": "../../etc/x"}})) == "etc/x"
    assert str(project_folder({"job_info": {"project_id": 4}})) == "project-4"


def test_timeouts_read_as_gitlab_writes_them():
    assert duration_text(3600) == "1h0m0s"
    assert duration_text(90) == "1m30s"
    assert duration_text(5) == "5s"
