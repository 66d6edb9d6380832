"""The SQL statements a request sends, for the tests that hold routes to a statement budget.

What counts is what reaches the engine's `before_cursor_execute` event, transaction control
(BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE) left out: that follows how a session is driven,
not what the route reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from kiln.api import _answers
from kiln.queries import reads

TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")

# A token's use is written at most every ten minutes, by the first request that finds its row
# free (kiln.auth.credentials): the warm-up as a rule, a later call when a lock was held then.
# Either way it is not what the route costs, so it is never counted.
TOKEN_USE = ("SET LOCAL lock_timeout", "UPDATE personal_access_tokens SET last_used_at")


@contextmanager
def recording(engine: Any) -> Iterator[list[str]]:
    """The statements `engine` sends inside the block, transaction control left out."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().upper().startswith(TRANSACTION):
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def statements(
    runtime: Any,
    call: Callable[[], Any],
    *,
    fresh: bool = True,
    warm_up: int = 1,
    leaving_out: Iterable[str] = (),
    status: int = 200,
) -> list[str]:
    """The statements of `call()`, made after `warm_up` calls that are not counted.

    warm_up: the first request with a token records the token's use (a write); what the route
    costs is what it costs afterwards.
    fresh: forget the rows reused while nothing is written (kiln.queries.reads) and the kept
    answers (kiln.api._answers) before the counted call, so that it costs what it costs after
    any write anywhere, the usual case on a busy instance; without it, the counted call
    reuses what the warm-up read, as long as nothing was written since (the cost on an idle
    instance).
    leaving_out: tables whose statements are not the route's cost; only for reads the route
    under test does not make (the call says which and why).
    status: the expected status of every call."""
    for _ in range(warm_up):
        r = call()
        assert r.status_code == status, r.text
    left_out = tuple(leaving_out)
    for attempt in range(2):
        if fresh:
            reads.forget_reused()
            _answers.forget()
        with recording(runtime.engine) as seen:
            r = call()
        assert r.status_code == status, r.text
        # The token's use, when the warm-up found its row locked, is written by this call, and
        # a write ends the reuse of rows for the rest of the request: counted again, once.
        if attempt or not any(s.lstrip().startswith(TOKEN_USE) for s in seen):
            break
    return [
        s for s in seen if not any(table in s for table in left_out) and not s.lstrip().startswith(TOKEN_USE)
    ]


def count(runtime: Any, call: Callable[[], Any], **options: Any) -> int:
    """How many statements `statements` finds (same options)."""
    return len(statements(runtime, call, **options))
