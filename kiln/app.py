"""create_app(settings): the ASGI application, wrapped for raw-path routing and HEAD."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from litestar import Litestar, Router
from litestar.datastructures import State

from kiln.api import API_PREFIX, API_ROUTES, ROOT_ROUTES
from kiln.api._asgi import Admission, KilnASGI
from kiln.api._deps import DEPENDENCIES
from kiln.api._errors import HANDLERS
from kiln.api._observe import observe
from kiln.api._read_loops import ReadLoops
from kiln.config import SERVE_PARENT_ENV, Settings, load_settings
from kiln.jobs import Worker
from kiln.runtime import Runtime
from kiln.services import job_tokens

log = logging.getLogger("kiln")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def create_app(
    settings: Settings | None = None, *, runtime: Runtime | None = None, exit_on_overrun: bool = False
) -> Any:
    """`exit_on_overrun`: a `kiln serve` process ends itself when its shutdown overruns the
    deadline (never set in tests, whose process outlives the app)."""
    rt = runtime or Runtime.build(settings or load_settings())
    if rt.job_token_resolver is None:
        # CI job tokens (CI_JOB_TOKEN) are good for git and the API while their job runs.
        rt.job_token_resolver = job_tokens.resolve
    workers: list[Worker] = []
    s = rt.settings
    admission = Admission(
        s.db_request_limit, s.request_queue, s.request_queue_timeout, s.max_loop_lag, s.retry_after_seconds
    )
    read_loops = ReadLoops(s.read_loop_count)

    async def on_startup() -> None:
        loop = asyncio.get_running_loop()
        admission.watch(loop)
        # in_thread's pool: bounded, so work that waits queues instead of growing threads.
        # One pool for the serving loop and every read loop: a read loop's own default pool
        # would grow threads past the bound.
        executor = ThreadPoolExecutor(
            max_workers=max(1, rt.settings.request_threads), thread_name_prefix="kiln-request"
        )
        loop.set_default_executor(executor)
        read_loops.start(executor)
        if rt.settings.workers > 0:
            worker = Worker(rt.sessions, rt.settings, threads=rt.settings.workers)
            worker.start()
            workers.append(worker)
        # Everything loaded so far (routes, models, compiled statements, job handlers) lives
        # for the whole process: keep it out of the cyclic collector's full passes, which
        # showed as latency spikes under load.
        gc.collect()
        gc.freeze()
        rt.ready = True

    async def on_shutdown() -> None:
        rt.ready = False
        admission.unwatch()
        deadline = rt.settings.shutdown_timeout
        if exit_on_overrun:
            # Whatever still hangs past the deadline (a git process, a thread in a request)
            # does not keep the serving process alive: it exits all the same.
            _exit_after(deadline + 5.0)
        while workers:
            # Lets the running jobs finish, up to the deadline; off the event loop, which still
            # serves the last answers.
            await asyncio.to_thread(workers.pop().stop, deadline)
        await asyncio.to_thread(read_loops.stop, deadline)
        rt.engine.dispose()

    litestar = Litestar(
        route_handlers=[Router(API_PREFIX, route_handlers=API_ROUTES), *ROOT_ROUTES],
        dependencies=DEPENDENCIES,
        exception_handlers=HANDLERS,
        openapi_config=None,
        on_startup=[on_startup],
        on_shutdown=[on_shutdown],
        state=State({"kiln": rt}),
        # KilnASGI holds bodies to max_request_body_bytes, except git's streamed packs.
        request_max_body_size=None,
        logging_config=None,
        debug=False,
    )
    return observe(KilnASGI(litestar, s.max_request_body_bytes, admission, read_loops), rt)


def _exit_after(seconds: float) -> None:
    """A daemon timer that ends the process once shutdown has overrun its deadline."""

    def exit_now() -> None:
        log.error("shutdown took longer than %.0fs; exiting", seconds)
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(seconds, exit_now)
    timer.daemon = True
    timer.start()


def create_app_from_env() -> Any:
    """uvicorn factory for multi-process serving: settings from KILN_* each process."""
    parent = os.environ.get(SERVE_PARENT_ENV)
    if parent:
        _end_with_parent(int(parent))
    return create_app(load_settings(), exit_on_overrun=True)


def _end_with_parent(parent: int) -> None:
    """An HTTP process gets SIGTERM when `kiln serve` ends, even by SIGKILL: no orphan keeps
    the port or the database."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != parent:  # it ended before we asked
        os.kill(os.getpid(), signal.SIGTERM)
