"""The reference: a bare Litestar route that reads one user row and renders it with orjson.

Served by uvicorn exactly like `kiln serve` (uvloop, httptools, one process), so the gap
between kiln and this route is what kiln's own layers cost. The database comes from
BENCH_DATABASE_URL (the same file or server kiln uses)."""

from __future__ import annotations

import os
import warnings
from typing import Any

import orjson
from litestar import Litestar, Response, get
from litestar.datastructures import State
from sqlalchemy import Engine, MetaData, Table, create_engine, select
from sqlalchemy.exc import SAWarning

DATABASE_URL_ENV = "BENCH_DATABASE_URL"


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        return create_engine(url, connect_args={"check_same_thread": False})
    return create_engine(url, pool_size=10)


@get("/users/{user_id:int}")
async def read_user(user_id: int, state: State) -> Response[bytes]:
    # Blocking call on the event loop, as kiln's handlers do: same execution model.
    engine: Engine = state.engine
    users: Table = state.users
    names: tuple[str, ...] = state.names
    with engine.connect() as conn:
        row = conn.execute(select(users).where(users.c.id == user_id)).first()
    if row is None:
        return Response(b'{"message":"404 User Not Found"}', status_code=404, media_type="application/json")
    return Response(orjson.dumps(dict(zip(names, row, strict=True))), media_type="application/json")


def create_app() -> Litestar:
    """uvicorn factory: reflect `users` once so each request only runs the select."""
    engine = make_engine(os.environ[DATABASE_URL_ENV])
    with warnings.catch_warnings():
        # Expression indexes (lower(username)) cannot be reflected; the select does not need them.
        warnings.simplefilter("ignore", SAWarning)
        users = Table("users", MetaData(), autoload_with=engine)
    # Plain str keys: orjson refuses the str subclass SQLAlchemy names columns with.
    names = tuple(str(column.name) for column in users.columns)

    async def on_shutdown() -> None:
        engine.dispose()

    state: dict[str, Any] = {"engine": engine, "users": users, "names": names}
    return Litestar(
        route_handlers=[read_user],
        state=State(state),
        on_shutdown=[on_shutdown],
        openapi_config=None,
        logging_config=None,
        debug=False,
    )
