"""The durable job queue in-process: enqueue with the caller's transaction, run once,
retry with backoff, give up, reclaim a dead worker's jobs, and never run a job twice when
workers race (on SQLite and PostgreSQL alike)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln.app import create_app
from kiln.config import Settings
from kiln.db import transaction
from kiln.jobs import (
    JobContext,
    Worker,
    claim,
    enqueue,
    handler,
    retry_delay,
    run_due,
    run_one,
)
from kiln.models import Job, UserCustomAttribute
from kiln.models.base import utcnow
from kiln.runtime import Runtime

# --- handlers of this module's own kinds -------------------------------------------------

SLOW_STARTED = threading.Event()
STOP = threading.Event()
FAILURES: list[int] = []


def bump(ctx: JobContext) -> None:
    """Count a run of this job: a row per job on root, incremented on every run."""
    key = f"job-{ctx.job.id}"
    attr = ctx.db.scalars(
        select(UserCustomAttribute).where(UserCustomAttribute.user_id == 1, UserCustomAttribute.key == key)
    ).one_or_none()
    if attr is None:
        ctx.db.add(UserCustomAttribute(user_id=1, key=key, value="1"))
    else:
        attr.value = str(int(attr.value) + 1)
    ctx.db.flush()


@handler("tests.count")
def _count(ctx: JobContext, payload: dict[str, Any]) -> None:
    bump(ctx)


@handler("tests.fail")
def _fail(ctx: JobContext, payload: dict[str, Any]) -> None:
    FAILURES.append(ctx.job.attempts)
    raise ValueError(payload.get("message", "boom"))


@handler("tests.count_then_fail")
def _count_then_fail(ctx: JobContext, payload: dict[str, Any]) -> None:
    bump(ctx)
    raise RuntimeError("after writing")


@handler("tests.follow_up")
def _follow_up(ctx: JobContext, payload: dict[str, Any]) -> None:
    bump(ctx)
    enqueue(ctx.db, "tests.count", {"parent": ctx.job.id})


@handler("tests.slow")
def _slow(ctx: JobContext, payload: dict[str, Any]) -> None:
    SLOW_STARTED.set()
    time.sleep(float(payload["seconds"]))
    bump(ctx)


@handler("tests.stop")
def _stop(ctx: JobContext, payload: dict[str, Any]) -> None:
    STOP.set()
    bump(ctx)


# --- helpers -----------------------------------------------------------------------------


def add(db: Session, kind: str, payload: dict[str, Any] | None = None, **kw: Any) -> int:
    with transaction(db):
        return enqueue(db, kind, payload or {}, **kw).id


def run_jobs(runtime: Runtime, **kw: Any) -> int:
    return run_due(runtime.sessions, runtime.settings, **kw)


def job(runtime: Runtime, job_id: int) -> Job:
    """The row as committed now (a session of its own, not the test's identity map)."""
    with runtime.sessions() as s:
        row = s.get(Job, job_id)
        assert row is not None
        return row


def change(db: Session, job_id: int, **values: Any) -> None:
    with transaction(db):
        db.execute(update(Job).where(Job.id == job_id).values(**values))


def runs(runtime: Runtime) -> dict[str, str]:
    """How often each job ran, by the rows `bump` keeps: {"job-<id>": "<count>"}."""
    with runtime.sessions() as s:
        rows = s.execute(
            select(UserCustomAttribute.key, UserCustomAttribute.value).where(
                UserCustomAttribute.user_id == 1, UserCustomAttribute.key.startswith("job-")
            )
        ).all()
    return dict(rows)


def all_jobs(runtime: Runtime) -> list[Job]:
    with runtime.sessions() as s:
        return list(s.scalars(select(Job).order_by(Job.id)))


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# --- enqueue -----------------------------------------------------------------------------


def change_that_fails(db: Session) -> None:
    with transaction(db):
        enqueue(db, "tests.count", {"n": 1})
        raise RuntimeError("the change failed")


def test_enqueued_job_is_rolled_back_with_its_transaction(db, runtime):
    with pytest.raises(RuntimeError, match="the change failed"):
        change_that_fails(db)

    assert all_jobs(runtime) == []


def test_enqueued_job_commits_queued_with_its_transaction(db, runtime):
    before = utcnow()
    job_id = add(db, "tests.count", {"n": 1, "names": ("a", "b")}, max_attempts=3)

    row = job(runtime, job_id)
    assert (row.kind, row.state, row.attempts, row.max_attempts) == ("tests.count", "queued", 0, 3)
    assert row.payload == {"n": 1, "names": ["a", "b"]}
    assert before <= row.run_at <= utcnow()
    assert (row.locked_by, row.locked_until, row.finished_at, row.last_error) == (None, None, None, None)


def test_enqueue_outside_a_transaction_is_refused(db, runtime):
    with pytest.raises(RuntimeError, match="inside `with transaction"):
        enqueue(db, "tests.count", {})

    assert all_jobs(runtime) == []


def test_payload_must_be_json(db, runtime):
    with pytest.raises(TypeError, match="not JSON"), transaction(db):
        enqueue(db, "tests.count", {"when": utcnow()})

    assert all_jobs(runtime) == []


def test_kind_longer_than_its_column_is_refused(db, runtime):
    with pytest.raises(ValueError, match="1 to 64 characters"), transaction(db):
        enqueue(db, "k" * 65, {})

    assert all_jobs(runtime) == []


def test_a_kind_has_one_handler():
    with pytest.raises(ValueError, match="already has a handler"):
        handler("tests.count")(lambda ctx, payload: None)


# --- running -----------------------------------------------------------------------------


def test_due_job_runs_once_and_is_marked_done(db, runtime):
    job_id = add(db, "tests.count")

    assert run_jobs(runtime, worker_id="w1") == 1
    assert run_jobs(runtime, worker_id="w1") == 0

    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.locked_by, row.locked_until, row.last_error) == (
        "done",
        1,
        "w1",
        None,
        None,
    )
    assert row.finished_at is not None
    assert runs(runtime) == {f"job-{job_id}": "1"}


def test_job_due_later_is_not_run_early(db, runtime):
    job_id = add(db, "tests.count", run_at=utcnow() + timedelta(minutes=5))

    assert run_jobs(runtime) == 0

    row = job(runtime, job_id)
    assert (row.state, row.attempts) == ("queued", 0)
    assert runs(runtime) == {}


def test_job_runs_once_its_time_has_come(db, runtime):
    job_id = add(db, "tests.count", run_at=utcnow() + timedelta(minutes=5))
    change(db, job_id, run_at=utcnow() - timedelta(seconds=1))

    assert run_jobs(runtime) == 1
    assert job(runtime, job_id).state == "done"


def test_jobs_run_in_order_of_their_time(db, runtime):
    late = add(db, "tests.count", run_at=utcnow() - timedelta(seconds=1))
    early = add(db, "tests.count", run_at=utcnow() - timedelta(seconds=10))

    assert claim(runtime.sessions, runtime.settings, "w1", limit=1) == [early]
    assert claim(runtime.sessions, runtime.settings, "w1", limit=1) == [late]


def test_failed_job_is_retried_after_exponential_backoff(db, runtime, configure):
    configure(job_backoff_seconds=5.0)
    job_id = add(db, "tests.fail", {"message": "first"})

    before = utcnow()
    assert run_jobs(runtime) == 1  # the retry is not due yet
    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.last_error) == ("queued", 1, "ValueError('first')")
    assert (row.locked_by, row.locked_until, row.finished_at) == (None, None, None)
    assert before + timedelta(seconds=5) <= row.run_at <= utcnow() + timedelta(seconds=5)

    change(db, job_id, run_at=utcnow())
    before = utcnow()
    assert run_jobs(runtime) == 1
    row = job(runtime, job_id)
    assert (row.state, row.attempts) == ("queued", 2)
    assert before + timedelta(seconds=10) <= row.run_at <= utcnow() + timedelta(seconds=10)


def test_retry_delay_doubles_per_attempt_up_to_the_cap(settings):
    s = settings.model_copy(update={"job_backoff_seconds": 5.0, "job_backoff_max_seconds": 60.0})

    assert [retry_delay(s, n).total_seconds() for n in range(1, 7)] == [5, 10, 20, 40, 60, 60]
    assert retry_delay(s, 10_000).total_seconds() == 60


def test_failed_job_ends_dead_after_max_attempts(db, runtime, configure):
    configure(job_backoff_seconds=0.0)
    FAILURES.clear()
    job_id = add(db, "tests.fail", max_attempts=3)

    assert run_jobs(runtime) == 3
    assert run_jobs(runtime) == 0

    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.last_error) == ("dead", 3, "ValueError('boom')")
    assert row.finished_at is not None
    assert FAILURES == [1, 2, 3]


def test_handler_db_effects_roll_back_when_it_fails(db, runtime, configure):
    configure(job_backoff_seconds=0.0)
    job_id = add(db, "tests.count_then_fail", max_attempts=2)

    assert run_jobs(runtime) == 2

    assert runs(runtime) == {}
    row = job(runtime, job_id)
    assert (row.state, row.last_error) == ("dead", "RuntimeError('after writing')")


def test_jobs_a_handler_enqueues_commit_with_it_and_run_in_the_same_drain(db, runtime):
    parent = add(db, "tests.follow_up")

    assert run_jobs(runtime) == 2

    (child,) = [j for j in all_jobs(runtime) if j.id != parent]
    assert (child.kind, child.payload, child.state) == ("tests.count", {"parent": parent}, "done")
    assert runs(runtime) == {f"job-{parent}": "1", f"job-{child.id}": "1"}


def test_unknown_kind_is_dead_with_an_error(db, runtime):
    job_id = add(db, "tests.nobody_handles_this")

    assert run_jobs(runtime) == 1

    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.last_error) == (
        "dead",
        1,
        "no handler for job kind 'tests.nobody_handles_this'",
    )


# --- leases ------------------------------------------------------------------------------


def test_claim_takes_a_lease_and_counts_an_attempt(db, runtime, configure):
    configure(job_lease_seconds=120)
    job_id = add(db, "tests.count")

    before = utcnow()
    assert claim(runtime.sessions, runtime.settings, "w1") == [job_id]

    row = job(runtime, job_id)
    assert (row.state, row.locked_by, row.attempts) == ("running", "w1", 1)
    assert before + timedelta(seconds=120) <= row.locked_until <= utcnow() + timedelta(seconds=120)


def test_expired_lease_is_claimed_again(db, runtime):
    job_id = add(db, "tests.count")
    assert claim(runtime.sessions, runtime.settings, "crashed") == [job_id]
    change(db, job_id, locked_until=utcnow() - timedelta(seconds=1))

    assert run_jobs(runtime, worker_id="rescuer") == 1

    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.locked_by) == ("done", 2, "rescuer")
    assert runs(runtime) == {f"job-{job_id}": "1"}


def test_live_lease_is_not_claimed_by_another_worker(db, runtime):
    job_id = add(db, "tests.count")
    assert claim(runtime.sessions, runtime.settings, "busy") == [job_id]

    assert run_jobs(runtime, worker_id="other") == 0

    row = job(runtime, job_id)
    assert (row.state, row.locked_by, row.attempts) == ("running", "busy", 1)


def test_worker_that_lost_its_lease_does_not_run_the_job(db, runtime):
    job_id = add(db, "tests.count")
    assert claim(runtime.sessions, runtime.settings, "slow") == [job_id]
    change(db, job_id, locked_until=utcnow() - timedelta(seconds=1))
    assert run_jobs(runtime, worker_id="rescuer") == 1

    assert run_one(runtime.sessions, runtime.settings, job_id, "slow") is False

    assert runs(runtime) == {f"job-{job_id}": "1"}
    assert job(runtime, job_id).locked_by == "rescuer"


def test_worker_that_lost_its_lease_leaves_the_job_to_its_new_owner(db, runtime):
    job_id = add(db, "tests.count")
    assert claim(runtime.sessions, runtime.settings, "slow") == [job_id]
    change(db, job_id, locked_until=utcnow() - timedelta(seconds=1))
    assert claim(runtime.sessions, runtime.settings, "rescuer") == [job_id]

    assert run_one(runtime.sessions, runtime.settings, job_id, "slow") is False
    assert runs(runtime) == {}
    assert run_one(runtime.sessions, runtime.settings, job_id, "rescuer") is True

    assert runs(runtime) == {f"job-{job_id}": "1"}
    row = job(runtime, job_id)
    assert (row.state, row.attempts, row.locked_by) == ("done", 2, "rescuer")


def test_stopping_gives_back_claimed_jobs_not_yet_started(db, runtime):
    first = add(db, "tests.stop")
    rest = [add(db, "tests.count") for _ in range(2)]
    STOP.clear()

    assert run_jobs(runtime, limit=10, stop=STOP) == 1

    assert job(runtime, first).state == "done"
    assert [(job(runtime, i).state, job(runtime, i).attempts, job(runtime, i).locked_by) for i in rest] == [
        ("queued", 0, None),
        ("queued", 0, None),
    ]


# --- concurrency -------------------------------------------------------------------------


@pytest.mark.committing
def test_two_concurrent_loops_run_each_job_exactly_once(db, runtime):
    with transaction(db):
        ids = [enqueue(db, "tests.count", {"n": n}).id for n in range(200)]
    start = threading.Barrier(2)
    ran: dict[str, int] = {}
    errors: list[BaseException] = []

    def loop(name: str) -> None:
        try:
            start.wait()
            ran[name] = run_due(runtime.sessions, runtime.settings, worker_id=name, limit=5)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(name,)) for name in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)

    assert errors == []
    assert sum(ran.values()) == 200
    assert min(ran.values()) > 0, ran
    rows = all_jobs(runtime)
    assert [j.id for j in rows] == ids
    assert {(j.state, j.attempts, j.last_error) for j in rows} == {("done", 1, None)}
    assert {j.locked_by for j in rows} == {"a", "b"}
    assert runs(runtime) == {f"job-{i}": "1" for i in ids}


# --- worker threads ----------------------------------------------------------------------


@pytest.mark.committing
def test_worker_runs_a_job_on_commit_without_waiting_for_its_poll(db, runtime, configure):
    configure(job_poll_interval=30.0)
    worker = Worker(runtime.sessions, runtime.settings, threads=2)
    worker.start()
    try:
        time.sleep(0.3)  # both threads have looked once and now sleep for 30 s
        job_id = add(db, "tests.count")

        assert wait_for(lambda: job(runtime, job_id).state == "done", timeout=10)
    finally:
        worker.stop()
    assert runs(runtime) == {f"job-{job_id}": "1"}


@pytest.mark.committing
def test_worker_stop_finishes_the_running_job(db, runtime, configure):
    configure(job_poll_interval=0.05)
    SLOW_STARTED.clear()
    worker = Worker(runtime.sessions, runtime.settings, threads=1)
    worker.start()
    try:
        job_id = add(db, "tests.slow", {"seconds": 0.5})
        assert SLOW_STARTED.wait(10)
    finally:
        worker.stop()

    assert [t.name for t in threading.enumerate() if t.name.startswith("kiln-worker-")] == []
    assert job(runtime, job_id).state == "done"
    assert runs(runtime) == {f"job-{job_id}": "1"}


@pytest.mark.committing
def test_serve_runs_in_process_workers_when_configured(db, runtime, settings):
    rt = Runtime(
        settings=settings.model_copy(update={"workers": 1, "job_poll_interval": 0.05}),
        engine=runtime.engine,
        sessions=runtime.sessions,
    )
    with TestClient(create_app(runtime=rt), base_url="http://kiln.test"):
        names = [t.name for t in threading.enumerate() if t.name.startswith("kiln-worker-")]
        job_id = add(db, "tests.count")

        assert wait_for(lambda: job(runtime, job_id).state == "done", timeout=10)
    assert names == ["kiln-worker-0"]
    assert [t.name for t in threading.enumerate() if t.name.startswith("kiln-worker-")] == []


def test_serve_starts_no_workers_when_workers_is_zero(client, settings: Settings):
    assert settings.workers == 0
    assert [t.name for t in threading.enumerate() if t.name.startswith("kiln-worker-")] == []


# --- built-in maintenance ------------------------------------------------------------------


def test_purge_deletes_done_jobs_older_than_asked(db, runtime):
    later = utcnow() + timedelta(days=1)
    old_done, new_done, old_dead, waiting = (add(db, "tests.count", run_at=later) for _ in range(4))
    change(db, old_done, state="done", finished_at=utcnow() - timedelta(days=8))
    change(db, new_done, state="done", finished_at=utcnow() - timedelta(hours=1))
    change(db, old_dead, state="dead", finished_at=utcnow() - timedelta(days=8))
    purge = add(db, "jobs.purge", {"older_than_seconds": 86400})

    assert run_jobs(runtime) == 1

    assert [(j.id, j.state) for j in all_jobs(runtime)] == [
        (new_done, "done"),
        (old_dead, "dead"),
        (waiting, "queued"),
        (purge, "done"),
    ]


def test_purge_can_include_dead_jobs(db, runtime):
    old_dead = add(db, "tests.count", run_at=utcnow() + timedelta(days=1))
    change(db, old_dead, state="dead", finished_at=utcnow() - timedelta(days=8))
    purge = add(db, "jobs.purge", {"older_than_seconds": 86400, "include_dead": True})

    assert run_jobs(runtime) == 1

    assert [j.id for j in all_jobs(runtime)] == [purge]
