"""kiln's Prometheus metrics and the per-request context their recorders share.

Kept free of the database and of HTTP so that every layer (git included) may record here;
kiln.observability reads and serves them."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from prometheus_client import Counter, Histogram

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_STATEMENT_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
_GIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)

HTTP_REQUESTS = Counter(
    "kiln_http_requests", "HTTP requests answered, by route template, method and status.",
    ["route", "method", "status"],
)  # fmt: skip
HTTP_LATENCY = Histogram(
    "kiln_http_request_duration_seconds", "Time from request to the last byte of the answer, by route.",
    ["route", "method"], buckets=_LATENCY_BUCKETS,
)  # fmt: skip
HTTP_STATEMENTS = Counter(
    "kiln_http_db_statements", "Database statements run by requests, by route template.", ["route"]
)
DB_STATEMENTS = Histogram(
    "kiln_db_statement_duration_seconds",
    "Database statements (count) and their time, by origin: a request, or the background (jobs).",
    ["origin"], buckets=_STATEMENT_BUCKETS,
)  # fmt: skip
GIT_PROCESSES = Histogram(
    "kiln_git_process_duration_seconds", "git child processes (count) and their lifetime, by git command.",
    ["command"], buckets=_GIT_BUCKETS,
)  # fmt: skip


class RequestContext:
    """One request's id and statement tally. asyncio.to_thread copies the context into its
    worker thread, so statements a request runs in a thread count for it too."""

    __slots__ = ("db_seconds", "request_id", "statements")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.statements = 0
        self.db_seconds = 0.0


CURRENT: ContextVar[RequestContext | None] = ContextVar("kiln_request", default=None)


def observe_git(command: str, seconds: float) -> None:
    GIT_PROCESSES.labels(command).observe(seconds)


# Label children made on first use (not at import): `kiln serve` may switch this process to
# multiprocess values after importing this module, before anything is measured.
_statement_children: dict[bool, Any] = {}


def observe_statement(seconds: float, in_request: bool) -> None:
    child = _statement_children.get(in_request)
    if child is None:
        child = _statement_children[in_request] = DB_STATEMENTS.labels(
            "request" if in_request else "background"
        )
    child.observe(seconds)
