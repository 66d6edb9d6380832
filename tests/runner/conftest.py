from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kiln.runner.config import Config, RunnerEntry
from kiln.runner.job import JobSettings
from kiln.runner.run import Results, RunnerProcess
from tests.runner.protocol_server import ProtocolServer

# Short intervals: the protocol allows any, and the tests should not wait on GitLab's 3 s.
FAST = JobSettings(trace_interval=0.05, keepalive=0.2, update_pause=0.01, update_deadline=5.0)


@pytest.fixture
def server() -> Iterator[ProtocolServer]:
    started = ProtocolServer().start()
    yield started
    started.stop()


@pytest.fixture
def config(tmp_path: Path, server: ProtocolServer) -> Config:
    token = server.add_runner()
    return Config(
        builds_dir=str(tmp_path / "builds"),
        cache_dir=str(tmp_path / "cache"),
        runners=[RunnerEntry(url=server.url, token=token, id=100, description="test runner")],
    )


def run_jobs(config: Config, *, once: bool = True, concurrent: int = 1, **settings: float) -> Results:
    """Poll until one job ran (`once`) with the fast settings."""
    job_settings = JobSettings(**{**FAST.__dict__, **settings})
    process = RunnerProcess(
        config, once=once, concurrent=concurrent, poll_interval=0.02, settings=job_settings
    )
    return process.run()
