"""Reads on PostgreSQL run on event loops of their own threads.

The database driver blocks its thread while PostgreSQL works on a statement. On the serving
event loop that wait stalled every other request, so a page whose statements keep the
server busy for milliseconds (a member's project list: its count, its views) served one
request at a time however many came. Each read loop runs one request at a time; while its
thread waits on the database (the GIL released), the serving loop and the other read loops
go on. The serving loop keeps everything else: admission, the socket, writes (they wait on
the database's writer through `in_thread`), git's smart HTTP. SQLite answers from this
process's memory and disk without a server to wait on: its reads stay on the serving loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kiln.api._deps import outlast_cancellation

Scope = dict[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class ReadLoops:
    def __init__(self, count: int) -> None:
        self.count = count
        self._loops: list[asyncio.AbstractEventLoop] = []
        self._threads: list[threading.Thread] = []
        self._busy: list[int] = []

    def start(self, executor: ThreadPoolExecutor) -> None:
        """`executor`: the serving loop's bounded pool, which `in_thread` on a read loop uses
        too."""
        for n in range(self.count):
            loop = asyncio.new_event_loop()
            loop.set_default_executor(executor)
            thread = threading.Thread(target=loop.run_forever, name=f"kiln-read-{n}", daemon=True)
            thread.start()
            self._loops.append(loop)
            self._threads.append(thread)
            self._busy.append(0)

    def stop(self, timeout: float) -> None:
        """The loops stop unclosed: closing one would shut the shared pool down."""
        for loop in self._loops:
            loop.call_soon_threadsafe(loop.stop)
        for thread in self._threads:
            thread.join(timeout)
        self._loops, self._threads, self._busy = [], [], []

    @property
    def running(self) -> bool:
        return bool(self._loops)

    async def run(self, app: ASGIApp, scope: Scope, receive: Any, send: Any) -> None:
        """`app` for this request on the least busy read loop; its messages cross back to
        the serving loop, where the connection lives."""
        serving = asyncio.get_running_loop()
        n = min(range(len(self._loops)), key=self._busy.__getitem__)
        loop = self._loops[n]

        async def receive_here() -> Any:
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(receive(), serving))

        held: list[Any] = []

        async def send_both(start: Any, message: Any) -> None:
            await send(start)
            await send(message)

        async def send_here(message: Any) -> None:
            # The start of an answer waits for its first body message: one crossing for both.
            if message["type"] == "http.response.start":
                held.append(message)
                return
            sending = send_both(held.pop(), message) if held else send(message)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(sending, serving))

        ended = serving.create_future()

        async def answer() -> None:
            try:
                await app(scope, receive_here, send_here)
            finally:
                serving.call_soon_threadsafe(_end, ended)

        self._busy[n] += 1
        try:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(answer(), loop))
        except asyncio.CancelledError:
            # The read loop's task is cancelled too, but takes effect only at its next await:
            # a thread blocked in the driver goes on. The request's cleanup (closing its
            # session) waits until the read has really ended.
            await outlast_cancellation(ended)
            raise
        finally:
            self._busy[n] -= 1
        if held:  # an answer without a body message
            await send(held.pop())


def _end(ended: asyncio.Future[None]) -> None:
    if not ended.done():
        ended.set_result(None)
