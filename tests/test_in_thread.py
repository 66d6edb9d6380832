"""Work a request runs on a thread (kiln.api._deps.in_thread) outlives no cancellation of
the request: the cancellation waits for the thread to return, so the request's cleanup
(closing its session) never runs while the thread still uses the session."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kiln.api._deps import in_thread
from tests.threads import Blocked, cancel_while_blocked


@pytest.mark.parametrize("cancellations", [1, 3])
def test_a_cancelled_request_goes_on_only_once_its_thread_has_returned(cancellations):
    blocked = Blocked()
    asyncio.run(cancel_while_blocked(in_thread(blocked.block), blocked, cancellations))


def test_a_call_that_fails_after_the_cancellation_leaves_no_unretrieved_error(caplog):
    def failing(started: threading.Event, release: threading.Event) -> None:
        started.set()
        release.wait(10)
        raise RuntimeError("after the cancellation")

    async def scenario() -> None:
        started, release = threading.Event(), threading.Event()
        request = asyncio.ensure_future(in_thread(failing, started, release))
        await asyncio.to_thread(started.wait, 10)
        request.cancel()
        await asyncio.sleep(0.02)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await request

    asyncio.run(scenario())
    assert "never retrieved" not in caplog.text


def test_a_call_that_is_not_cancelled_answers_as_before():
    async def scenario() -> str:
        return await in_thread(lambda a, b: f"{a}{b}", "x", b="y")

    assert asyncio.run(scenario()) == "xy"
