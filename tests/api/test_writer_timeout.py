"""A write waits for SQLite's one writer no longer than `sqlite_writer_timeout`: while another
request, a job or another process holds it past that, the write answers 503 with Retry-After
instead of holding its request thread, and goes through once the writer is free."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import update

from kiln.db import make_engine, make_sessionmaker
from kiln.models import User
from kiln.runtime import Runtime
from tests.writers import writer_held

UNAVAILABLE = {"message": "503 Service Unavailable"}
# Bounds that only a stuck test reaches: nothing here measures a time.


@pytest.fixture
def impatient(runtime: Runtime, db, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The app's sessions on an engine whose writes wait for the writer a moment only."""
    if runtime.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's writer lock only")
    engine = make_engine(runtime.settings.model_copy(update={"sqlite_writer_timeout": 0.05}))
    monkeypatch.setattr(runtime, "sessions", make_sessionmaker(engine))
    yield
    engine.dispose()


@contextmanager
def held_by_another_process(runtime: Runtime) -> Iterator[None]:
    """The writer's flock taken through a file of its own, as another process takes it."""
    fd = os.open(f"{runtime.engine.url.database}-writer.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def set_status(api, user, message: str):
    return api(user).put("/user/status", json={"message": message})


@pytest.mark.committing
def test_a_write_while_another_thread_holds_the_writer_is_503_then_goes_through(
    impatient, runtime, api, make
):
    user = make.user()

    with writer_held(runtime, update(User).where(User.id == 1).values(status_message="held")):
        refused = set_status(api, user, "waiting")
    written = set_status(api, user, "written")

    assert (refused.status_code, refused.json(), refused.headers["retry-after"]) == (503, UNAVAILABLE, "1")
    assert (written.status_code, written.json()["message"]) == (200, "written")


@pytest.mark.committing
def test_a_write_while_another_process_holds_the_writer_is_503_then_goes_through(
    impatient, runtime, api, make
):
    user = make.user()

    with held_by_another_process(runtime):
        refused = set_status(api, user, "waiting")
    written = set_status(api, user, "written")

    assert (refused.status_code, refused.json(), refused.headers["retry-after"]) == (503, UNAVAILABLE, "1")
    assert (written.status_code, written.json()["message"]) == (200, "written")
