"""CI end to end: a real `kiln serve`, a real `git push` and the real `kiln runner` process,
observed only through the HTTP API as a GitLab user would see it.

A push of a three-stage configuration runs to a green pipeline (with an allowed failure, a
job started early by `needs`, an artifact handed from one job to the next and a manual job
played at the end); a pipeline canceled while its job runs stops that job on the runner and
runs again when retried; a runner killed in the middle of a job leaves the job failed once
its timeout (and the server's grace) has passed, and another runner still takes new jobs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.e2e.conftest import (
    CI_LONG_POLL_SECONDS,
    CI_STUCK_GRACE_SECONDS,
    ROOT_TOKEN,
    Server,
    kiln_command,
)
from tests.e2e.test_git_http import Git as GitHttpGit

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
# The server holds a runner's job request this long (GitLab's 50 s is far too long here).
LONG_POLL_SECONDS = CI_LONG_POLL_SECONDS
# How long after a job's timeout the server fails a running job nobody reports on.
STUCK_GRACE_SECONDS = CI_STUCK_GRACE_SECONDS
# The timeout of the job whose runner is killed (`timeout:` in its configuration).
KILLED_JOB_TIMEOUT = 10
POLL = 0.1
WAIT = 45.0

# The job states in the order GitLab moves a job through them (a manual job rests before
# pending until played); a job never goes back.
ORDER = ["created", "manual", "scheduled", "waiting_for_resource", "preparing", "pending", "running"]
DONE = {"success", "failed", "canceled", "skipped"}


# --- the server, git and the runner -------------------------------------------------------


@pytest.fixture
def ci_server(kiln_server: Server) -> Server:
    """The worker's shared server: it holds job requests and fails silent jobs quickly."""
    return kiln_server


class Api:
    """root's calls to the server's REST API."""

    def __init__(self, server: Server) -> None:
        self.client = httpx.Client(base_url=f"{server.url}/api/v4", headers=ROOT, timeout=30)

    def get(self, path: str, **kw: Any) -> Any:
        r = self.client.get(path, **kw)
        assert r.status_code == 200, f"GET {path}: {r.status_code} {r.text}"
        return r.json()

    def post(self, path: str, status: int = 201, **kw: Any) -> Any:
        r = self.client.post(path, **kw)
        assert r.status_code == status, f"POST {path}: {r.status_code} {r.text}"
        return r.json()

    def raw(self, path: str) -> httpx.Response:
        return self.client.get(path)


@pytest.fixture
def api(ci_server: Server) -> Iterator[Api]:
    client = Api(ci_server)
    yield client
    client.client.close()


def server_log(server: Server) -> str:
    """The end of serve's log without its successful GETs (the polling's noise)."""
    lines = [
        line
        for line in server.output().splitlines()
        if not ('"method":"GET"' in line and '"status":200' in line)
    ]
    return "\n".join(lines[-60:])


def until(check: Callable[[], Any], what: str, timeout: float = WAIT, logs: Callable[[], str] = str) -> Any:
    """Poll `check` until it returns something true; fail with `what` (and the logs) at the
    deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{logs()}")
        time.sleep(POLL)


class Git(GitHttpGit):
    """The git-over-HTTP tests' `git`, able to push one file to a project."""

    def push_file(self, project: dict[str, Any], work: Path, name: str, content: str, *options: str) -> str:
        """Clone the project, commit `name`, push it (with push `options`); the new commit."""
        scheme, rest = str(project["http_url_to_repo"]).split("://", 1)
        url = f"{scheme}://root:{quote(ROOT_TOKEN, safe='')}@{rest}"
        self.run("clone", "-q", url, str(work))
        sha = self.commit(work, name, content, f"Add {name}")
        pushed = [arg for option in options for arg in ("-o", option)]
        self.run("push", "-q", *pushed, "origin", "HEAD", cwd=work)
        return sha


@dataclass
class Runner:
    """A registered `kiln runner`: its configuration file, and its `run` process if started."""

    id: int
    config: Path
    log: Path
    home: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, concurrent: int) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    *kiln_command(),
                    "runner",
                    "run",
                    "--config",
                    str(self.config),
                    "--concurrent",
                    str(concurrent),
                    "--poll-interval",
                    "0.2",
                ],
                env=runner_env(self.home),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL, as a machine that dies takes its runner down."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)

    def stop(self) -> None:
        """TERM twice (the second aborts running jobs), then KILL."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        for _ in range(2):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
                return
        process.kill()
        process.wait(timeout=5)


def runner_env(home: Path) -> dict[str, str]:
    """The runner's environment: the caller's, without kiln's own settings, in its own HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["HOME"] = str(home)
    return env


@pytest.fixture
def runners(tmp_path: Path, ci_server: Server) -> Iterator[Callable[[str, str], Runner]]:
    """Register runners with `kiln runner register`; every one started is stopped after the
    test."""
    made: list[Runner] = []

    def register(token: str, name: str) -> Runner:
        home = tmp_path / name
        home.mkdir()
        config = home / "runner.json"
        result = subprocess.run(
            [
                *kiln_command(),
                "runner",
                "register",
                "--url",
                ci_server.url,
                "--token",
                token,
                "--description",
                name,
                "--executor",
                "shell",
                "--builds-dir",
                str(home / "builds"),
                "--cache-dir",
                str(home / "cache"),
                "--config",
                str(config),
            ],
            env=runner_env(home),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, f"register failed:\n{result.stdout}\n{result.stderr}"
        runner = Runner(runner_id(config), config, home / "runner.log", home)
        made.append(runner)
        return runner

    try:
        yield register
    finally:
        for runner in made:
            runner.stop()


def runner_id(config: Path) -> int:
    entries = json.loads(config.read_text())["runners"]
    assert len(entries) == 1, entries
    return int(entries[0]["id"])


def new_project(api: Api, name: str) -> tuple[dict[str, Any], str]:
    """A private project with a README, and its runners registration token (root sees it as
    a Maintainer would)."""
    project = api.post("/projects", json={"name": name, "initialize_with_readme": True})
    shown = api.get(f"/projects/{project['id']}")
    token = shown.get("runners_token")
    assert token, f"GET /projects/:id shows no runners_token to an admin: {sorted(shown)}"
    return project, str(token)


def jobs_of(api: Api, project_id: int, pipeline_id: int) -> dict[str, dict[str, Any]]:
    return {job["name"]: job for job in api.get(f"/projects/{project_id}/pipelines/{pipeline_id}/jobs")}


def trace_of(api: Api, project_id: int, job_id: int) -> str:
    r = api.raw(f"/projects/{project_id}/jobs/{job_id}/trace")
    assert r.status_code == 200, r.text
    return r.text


class Seen:
    """Every status a pipeline and its jobs were seen in, in order (repeats left out)."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[str]] = {}

    def note(self, name: str, status: str) -> None:
        seen = self.by_name.setdefault(name, [])
        if not seen or seen[-1] != status:
            seen.append(status)

    def look(self, api: Api, project_id: int, pipeline_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
        pipeline = api.get(f"/projects/{project_id}/pipelines/{pipeline_id}")
        jobs = jobs_of(api, project_id, pipeline_id)
        self.note("pipeline", pipeline["status"])
        for name, job in jobs.items():
            self.note(name, job["status"])
        return pipeline, jobs


def assert_forward(statuses: list[str]) -> None:
    """Statuses only move forward, and once done stay done."""
    ranks = [ORDER.index(s) if s in ORDER else len(ORDER) for s in statuses]
    assert ranks == sorted(ranks), statuses
    assert sum(s in DONE for s in statuses) <= 1, statuses


def ordered_times(*stamps: str | None) -> None:
    """ISO times present and not decreasing."""
    assert all(stamps), stamps
    assert list(stamps) == sorted(stamps), stamps  # type: ignore[type-var]


# --- a push runs a three-stage pipeline ------------------------------------------------------


CONFIG = """\
stages: [build, test, deploy]

build:
  stage: build
  script:
    - echo "building $CI_COMMIT_SHORT_SHA"
    - while [ ! -f "{gate}" ]; do sleep 0.1; done
    - mkdir -p out
    - echo "result $CI_COMMIT_SHORT_SHA" > out/result.txt
  artifacts:
    paths: [out/]

lint:
  stage: build
  allow_failure: true
  script:
    - echo "linting"
    - exit 3

unit:
  stage: test
  needs: [build]
  script:
    - echo "testing with the artifact"
    - cat out/result.txt

deploy:
  stage: deploy
  when: manual
  script:
    - echo "deploying $CI_JOB_NAME"
"""


def test_a_push_runs_build_test_and_deploy_as_gitlab_would(
    api: Api, ci_server: Server, runners: Callable[[str, str], Runner], tmp_path: Path
) -> None:
    project, token = new_project(api, "ci-push")
    pid = project["id"]
    runner = runners(token, "pusher")
    runner.start(concurrent=2)

    def logs() -> str:
        return f"--- runner:\n{runner.output()}\n--- server:\n{server_log(ci_server)}"

    gate = tmp_path / "gate"
    sha = Git(tmp_path / "home").push_file(
        project, tmp_path / "work", ".gitlab-ci.yml", CONFIG.format(gate=gate)
    )
    short = sha[:8]

    found = until(
        lambda: api.get(f"/projects/{pid}/pipelines", params={"sha": sha}), "the push's pipeline", logs=logs
    )
    assert len(found) == 1, found
    pipeline_id = found[0]["id"]
    assert found[0]["source"] == "push"
    assert found[0]["ref"] == project["default_branch"]

    seen = Seen()

    # While build waits at its gate: lint ran beside it (two slots) and failed; unit waits
    # for build; deploy waits for its stage; the pipeline runs.
    def build_waits() -> bool:
        _, jobs = seen.look(api, pid, pipeline_id)
        return jobs["build"]["status"] == "running" and jobs["lint"]["status"] == "failed"

    until(build_waits, "build running and lint failed", logs=logs)
    pipeline, jobs = seen.look(api, pid, pipeline_id)
    assert pipeline["status"] == "running"
    assert jobs["unit"]["status"] == "created"
    assert jobs["deploy"]["status"] == "created"
    assert jobs["build"]["started_at"]
    assert not jobs["build"]["finished_at"]
    assert pipeline["started_at"]
    assert not pipeline["finished_at"]
    gate.write_text("open")

    def finished() -> dict[str, Any] | None:
        pipeline, _ = seen.look(api, pid, pipeline_id)
        return pipeline if pipeline["status"] in DONE else None

    pipeline = until(finished, "the pipeline to finish", logs=logs)
    jobs = jobs_of(api, pid, pipeline_id)
    statuses = {name: job["status"] for name, job in jobs.items()}
    assert pipeline["status"] == "success", (statuses, logs())
    assert statuses == {"build": "success", "lint": "failed", "unit": "success", "deploy": "manual"}
    for statuses_seen in seen.by_name.values():
        assert_forward(statuses_seen)
    assert seen.by_name["pipeline"][-2:] == ["running", "success"], seen.by_name

    lint = jobs["lint"]
    assert lint["allow_failure"] is True
    assert lint["failure_reason"] == "script_failure"
    build, unit, deploy = jobs["build"], jobs["unit"], jobs["deploy"]
    for job in (build, lint, unit):
        ordered_times(job["created_at"], job["started_at"], job["finished_at"])
        assert job["runner"]["id"] == runner.id, job["runner"]
        assert job["duration"] is not None
        assert job["duration"] >= 0
    ordered_times(build["finished_at"], unit["started_at"])
    assert deploy["started_at"] is None
    assert deploy["finished_at"] is None
    ordered_times(pipeline["created_at"], pipeline["started_at"], pipeline["finished_at"])

    # The logs hold the jobs' output; unit's holds the artifact build made.
    assert f"building {short}" in trace_of(api, pid, build["id"])
    lint_log = trace_of(api, pid, lint["id"])
    assert "linting" in lint_log
    assert "exit code 3" in lint_log
    unit_log = trace_of(api, pid, unit["id"])
    assert "testing with the artifact" in unit_log
    assert f"result {short}" in unit_log

    # build's artifacts: a zip archive holding out/result.txt.
    assert build["artifacts_file"]["size"] > 0, build
    archive = api.raw(f"/projects/{pid}/jobs/{build['id']}/artifacts")
    assert archive.status_code == 200, archive.text
    with zipfile.ZipFile(io.BytesIO(archive.content)) as z:
        assert z.read("out/result.txt").decode() == f"result {short}\n"

    # The manual job, played, runs and succeeds; the pipeline stays green.
    played = api.post(f"/projects/{pid}/jobs/{deploy['id']}/play", status=200)
    assert played["status"] in ("pending", "running", "success"), played

    def deployed() -> dict[str, Any] | None:
        _, jobs = seen.look(api, pid, pipeline_id)
        return jobs["deploy"] if jobs["deploy"]["status"] in DONE else None

    deploy = until(deployed, "deploy to finish", logs=logs)
    assert deploy["status"] == "success", logs()
    assert_forward(seen.by_name["deploy"])
    assert "deploying deploy" in trace_of(api, pid, deploy["id"])
    pipeline = until(
        lambda: (p := api.get(f"/projects/{pid}/pipelines/{pipeline_id}"))["status"] in DONE and p,
        "the pipeline after deploy",
        logs=logs,
    )
    assert pipeline["status"] == "success"
    ordered_times(deploy["finished_at"], pipeline["finished_at"])


# --- a job that waits for a flag -----------------------------------------------------------

WAITING = """\
waiting:
  timeout: {timeout}
  script:
    - echo $$ > "$FLAG.pid"
    - echo "started"
    - while [ ! -f "$FLAG" ]; do sleep 0.2; printf .; done
    - echo "flag seen"
"""


def waiting_project(api: Api, tmp_path: Path, name: str, timeout: str = "1h") -> tuple[dict[str, Any], str]:
    """A project whose configuration holds one job waiting for the file `$FLAG` (pushed with
    `ci.skip`: only pipelines made with the variable run it). The job prints a dot while it
    waits: a runner hears of a cancel in the answer to its next log update, and a job whose
    log stands still only at the runner's keepalive (30 s, as GitLab's runner)."""
    project, token = new_project(api, name)
    Git(tmp_path / "home").push_file(
        project, tmp_path / "work", ".gitlab-ci.yml", WAITING.format(timeout=timeout), "ci.skip"
    )
    return project, token


def run_with_flag(api: Api, project: dict[str, Any], flag: Path) -> dict[str, Any]:
    pipeline: dict[str, Any] = api.post(
        f"/projects/{project['id']}/pipeline",
        json={"ref": project["default_branch"], "variables": [{"key": "FLAG", "value": str(flag)}]},
    )
    assert pipeline["status"] in ("created", "pending", "running"), pipeline
    return pipeline


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(ChildProcessError):  # a zombie of ours is gone too
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    return False


def test_a_pipeline_canceled_mid_run_stops_its_job_and_runs_again_when_retried(
    api: Api, ci_server: Server, runners: Callable[[str, str], Runner], tmp_path: Path
) -> None:
    project, token = waiting_project(api, tmp_path, "ci-cancel")
    pid = project["id"]
    runner = runners(token, "canceler")
    runner.start(concurrent=2)

    def logs() -> str:
        return f"--- runner:\n{runner.output()}\n--- server:\n{server_log(ci_server)}"

    skipped = api.get(f"/projects/{pid}/pipelines")
    assert [p["status"] for p in skipped] == ["skipped"], skipped  # the ci.skip push

    flag = tmp_path / "flag"
    pipeline = run_with_flag(api, project, flag)
    job = jobs_of(api, pid, pipeline["id"])["waiting"]
    until(lambda: "started" in trace_of(api, pid, job["id"]), "the job's log to say started", logs=logs)
    shell = int(Path(f"{flag}.pid").read_text())
    assert api.get(f"/projects/{pid}/jobs/{job['id']}")["status"] == "running"

    canceled = api.post(f"/projects/{pid}/pipelines/{pipeline['id']}/cancel", status=200)
    assert canceled["status"] in ("canceling", "canceled"), canceled
    job = until(
        lambda: (j := api.get(f"/projects/{pid}/jobs/{job['id']}"))["status"] == "canceled" and j,
        "the job to be canceled",
        logs=logs,
    )
    assert job["finished_at"], job
    assert api.get(f"/projects/{pid}/pipelines/{pipeline['id']}")["status"] == "canceled"
    # The runner heard of it and ended the job's processes; the flag never came.
    until(lambda: f"job {job['id']} finished" in runner.output(), "the runner to end the job", logs=logs)
    until(lambda: pid_gone(shell), "the job's shell to be gone", logs=logs)
    assert "flag seen" not in trace_of(api, pid, job["id"])

    flag.write_text("go")
    retried = api.post(f"/projects/{pid}/pipelines/{pipeline['id']}/retry")
    assert retried["status"] in ("pending", "running"), retried
    again = until(
        lambda: (p := api.get(f"/projects/{pid}/pipelines/{pipeline['id']}"))["status"] in DONE and p,
        "the retried pipeline to finish",
        logs=logs,
    )
    assert again["status"] == "success", logs()
    new_job = jobs_of(api, pid, pipeline["id"])["waiting"]
    assert new_job["id"] != job["id"]
    assert new_job["status"] == "success"
    assert "flag seen" in trace_of(api, pid, new_job["id"])
    everything = api.get(f"/projects/{pid}/pipelines/{pipeline['id']}/jobs", params={"include_retried": True})
    assert sorted((j["id"], j["status"]) for j in everything) == [
        (job["id"], "canceled"),
        (new_job["id"], "success"),
    ]


# --- a runner killed mid-job --------------------------------------------------------------


def test_a_job_whose_runner_is_killed_fails_after_its_timeout_and_nothing_else_blocks(
    api: Api, ci_server: Server, runners: Callable[[str, str], Runner], tmp_path: Path
) -> None:
    project, token = waiting_project(api, tmp_path, "ci-killed", timeout=f"{KILLED_JOB_TIMEOUT}s")
    pid = project["id"]
    first = runners(token, "doomed")
    first.start(concurrent=1)
    second = runners(token, "successor")

    def logs() -> str:
        return (
            f"--- killed runner:\n{first.output()}\n--- second runner:\n{second.output()}\n"
            f"--- server:\n{server_log(ci_server)}"
        )

    never = tmp_path / "never"
    try:
        stuck = run_with_flag(api, project, never)
        job = jobs_of(api, pid, stuck["id"])["waiting"]
        until(lambda: "started" in trace_of(api, pid, job["id"]), "the job's log to say started", logs=logs)
        first.kill()
        killed_at = time.monotonic()

        # Another runner takes a new job at once: the dead runner's job holds nothing up.
        second.start(concurrent=1)
        ready = tmp_path / "ready"
        ready.write_text("go")
        other = run_with_flag(api, project, ready)
        done = until(
            lambda: (p := api.get(f"/projects/{pid}/pipelines/{other['id']}"))["status"] in DONE and p,
            "the second runner to run a new pipeline",
            logs=logs,
        )
        assert done["status"] == "success", logs()
        assert jobs_of(api, pid, other["id"])["waiting"]["runner"]["id"] == second.id

        # The dead runner's job fails once its timeout and the server's grace have passed.
        limit = KILLED_JOB_TIMEOUT + float(STUCK_GRACE_SECONDS) + 10
        job = until(
            lambda: (j := api.get(f"/projects/{pid}/jobs/{job['id']}"))["status"] in DONE and j,
            f"the server to fail the job of the killed runner within its timeout ({KILLED_JOB_TIMEOUT} s) "
            f"and KILN_CI_STUCK_GRACE_SECONDS ({STUCK_GRACE_SECONDS} s)",
            timeout=max(limit - (time.monotonic() - killed_at), 1),
            logs=logs,
        )
        assert job["status"] == "failed", job
        assert job["failure_reason"] in ("stuck_or_timeout_failure", "job_execution_timeout"), job
        assert job["runner"]["id"] == first.id
        assert api.get(f"/projects/{pid}/pipelines/{stuck['id']}")["status"] == "failed"
    finally:
        never.write_text("go")  # the killed runner's orphaned job shell ends
