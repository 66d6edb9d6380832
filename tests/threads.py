"""Work blocked in its thread while its request is cancelled, for tests of what the
cancellation must wait for (kiln.api._deps.outlast_cancellation)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from typing import Any

import pytest

# Longer than any test waits for anything: blocked work is always released by its test.
STUCK_S = 10.0


class Blocked:
    """Work that blocks its thread until released, as a statement the database is still
    working on does; `ended` says whether it has returned."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.ended: list[str] = []

    def block(self) -> str:
        self.started.set()
        self.release.wait(STUCK_S)
        self.ended.append("ended")
        return "result"


async def cancel_while_blocked(request: Awaitable[Any], blocked: Blocked, cancellations: int = 1) -> None:
    """Cancels `request` (`cancellations` times) once `blocked` has started: the request goes
    on only once the work has ended, and then raises its cancellation."""
    task = asyncio.ensure_future(request)
    assert await asyncio.to_thread(blocked.started.wait, STUCK_S)
    for _ in range(cancellations):
        task.cancel()
        await asyncio.sleep(0.02)
    assert not task.done()  # still waiting for the work
    assert blocked.ended == []
    blocked.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert blocked.ended == ["ended"]
