"""A database writer held by another thread, for tests of what must not wait for it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.sql.expression import Update

from kiln.db import transaction
from kiln.runtime import Runtime

# Longer than any test waits for anything: a holder is always released by its test.
STUCK_S = 30.0


@contextmanager
def writer_held(runtime: Runtime, change: Update) -> Iterator[None]:
    """Another thread's write transaction, open (and holding what `change` locks) until the
    block ends: the writer a job or a git write holds while the requests come in."""
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with runtime.sessions() as s, transaction(s):
            s.execute(change)
            holding.set()
            done.wait(STUCK_S)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(STUCK_S)
        yield
    finally:
        done.set()
        holder.join()
