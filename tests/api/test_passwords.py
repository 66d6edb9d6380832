"""Password hashing (argon2, a fifth of a second of CPU at production cost) never stalls other
requests: every route that hashes or checks a password does it off the event loop, and never
while holding SQLite's one writer (DESIGN.md: work that waits runs in a thread)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from argon2 import PasswordHasher
from sqlalchemy.orm import Session

from kiln.runtime import Runtime
from tests.conftest import ROOT_PASSWORD


class Hashing:
    """Each argon2 hash or verify run, as (on an event loop, the database's writer taken)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.runs: list[tuple[bool, bool]] = []

    def watch(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def run(hasher: PasswordHasher, *args: Any, **kwargs: Any) -> Any:
            self.runs.append((_on_event_loop(), self._writer_taken()))
            return method(hasher, *args, **kwargs)

        return run

    def _writer_taken(self) -> bool:
        """Whether another connection could start a write now (SQLite: BEGIN IMMEDIATE). On
        PostgreSQL, writers do not exclude each other: only the event loop matters there."""
        url = self.runtime.engine.url
        if url.get_backend_name() != "sqlite":
            return False
        probe = sqlite3.connect(url.database or "", timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            return True
        else:
            probe.execute("ROLLBACK")
            return False
        finally:
            probe.close()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@pytest.fixture
def hashing(runtime: Runtime, db: Session, monkeypatch: pytest.MonkeyPatch) -> Hashing:
    # After `db`: root's own password is hashed when the database is set up, not by a route.
    seen = Hashing(runtime)
    monkeypatch.setattr(PasswordHasher, "hash", seen.watch(PasswordHasher.hash))
    monkeypatch.setattr(PasswordHasher, "verify", seen.watch(PasswordHasher.verify))
    return seen


def off_loop_and_outside_the_write(hashing: Hashing) -> bool:
    return bool(hashing.runs) and all(runs == (False, False) for runs in hashing.runs)


@pytest.mark.committing
def test_creating_a_user_hashes_the_password_off_the_loop_outside_the_write(api, hashing):
    r = api("root").post(
        "/users",
        json={"email": "new@example.com", "username": "new", "name": "New", "password": "long-password-1"},
    )
    assert r.status_code == 201
    assert off_loop_and_outside_the_write(hashing)


@pytest.mark.committing
def test_a_random_password_is_hashed_off_the_loop_outside_the_write(api, hashing):
    r = api("root").post(
        "/users", json={"email": "new@example.com", "username": "new", "name": "New", "reset_password": True}
    )
    assert r.status_code == 201
    assert off_loop_and_outside_the_write(hashing)


@pytest.mark.committing
def test_changing_a_password_hashes_it_off_the_loop_outside_the_write(api, make, hashing):
    u = make.user()
    hashing.runs.clear()
    r = api("root").put(f"/users/{u.id}", json={"password": "another-password-1"})
    assert r.status_code == 200
    assert off_loop_and_outside_the_write(hashing)


def test_sign_in_checks_the_password_off_the_loop(client, hashing):
    r = client.post(
        "/users/sign_in",
        data={"user[login]": "root", "user[password]": ROOT_PASSWORD},
        follow_redirects=False,
    )
    assert r.status_code == 302
    assert off_loop_and_outside_the_write(hashing)


@pytest.mark.committing
def test_sign_in_with_a_new_password_hashes_it_off_the_loop_outside_the_write(client, make, hashing):
    u = make.user(password_expires_at=datetime.now(UTC) - timedelta(days=1))
    hashing.runs.clear()
    r = client.post(
        "/users/sign_in",
        data={"user[login]": u.username, "user[password]": u.password, "user[new_password]": "brand-new-1"},
        follow_redirects=False,
    )
    assert r.status_code == 302
    assert len(hashing.runs) == 2  # the old password checked, the new one hashed
    assert off_loop_and_outside_the_write(hashing)


def test_password_grant_checks_the_password_off_the_loop(client, hashing):
    r = client.post(
        "/oauth/token", data={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    assert r.status_code == 200
    assert off_loop_and_outside_the_write(hashing)
