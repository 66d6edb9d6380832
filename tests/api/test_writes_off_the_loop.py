"""A write waits for the database's writer off the event loop: while a job, a push or another
process holds it (SQLite's writer lock, a locked row on PostgreSQL), the process's other
requests go on, and a token's use is recorded only when that needs no wait."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from kiln.db import transaction
from kiln.models import PersonalAccessToken, User
from kiln.runtime import Runtime
from tests.conftest import EXTERNAL_URL
from tests.writers import STUCK_S, writer_held


def last_used(runtime: Runtime, token_user: int) -> Any:
    with runtime.sessions() as s:
        return s.scalar(
            select(PersonalAccessToken.last_used_at).where(PersonalAccessToken.user_id == token_user)
        )


@pytest.mark.committing
def test_a_write_waiting_for_the_writer_leaves_reads_answered(app, client, runtime, make):
    writer, reader = make.user(), make.user()
    held = writer_held(runtime, update(User).where(User.id == writer.id).values(status_message="held"))

    async def scenario() -> tuple[int, bool, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=EXTERNAL_URL, timeout=STUCK_S) as http:
            with held:
                write = asyncio.create_task(
                    http.put(
                        "/api/v4/user/status",
                        headers={"Private-Token": writer.token},
                        json={"message": "busy"},
                    )
                )
                await asyncio.sleep(0.05)  # lets the write reach the writer first
                read = await asyncio.wait_for(
                    http.get("/api/v4/user", headers={"Private-Token": reader.token}), STUCK_S
                )
                waiting = not write.done()
            written = await asyncio.wait_for(write, STUCK_S)
        return read.status_code, waiting, written.status_code

    read, waiting, written = asyncio.run(scenario())

    assert (read, waiting, written) == (200, True, 200)
    assert (
        client.get("/api/v4/user/status", headers={"Private-Token": writer.token}).json()["message"] == "busy"
    )


@pytest.mark.committing
def test_a_token_used_while_its_row_is_being_written_answers_without_recording_the_use(api, runtime, make):
    user = make.user()
    token_row = update(PersonalAccessToken).where(PersonalAccessToken.user_id == user.id).values(name="held")

    with writer_held(runtime, token_row):
        r = api(user).get("/user")
        during = last_used(runtime, user.id)

    assert (r.status_code, during) == (200, None)


@pytest.mark.committing
def test_the_use_is_recorded_by_the_next_request_once_the_writer_is_free(api, runtime, make):
    user = make.user()
    token_row = update(PersonalAccessToken).where(PersonalAccessToken.user_id == user.id).values(name="held")
    with writer_held(runtime, token_row):
        api(user).get("/user")

    r = api(user).get("/user")

    assert r.status_code == 200
    assert last_used(runtime, user.id) is not None


@pytest.mark.committing
def test_a_status_past_its_time_reads_cleared_while_the_writer_is_busy(api, runtime, make, db):
    user = make.user()
    api(user).put("/user/status", json={"message": "brb", "clear_status_after": "30_minutes"})
    with transaction(db):
        db.get(User, user.id).status_clear_at = datetime.now(UTC) - timedelta(seconds=1)
    user_row = update(User).where(User.id == user.id).values(name="held")

    with writer_held(runtime, user_row):
        during = api(user).get("/user/status").json()["message"]
    api(user).get("/user/status")

    with runtime.sessions() as s:
        assert (during, s.scalar(select(User.status_message).where(User.id == user.id))) == (None, None)
