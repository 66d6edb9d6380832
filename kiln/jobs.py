"""The durable job queue: enqueue in the caller's transaction, claim, run, retry.

A job is a row written in the same transaction as the change that caused it (a
transactional outbox), so a crash loses none. Workers claim due rows with
`FOR UPDATE SKIP LOCKED` on PostgreSQL, or inside SQLite's single write transaction, and
own them for a lease: a worker that dies leaves its jobs to be claimed again once the
lease runs out. A handler runs in one transaction with the job's completion, so its
database work happens exactly once; work outside the database (files, HTTP) may repeat
after a crash and must be idempotent.

Tests and workers drain the queue through the same function, `run_due`."""

from __future__ import annotations

import importlib
import json
import logging
import os
import pkgutil
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from sqlalchemy import and_, delete, event, or_, select, update
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.sql.elements import ColumnElement

from kiln.config import Settings
from kiln.db import is_sqlite, transaction
from kiln.models.base import utcnow
from kiln.models.jobs import DEAD, DONE, QUEUED, RUNNING, Job

log = logging.getLogger("kiln.jobs")

# Enough of a traceback's last line to tell failures apart; the full one goes to the log.
_ERROR_LIMIT = 4000
_KIND_LIMIT = 64  # the width of jobs.kind
# Set on a session by enqueue; a running Worker wakes when that session commits.
_ENQUEUED = "kiln_jobs_enqueued"


@dataclass(frozen=True, slots=True)
class JobInfo:
    """What a handler may know about its job; the row itself stays the queue's business."""

    id: int
    kind: str
    attempts: int
    max_attempts: int


@dataclass(frozen=True, slots=True)
class JobContext:
    """`db` is inside the transaction that also marks the job done: commit nothing yourself."""

    db: Session
    settings: Settings
    job: JobInfo


Handler = Callable[[JobContext, dict[str, Any]], None]

_handlers: dict[str, Handler] = {}


def handler(kind: str) -> Callable[[Handler], Handler]:
    """Register the function that runs jobs of `kind`.

    It runs inside a transaction that commits together with the job being marked done, and
    rolls back if it raises (the job is then retried with backoff): its database effects
    happen exactly once. Anything it does outside the database (removing files, calling out
    over HTTP) can run again after a crash or a failed commit, so that part must be
    idempotent. Handlers live in kiln.services modules, which every worker imports."""

    def register(fn: Handler) -> Handler:
        known = _handlers.get(kind)
        if known is not None and (known.__module__, known.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(
                f"job kind {kind!r} already has a handler: {known.__module__}.{known.__qualname__}"
            )
        _handlers[kind] = fn
        return fn

    return register


@cache
def load_handlers() -> None:
    """Import every service module so that a process that never imports the API (`kiln
    worker`) knows every kind the API enqueues."""
    import kiln.services

    for info in pkgutil.walk_packages(kiln.services.__path__, "kiln.services."):
        importlib.import_module(info.name)


def enqueue(
    db: Session,
    kind: str,
    payload: dict[str, Any],
    *,
    run_at: datetime | None = None,
    max_attempts: int = 10,
) -> Job:
    """Add a job to the caller's unit of work: it exists if and only if that commits.

    Must be called inside `with transaction(db)`; the payload must be JSON (what the
    handler receives is the JSON round trip of it)."""
    if not db.info.get("tx_depth"):
        raise RuntimeError("enqueue a job inside `with transaction(db)`, with the change that causes it")
    if not 0 < len(kind) <= _KIND_LIMIT:
        raise ValueError(f"a job kind has 1 to {_KIND_LIMIT} characters: {kind!r}")
    if not isinstance(payload, dict):
        raise TypeError(f"a job payload is a dict, not {type(payload).__name__}")
    try:
        stored = json.loads(json.dumps(payload))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"job payload is not JSON: {exc}") from None
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    job = Job(
        kind=kind,
        payload=stored,
        state=QUEUED,
        run_at=run_at or utcnow(),
        attempts=0,
        max_attempts=max_attempts,
    )
    db.add(job)
    db.flush()
    db.info[_ENQUEUED] = True
    return job


def retry_delay(settings: Settings, attempts: int) -> timedelta:
    """Exponential backoff after the `attempts`-th failure, capped."""
    seconds = settings.job_backoff_seconds * 2 ** min(max(attempts - 1, 0), 32)
    return timedelta(seconds=min(seconds, settings.job_backoff_max_seconds))


def new_worker_id() -> str:
    """Unique per thread and per process start, readable in the table: host:pid:random."""
    return f"{socket.gethostname()[:80]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _due(now: datetime) -> ColumnElement[bool]:
    return or_(
        and_(Job.state == QUEUED, Job.run_at <= now),
        and_(Job.state == RUNNING, Job.locked_until < now),
    )


def claim(sessions: sessionmaker[Session], settings: Settings, worker_id: str, limit: int = 10) -> list[int]:
    """Take up to `limit` due jobs (or jobs whose lease ran out) for `worker_id`, oldest
    first, and return their ids; each claim counts as an attempt."""
    with sessions() as db:
        sqlite = is_sqlite(db)
        if sqlite:
            # Idle polling must not take the one write lock that API requests wait for.
            found = db.scalar(select(Job.id).where(_due(utcnow())).limit(1))
            db.rollback()
            if found is None:
                return []
        with transaction(db):
            now = utcnow()
            stmt = select(Job.id).where(_due(now)).order_by(Job.run_at, Job.id).limit(limit)
            if not sqlite:
                stmt = stmt.with_for_update(skip_locked=True)
            ids = list(db.scalars(stmt))
            if ids:
                db.execute(
                    update(Job)
                    .where(Job.id.in_(ids))
                    .values(
                        state=RUNNING,
                        locked_by=worker_id,
                        locked_until=now + timedelta(seconds=settings.job_lease_seconds),
                        attempts=Job.attempts + 1,
                    )
                    .execution_options(synchronize_session=False)
                )
    return ids


def _own(db: Session, job_id: int, worker_id: str) -> Job | None:
    """The job, locked for this transaction, if it is still claimed by `worker_id`. Holding
    the row lock while the handler runs also keeps other PostgreSQL workers' SKIP LOCKED
    claims off it should the lease run out meanwhile."""
    stmt = select(Job).where(Job.id == job_id).execution_options(populate_existing=True)
    if not is_sqlite(db):
        stmt = stmt.with_for_update()
    job = db.scalars(stmt).one_or_none()
    if job is None or job.state != RUNNING or job.locked_by != worker_id:
        return None
    return job


def run_one(sessions: sessionmaker[Session], settings: Settings, job_id: int, worker_id: str) -> bool:
    """Run a job claimed by `worker_id`; False if it is no longer ours (its lease ran out and
    another worker took it)."""
    with sessions() as db:
        try:
            with transaction(db):
                job = _own(db, job_id, worker_id)
                if job is None:
                    log.info("job %s is no longer held by %s; skipped", job_id, worker_id)
                    return False
                fn = _handlers.get(job.kind)
                now = utcnow()
                if fn is None:
                    log.error("job %s: no handler for kind %r; marked dead", job.id, job.kind)
                    job.state, job.finished_at, job.locked_until = DEAD, now, None
                    job.last_error = f"no handler for job kind {job.kind!r}"
                    return True
                info = JobInfo(id=job.id, kind=job.kind, attempts=job.attempts, max_attempts=job.max_attempts)
                fn(JobContext(db=db, settings=settings, job=info), json.loads(json.dumps(job.payload)))
                job.state, job.finished_at, job.locked_until = DONE, utcnow(), None
            return True
        except Exception as exc:
            _failed(db, settings, job_id, worker_id, exc)
            return True


def _failed(db: Session, settings: Settings, job_id: int, worker_id: str, exc: Exception) -> None:
    """Record a failure in a transaction of its own (the handler's was rolled back): retry
    later, or give up after max_attempts."""
    with transaction(db):
        job = _own(db, job_id, worker_id)
        if job is None:
            log.warning("job %s failed but is no longer held by %s", job_id, worker_id, exc_info=exc)
            return
        job.last_error = repr(exc)[:_ERROR_LIMIT]
        now = utcnow()
        if job.attempts >= job.max_attempts:
            job.state, job.finished_at, job.locked_until = DEAD, now, None
            log.error(
                "job %s (%s) failed on attempt %s of %s; giving up",
                job.id,
                job.kind,
                job.attempts,
                job.max_attempts,
                exc_info=exc,
            )
            return
        delay = retry_delay(settings, job.attempts)
        job.state, job.run_at, job.locked_by, job.locked_until = QUEUED, now + delay, None, None
        log.warning(
            "job %s (%s) failed on attempt %s of %s; retrying in %ss",
            job.id,
            job.kind,
            job.attempts,
            job.max_attempts,
            delay.total_seconds(),
            exc_info=exc,
        )


def _release(sessions: sessionmaker[Session], ids: list[int], worker_id: str) -> None:
    """Give back claimed jobs that were never started, so a stopping worker leaves them due
    now instead of after its lease."""
    with sessions() as db, transaction(db):
        db.execute(
            update(Job)
            .where(Job.id.in_(ids), Job.state == RUNNING, Job.locked_by == worker_id)
            .values(state=QUEUED, locked_by=None, locked_until=None, attempts=Job.attempts - 1)
            .execution_options(synchronize_session=False)
        )


def run_due(
    sessions: sessionmaker[Session],
    settings: Settings,
    *,
    worker_id: str | None = None,
    limit: int = 10,
    stop: threading.Event | None = None,
) -> int:
    """Claim and run due jobs until none is due (or `stop` is set); returns how many runs
    were made, failed ones included. Jobs enqueued by handlers, and retries whose backoff
    has passed, are run in the same call."""
    load_handlers()
    worker_id = worker_id or new_worker_id()
    ran = 0
    while stop is None or not stop.is_set():
        ids = claim(sessions, settings, worker_id, limit)
        if not ids:
            break
        for n, job_id in enumerate(ids):
            if stop is not None and stop.is_set():
                _release(sessions, ids[n:], worker_id)
                return ran
            if run_one(sessions, settings, job_id, worker_id):
                ran += 1
    return ran


class Worker:
    """Threads that poll the queue, inside `kiln serve` or as `kiln worker`.

    Each thread runs `run_due`, then sleeps `job_poll_interval` seconds or until `notify()`;
    a commit that enqueued a job through `sessions` notifies by itself. `stop()` lets every
    thread finish the job it is running."""

    def __init__(
        self, sessions: sessionmaker[Session], settings: Settings, *, threads: int = 1, batch: int = 1
    ) -> None:
        self.sessions = sessions
        self.settings = settings
        self.size = max(threads, 1)
        # One job per claim: a long job then delays no claimed-but-waiting job behind it.
        self.batch = batch
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        load_handlers()
        self._stopping.clear()
        event.listen(self.sessions, "after_commit", self._after_commit)
        event.listen(self.sessions, "after_rollback", self._after_rollback)
        for n in range(self.size):
            thread = threading.Thread(target=self._loop, name=f"kiln-worker-{n}", daemon=True)
            self._threads.append(thread)
            thread.start()
        log.info("job worker started with %s thread(s)", self.size)

    def notify(self) -> None:
        """Wake the threads now instead of at the next poll."""
        self._wake.set()

    def stop(self, timeout: float | None = None) -> None:
        """Stop polling and wait until every thread has finished its current job."""
        self._stopping.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads = [t for t in self._threads if t.is_alive()]
        if event.contains(self.sessions, "after_commit", self._after_commit):
            event.remove(self.sessions, "after_commit", self._after_commit)
            event.remove(self.sessions, "after_rollback", self._after_rollback)
        log.info("job worker stopped")

    def _after_commit(self, session: Session) -> None:
        if session.info.pop(_ENQUEUED, False):
            self._wake.set()

    def _after_rollback(self, session: Session) -> None:
        session.info.pop(_ENQUEUED, None)

    def _loop(self) -> None:
        worker_id = new_worker_id()
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                run_due(
                    self.sessions, self.settings, worker_id=worker_id, limit=self.batch, stop=self._stopping
                )
            except Exception:
                # The database went away or similar: keep the thread, try again after a pause.
                log.exception("job worker %s: polling failed", worker_id)
            self._wake.wait(self.settings.job_poll_interval)


@handler("jobs.purge")
def _purge(ctx: JobContext, payload: dict[str, Any]) -> None:
    """Keep the table small: delete jobs done more than `older_than_seconds` ago (default a
    week); dead jobs stay for an operator to look at unless `include_dead` is true."""
    age = timedelta(seconds=float(payload.get("older_than_seconds", 7 * 24 * 3600)))
    states = [DONE, DEAD] if payload.get("include_dead") else [DONE]
    ctx.db.execute(
        delete(Job)
        .where(Job.state.in_(states), Job.finished_at < utcnow() - age)
        .execution_options(synchronize_session=False)
    )
