"""The docker executor: its command lines always; real jobs only where a daemon answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kiln.runner import executor_docker
from kiln.runner.config import Config
from kiln.runner.executor_docker import DockerExecutor, service_aliases
from tests.runner.conftest import run_jobs


def executor(tmp_path: Path, job: dict) -> DockerExecutor:
    made = DockerExecutor("alpine:latest", {"id": 5, **job})
    made.builds_dir = tmp_path
    return made


def test_the_job_image_wins_over_the_default(tmp_path):
    assert executor(tmp_path, {"image": {"name": "python:3.12"}}).image == "python:3.12"
    assert executor(tmp_path, {"image": None}).image == "alpine:latest"


def test_paths_map_into_the_container(tmp_path):
    made = executor(tmp_path, {})
    assert made.path(tmp_path) == "/builds"
    assert made.path(tmp_path / "group/project") == "/builds/group/project"


def test_values_reach_the_container_by_name_only(tmp_path):
    made = executor(tmp_path, {"image": {"name": "python:3.12"}})
    argv = made.command(tmp_path / "p.tmp/s.sh", {"SECRET": "hunter22"}, tmp_path / "p", "c1")
    assert "hunter22" not in " ".join(argv)
    assert argv[argv.index("-e") + 1] == "SECRET"
    assert argv[argv.index("-v") + 1] == f"{tmp_path}:/builds"
    assert argv[argv.index("-w") + 1] == "/builds/p"
    assert "python:3.12" in argv
    assert argv[-1] == "/builds/p.tmp/s.sh"


def test_services_are_linked_under_their_aliases():
    assert service_aliases({"name": "postgres:16"}) == ["postgres"]
    assert service_aliases({"name": "tutum/wordpress:latest"}) == ["tutum-wordpress", "tutum__wordpress"]
    assert service_aliases({"name": "redis", "alias": "cache,store"}) == ["cache", "store"]
    assert service_aliases({"name": "registry.local:5000/db"}) == ["registry.local-db", "registry.local__db"]


FAKE_DOCKER = """#!/usr/bin/env python3
# Stands in for the docker CLI: records each call, runs `docker run --rm` commands on this
# machine with the mounted folder mapped back, answers the rest as a daemon would.
import json, os, subprocess, sys
args = sys.argv[1:]
with open(os.environ["FAKE_DOCKER_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[:1] == ["run"] and "--rm" in args and "-w" in args:
    mount = args[args.index("-v") + 1].split(":")[0]
    host = lambda p: p.replace("/builds", mount, 1) if p.startswith("/builds") else p
    keys = [args[i + 1] for i, a in enumerate(args) if a == "-e"]
    env = {"PATH": os.environ["PATH"], **{k: os.environ[k] for k in keys if k in os.environ}}
    command = args[args.index("sh"):]
    command[-1] = host(command[-1])
    sys.exit(subprocess.call(command, cwd=host(args[args.index("-w") + 1]), env=env))
if args[:2] == ["run", "-d"]:
    print("container-id")
sys.exit(0)
"""


def test_a_job_runs_through_the_docker_cli(server, config, tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    fake = tools / "docker"
    fake.write_text(FAKE_DOCKER)
    fake.chmod(0o755)
    log = tmp_path / "docker.log"
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(log))
    config.runners[0].executor = "docker"
    job = server.add_job(
        ['echo "inside $CI_PROJECT_DIR"', "echo made > made.txt", 'echo "secret $TOKEN"'],
        variables=[{"key": "TOKEN", "value": "hunter22-secret", "masked": True}],
        artifacts=[{"paths": ["made.txt"], "artifact_type": "archive", "artifact_format": "zip"}],
    )
    job.payload["image"] = {"name": "python:3.12"}
    job.payload["services"] = [
        {"name": "postgres:16", "variables": [{"key": "POSTGRES_PASSWORD", "value": "pw"}]}
    ]
    run_jobs(config)
    server.wait(job)
    assert job.state == "success", job.text()
    assert "inside /builds/group/project" in job.text()
    assert "secret [MASKED]" in job.text()
    assert len(job.artifacts) == 1
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    service = next(c for c in calls if c[:2] == ["run", "-d"])
    assert "postgres:16" in service
    step = next(c for c in calls if c[:2] == ["run", "--rm"] and "-w" in c)
    assert "python:3.12" in step
    assert any(a.endswith(":postgres") for a in step if a.startswith("kiln-job-"))
    assert "hunter22-secret" not in json.dumps(calls)
    assert "pw" not in [a.split("=")[-1] for c in calls for a in c]
    assert next(c for c in calls if c[0] == "rm")[:3] == ["rm", "-f", "-v"]


@pytest.mark.skipif(not executor_docker.available(), reason="no docker daemon")
def test_a_job_runs_in_its_image(server, config: Config):
    config.runners[0].executor = "docker"
    job = server.add_job(["cat /etc/os-release", 'echo "in $CI_PROJECT_DIR"'])
    job.payload["image"] = {"name": "alpine:latest"}
    run_jobs(config)
    server.wait(job, 300)
    assert job.state == "success", job.text()
    assert "Alpine" in job.text()
    assert "in /builds/group/project" in job.text()
