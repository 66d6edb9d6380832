"""What an operator sees of a running kiln, outside HTTP: the Prometheus metrics, the
per-request context (request id, statement tally) that log records and SQL events read, and
the set-up `kiln serve` does before its processes start.

Metrics (all prefixed `kiln_`): HTTP requests and latency by route template (recorded by
kiln.api._observe), database statements and their time (engine events, see `instrument`),
git processes and their time (kiln.git.timed), and the job queue read at scrape time.
With several HTTP processes, prometheus_client's multiprocess mode sums what each wrote into
PROMETHEUS_MULTIPROC_DIR (`prepare_serving` sets it before the processes start)."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from time import perf_counter
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, generate_latest, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector
from sqlalchemy import Engine, case, event, func, select
from sqlalchemy.orm import Session, sessionmaker

from kiln import policy
from kiln.errors import NotFound
from kiln.metrics import CONTENT_TYPE, CURRENT, observe_statement
from kiln.models.jobs import QUEUED, RUNNING, Job

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
ACCESS_LOGGER = "kiln.access"
# How `kiln serve` set up its logging, for its HTTP processes to do the same.
_SERVE_LOG_ENV = "KILN_SERVE_LOGGING"

# Database statements


def instrument(engine: Engine | type[Engine]) -> None:
    """Count and time every statement the engine runs (with the Engine class: every engine
    of this process, as `kiln serve` does); once."""
    if event.contains(Engine, "after_cursor_execute", _after_statement) or event.contains(
        engine, "after_cursor_execute", _after_statement
    ):
        return
    event.listen(engine, "before_cursor_execute", _before_statement)
    event.listen(engine, "after_cursor_execute", _after_statement)


def _before_statement(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
    conn.info["kiln_t0"] = perf_counter()


def _after_statement(conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool) -> None:
    now = perf_counter()
    elapsed = now - conn.info.pop("kiln_t0", now)
    request = CURRENT.get()
    observe_statement(elapsed, request is not None)
    if request is not None:
        request.statements += 1
        request.db_seconds += elapsed


# The job queue, read when scraped


class JobQueue(Collector):
    """Queue depth and the age of the oldest job that is due, from the jobs table: the same
    on every process and node, so it is read at scrape time rather than counted."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def collect(self) -> Iterator[Metric]:
        queued, due, running, oldest_due = job_queue(self.sessions)
        yield GaugeMetricFamily("kiln_jobs_queued", "Jobs waiting, due now or later (retries).", queued)
        yield GaugeMetricFamily("kiln_jobs_due", "Jobs waiting whose time has come.", due)
        yield GaugeMetricFamily("kiln_jobs_running", "Jobs claimed by a worker.", running)
        yield GaugeMetricFamily(
            "kiln_jobs_oldest_due_age_seconds",
            "How long the oldest due job has waited (0: none).",
            oldest_due,
        )


def job_queue(sessions: sessionmaker[Session]) -> tuple[int, int, int, float]:
    """(queued, due, running, age in seconds of the oldest due job) in one statement."""
    now = datetime.now(UTC)
    is_due = Job.run_at <= now
    statement = select(
        func.count().filter(Job.state == QUEUED),
        func.count().filter(Job.state == QUEUED, is_due),
        func.count().filter(Job.state == RUNNING),
        func.min(case((is_due, Job.run_at))).filter(Job.state == QUEUED),
    ).where(Job.state.in_((QUEUED, RUNNING)))
    with sessions() as db:
        queued, due, running, oldest = db.execute(statement).one()
    age = 0.0
    if oldest is not None:
        if oldest.tzinfo is None:
            oldest = oldest.replace(tzinfo=UTC)
        age = max((now - oldest).total_seconds(), 0.0)
    return int(queued or 0), int(due or 0), int(running or 0), age


# Exposition


def multiprocess() -> bool:
    """Whether this process writes its metrics to files (decided by prometheus_client when it
    was imported, from PROMETHEUS_MULTIPROC_DIR)."""
    return values.ValueClass is not values.MutexValue


def exposition(sessions: sessionmaker[Session]) -> bytes:
    """The Prometheus text of this kiln: every process's metrics and the job queue."""
    if multiprocess():
        registry = CollectorRegistry(auto_describe=False)
        MultiProcessCollector(registry)
        base = generate_latest(registry)
    else:
        base = generate_latest(REGISTRY)
    jobs = CollectorRegistry(auto_describe=False)
    jobs.register(JobQueue(sessions))
    return base + generate_latest(jobs)


def scrape(address: str | None, networks: Sequence[Any], sessions: sessionmaker[Session]) -> bytes:
    """/-/metrics, for `kiln serve` and `kiln worker` alike: the exposition, to the monitoring
    allowlist only (GitLab's); NotFound for anyone else."""
    if not policy.may_scrape(address, networks):
        raise NotFound()
    return exposition(sessions)


class _MetricsHandler(BaseHTTPRequestHandler):
    server: _MetricsServer

    def do_GET(self) -> None:
        try:
            if self.path.split("?", 1)[0] != METRICS_PATH:
                raise NotFound()
            body = scrape(self.client_address[0], self.server.networks, self.server.sessions)
        except NotFound as error:
            self._answer(error.status, orjson.dumps(error.body()), "application/json")
            return
        self._answer(200, body, CONTENT_TYPE)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return  # a scrape every few seconds is no news


class _MetricsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], sessions: sessionmaker[Session], networks: Sequence[Any]
    ) -> None:
        super().__init__(address, _MetricsHandler)
        self.sessions = sessions
        self.networks = networks


METRICS_PATH = "/-/metrics"


def serve_metrics(
    host: str, port: int, sessions: sessionmaker[Session], networks: Sequence[Any]
) -> ThreadingHTTPServer:
    """`kiln worker`'s metrics at /-/metrics on (host, port), answered on threads of their
    own: its statements and git processes, and the job queue, for the monitoring allowlist
    (`networks`) as `kiln serve`'s are. Port 0 picks a free one (server_address says which)."""
    server = _MetricsServer((host, port), sessions, networks)
    threading.Thread(target=server.serve_forever, name="kiln-metrics", daemon=True).start()
    return server


# Logs


class _RequestIdRecords:
    """Every log record gets `request_id`: the id of the request it was written for, or None."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.inner(*args, **kwargs)
        request = CURRENT.get()
        record.request_id = request.request_id if request is not None else None
        return record


def tag_log_records() -> None:
    """Once per process: request ids on log records (an error logged while answering names
    the request it belongs to)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RequestIdRecords):
        logging.setLogRecordFactory(_RequestIdRecords(factory))


class _Tagged(logging.Formatter):
    """The handler's format with `[request_id=…]` before the message of a request's records."""

    def __init__(self, inner: logging.Formatter) -> None:
        fmt = inner._fmt or "%(message)s"
        super().__init__(fmt.replace("%(message)s", "%(request_tag)s%(message)s"), inner.datefmt)

    def format(self, record: logging.LogRecord) -> str:
        rid = getattr(record, "request_id", None)
        record.request_tag = f"[request_id={rid}] " if rid else ""
        return super().format(record)


def prepare_serving(data_dir: Path, processes: int) -> None:
    """What `kiln serve` sets up before its HTTP processes start: the access log as bare JSON
    lines on stderr, request ids in the other log lines, and, with several processes, a fresh
    directory of this run for the metric files every process writes (this one too: its job
    workers run statements and git). The HTTP processes inherit both through the environment
    and set themselves up the same way (`join_serving`, from create_app)."""
    root = logging.getLogger()
    fmt = next((h.formatter._fmt for h in root.handlers if h.formatter and h.formatter._fmt), None)
    os.environ[_SERVE_LOG_ENV] = orjson.dumps({"format": fmt, "level": root.level}).decode()
    _configure_logs()
    # The job workers of this process use an engine of their own.
    instrument(Engine)
    if processes > 1:
        os.environ[MULTIPROC_ENV] = str(fresh_metrics_dir(data_dir))
        # prometheus_client chose in-memory values when it was imported; the metrics this
        # process creates from now on (every labelled child) go to files like the others'.
        values.ValueClass = values.get_value_class()


def join_serving() -> None:
    """In an HTTP process of `kiln serve`: its logging, as the serving process set it up."""
    if _SERVE_LOG_ENV in os.environ:
        _configure_logs()


def _configure_logs() -> None:
    tag_log_records()
    root = logging.getLogger()
    if not root.handlers:  # a fresh HTTP process: logging as its parent's
        wanted = orjson.loads(os.environ.get(_SERVE_LOG_ENV, "{}"))
        logging.basicConfig(level=wanted.get("level") or logging.INFO, format=wanted.get("format"))
    for handler in root.handlers:
        if handler.formatter is not None and not isinstance(handler.formatter, _Tagged):
            handler.setFormatter(_Tagged(handler.formatter))
    access = logging.getLogger(ACCESS_LOGGER)
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def fresh_metrics_dir(data_dir: Path) -> Path:
    """`<data dir>/metrics/<pid>`, emptied; directories of servers no longer running go (a
    data dir may be shared by several servers)."""
    root = data_dir / "metrics"
    root.mkdir(parents=True, exist_ok=True)
    for old in root.iterdir():
        if old.name.isdigit() and not _alive(int(old.name)):
            shutil.rmtree(old, ignore_errors=True)
    mine = root / str(os.getpid())
    shutil.rmtree(mine, ignore_errors=True)
    mine.mkdir()
    return mine


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
