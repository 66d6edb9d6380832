"""create_app(settings): the ASGI application, wrapped for raw-path routing and HEAD."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

from litestar import Litestar, Router
from litestar.datastructures import State

from kiln.api import API_PREFIX, API_ROUTES, ROOT_ROUTES
from kiln.api._asgi import KilnASGI
from kiln.api._deps import DEPENDENCIES
from kiln.api._errors import HANDLERS
from kiln.api._observe import observe
from kiln.config import Settings, load_settings
from kiln.jobs import Worker
from kiln.runtime import Runtime

log = logging.getLogger("kiln")


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None) -> KilnASGI:
    rt = runtime or Runtime.build(settings or load_settings())
    workers: list[Worker] = []

    async def on_startup() -> None:
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
        while workers:
            # Lets the running jobs finish; off the event loop, which still serves the last answers.
            await asyncio.to_thread(workers.pop().stop)
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
    return observe(KilnASGI(litestar, rt.settings.max_request_body_bytes), rt)


def create_app_from_env() -> Any:
    """uvicorn factory for multi-process serving: settings from KILN_* each process."""
    return create_app(load_settings())
