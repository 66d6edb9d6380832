"""The job queue across real processes: jobs in the database outlive a `kill -9` of
`kiln serve`, whose in-process workers run them after a restart; `kiln worker` processes
drain the queue side by side, each job exactly once, and stop cleanly on a signal.

Jobs are put in the database directly (the test is the application that enqueues); the
built-in "jobs.purge" kind is the work, and each job's row tells who ran it how often."""

from __future__ import annotations

import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker, transaction
from kiln.jobs import enqueue
from kiln.models import Job
from kiln.models.base import utcnow
from tests.e2e.conftest import Server, kiln_command, server_env, start_server

pytestmark = pytest.mark.e2e

# Nothing is old enough to delete: every purge job leaves the table as it found it.
PURGE = {"older_than_seconds": 86400}
FAST_POLL = "0.05"


@dataclass
class WorkerProcess:
    """One running `kiln worker`; its stderr (messages and logs) goes to `log`."""

    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_running(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "kiln: worker running" in self.output():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"kiln worker did not start:\n{self.output()}")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=5)


def start_worker(
    data_dir: Path, database_url: str | None, log: Path, *args: str, env: dict[str, str] | None = None
) -> WorkerProcess:
    data_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = server_env(data_dir, database_url, 0, KILN_JOB_POLL_INTERVAL=FAST_POLL, **(env or {}))
    with log.open("wb") as err:
        process = subprocess.Popen(
            [*kiln_command(), "worker", *args], env=env, stdout=subprocess.DEVNULL, stderr=err
        )
    return WorkerProcess(process, log)


@pytest.fixture
def database(
    tmp_path: Path, new_database_url: Callable[[], str | None]
) -> Iterator[tuple[str | None, sessionmaker[Session]]]:
    """A fresh database for this test and sessions on it from the test process (the SQLite
    file lives in the data dir the processes share)."""
    url = new_database_url()
    engine = make_engine(Settings(data_dir=tmp_path / "data", database_url=url))
    yield url, make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture
def processes() -> Iterator[list[Server | WorkerProcess]]:
    """Everything a test starts; whatever still runs at the end is killed."""
    started: list[Server | WorkerProcess] = []
    yield started
    for p in started:
        if isinstance(p, Server):
            p.stop()
        else:
            p.kill()


def enqueue_purges(sessions: sessionmaker[Session], n: int) -> list[int]:
    with sessions() as db, transaction(db):
        return [enqueue(db, "jobs.purge", PURGE).id for _ in range(n)]


def jobs_by_id(sessions: sessionmaker[Session]) -> dict[int, Job]:
    with sessions() as db:
        return {j.id: j for j in db.scalars(select(Job))}


def wait_all_done(sessions: sessionmaker[Session], ids: list[int], timeout: float = 60.0) -> dict[int, Job]:
    deadline = time.monotonic() + timeout
    while True:
        rows = jobs_by_id(sessions)
        if all(rows[i].state == "done" for i in ids) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def pid_of(locked_by: str | None) -> int:
    """Worker ids read host:pid:random."""
    assert locked_by is not None
    return int(locked_by.split(":")[-2])


def test_queued_jobs_survive_kill_9_of_serve_and_run_once_after_restart(tmp_path, database, processes):
    url, sessions = database
    first = start_server(tmp_path / "data", url, tmp_path / "logs", KILN_WORKERS="0")
    processes.append(first)
    queued = enqueue_purges(sessions, 20)
    # A job its worker was running when that worker's machine died: the lease has run out.
    (crashed,) = enqueue_purges(sessions, 1)
    with sessions() as db, transaction(db):
        db.execute(
            update(Job)
            .where(Job.id == crashed)
            .values(
                state="running",
                attempts=1,
                locked_by="lost-node:1:deadbeef",
                locked_until=utcnow() - timedelta(seconds=1),
            )
        )

    first.process.kill()  # SIGKILL: no shutdown of any kind
    first.process.wait(timeout=10)
    assert first.process.returncode == -signal.SIGKILL
    assert {jobs_by_id(sessions)[i].state for i in queued} == {"queued"}

    second = start_server(
        tmp_path / "data", url, tmp_path / "logs", KILN_WORKERS="2", KILN_JOB_POLL_INTERVAL=FAST_POLL
    )
    processes.append(second)
    rows = wait_all_done(sessions, [*queued, crashed])

    assert {(rows[i].state, rows[i].attempts, rows[i].last_error) for i in queued} == {("done", 1, None)}
    assert (rows[crashed].state, rows[crashed].attempts) == ("done", 2)
    assert {pid_of(rows[i].locked_by) for i in [*queued, crashed]} == {second.process.pid}


def test_two_worker_processes_run_each_of_300_jobs_exactly_once(tmp_path, database, processes, postgres):
    if postgres is None:
        pytest.skip("several worker processes share a queue on PostgreSQL")
    url, sessions = database
    workers = [
        start_worker(tmp_path / f"node{n}", url, tmp_path / "logs" / f"worker{n}.stderr", "--threads", "2")
        for n in (1, 2)
    ]
    processes.extend(workers)
    for w in workers:
        w.wait_running()

    ids = enqueue_purges(sessions, 300)
    rows = wait_all_done(sessions, ids)

    assert len(rows) == 300
    assert {(j.state, j.attempts, j.last_error) for j in rows.values()} == {("done", 1, None)}
    ran_by = [pid_of(j.locked_by) for j in rows.values()]
    assert set(ran_by) == {w.process.pid for w in workers}
    for w in workers:
        w.process.send_signal(signal.SIGTERM)
    for w in workers:
        assert w.process.wait(timeout=30) == 0
        assert "Traceback" not in w.output()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_worker_process_runs_jobs_and_stops_cleanly_on_a_signal(tmp_path, database, processes, sig):
    url, sessions = database
    worker = start_worker(tmp_path / "data", url, tmp_path / "worker.stderr")
    processes.append(worker)
    worker.wait_running()

    ids = enqueue_purges(sessions, 5)
    rows = wait_all_done(sessions, ids)
    worker.process.send_signal(sig)

    assert worker.process.wait(timeout=30) == 0
    assert {(rows[i].state, rows[i].attempts, pid_of(rows[i].locked_by)) for i in ids} == {
        ("done", 1, worker.process.pid)
    }
    assert "kiln: worker stopped" in worker.output()
    assert "Traceback" not in worker.output()


def metrics_of(url: str) -> dict[str, float]:
    """Every sample of the Prometheus text at `url`, by name and labels."""
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {
        sample.name + str(sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_worker_serves_its_metrics_to_the_monitoring_allowlist(tmp_path, database, processes):
    """Its jobs' statements and the queue, at /-/metrics on the port it is given."""
    url, sessions = database
    worker = start_worker(tmp_path / "data", url, tmp_path / "logs" / "w.log", "--metrics-port", "0")
    processes.append(worker)
    worker.wait_running()
    address = re.search(r"worker metrics at (\S+)", worker.output())
    assert address is not None, worker.output()
    wait_all_done(sessions, enqueue_purges(sessions, 3))
    samples = metrics_of(address.group(1))
    assert samples["kiln_db_statement_duration_seconds_count[('origin', 'background')]"] > 0
    assert samples["kiln_jobs_queued[]"] == 0
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(address.group(1).replace("/-/metrics", "/metrics"), timeout=10)
    assert missing.value.code == 404


def test_a_worker_hides_its_metrics_from_others(tmp_path, database, processes):
    url, _ = database
    log = tmp_path / "logs" / "w.log"
    worker = start_worker(
        tmp_path / "data", url, log, "--metrics-port", "0", env={"KILN_MONITORING_WHITELIST": "10.0.0.0/8"}
    )
    processes.append(worker)
    worker.wait_running()
    address = re.search(r"worker metrics at (\S+)", worker.output())
    assert address is not None, worker.output()
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(address.group(1), timeout=10)
    assert refused.value.code == 404
