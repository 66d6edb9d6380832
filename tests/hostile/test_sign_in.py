"""Probing for accounts: how long a sign-in takes must not tell whether its login exists. Every
way of signing in with a password verifies exactly one argon2 hash, at the cost new passwords
get, whether the login is unknown, has no password, or belongs to a user who may not sign in.
Told without timing: the hashes verified are recorded."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from argon2 import PasswordHasher, extract_parameters
from sqlalchemy import update

from kiln.config import Settings
from kiln.db import transaction
from kiln.models import User

# Not the tests' usual cost, nor production's: a stand-in of any fixed cost is told apart.
TIME_COST, MEMORY_COST = 2, 16384
UNKNOWN_LOGIN = "nobody-at-all"
SOME_PASSWORD = "some-password-1"


@pytest.fixture
def verified(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The hashes argon2 verifies from here on, in order."""
    seen: list[str] = []
    verify = PasswordHasher.verify

    def recording(hasher: PasswordHasher, password_hash: str | bytes, password: str | bytes) -> bool:
        seen.append(password_hash if isinstance(password_hash, str) else password_hash.decode())
        return verify(hasher, password_hash, password)

    monkeypatch.setattr(PasswordHasher, "verify", recording)
    return seen


@pytest.fixture
def costly(configure: Callable[..., Settings]) -> Settings:
    return configure(password_time_cost=TIME_COST, password_memory_cost=MEMORY_COST)


def sign_in(client: Any, login: str, password: str = SOME_PASSWORD) -> Any:
    return client.post(
        "/users/sign_in", data={"user[login]": login, "user[password]": password}, follow_redirects=False
    )


def one_hash_of_the_configured_cost(verified: list[str]) -> bool:
    if len(verified) != 1:
        return False
    cost = extract_parameters(verified[0])
    return (cost.time_cost, cost.memory_cost) == (TIME_COST, MEMORY_COST)


def test_signing_in_as_an_unknown_login_verifies_a_hash_of_the_configured_cost(client, costly, verified):
    assert sign_in(client, UNKNOWN_LOGIN).status_code == 401
    assert one_hash_of_the_configured_cost(verified)


def test_signing_in_as_a_user_without_a_password_verifies_a_hash_of_the_configured_cost(
    client, make, db, costly, verified
):
    u = make.user()
    with transaction(db):
        db.execute(update(User).where(User.id == u.id).values(password_hash=None))
    verified.clear()
    assert sign_in(client, u.username).status_code == 401
    assert one_hash_of_the_configured_cost(verified)


def test_signing_in_as_a_user_with_an_unreadable_hash_verifies_a_hash_of_the_configured_cost(
    client, make, db, costly, verified
):
    u = make.user()
    unreadable = "$2b$12$" + "x" * 53  # bcrypt's form
    with transaction(db):
        db.execute(update(User).where(User.id == u.id).values(password_hash=unreadable))
    verified.clear()
    assert sign_in(client, u.username).status_code == 401
    assert verified[0] == unreadable  # refused by argon2 before any work
    assert one_hash_of_the_configured_cost(verified[1:])


@pytest.mark.parametrize("fields", [{"state": "blocked"}, {"user_type": "ghost"}])
def test_signing_in_as_a_user_who_may_not_verifies_their_hash_as_for_anyone(client, make, verified, fields):
    u = make.user(**fields)
    verified.clear()
    r = sign_in(client, u.username, u.password)
    assert (r.status_code, r.json()) == (401, {"message": "Invalid login or password."})
    assert verified == [u.row.password_hash]


def test_the_password_grant_for_an_unknown_login_verifies_a_hash_of_the_configured_cost(
    client, costly, verified
):
    r = client.post(
        "/oauth/token", data={"grant_type": "password", "username": UNKNOWN_LOGIN, "password": SOME_PASSWORD}
    )
    assert (r.status_code, r.json()["error"]) == (400, "invalid_grant")
    assert one_hash_of_the_configured_cost(verified)


def test_git_over_http_as_an_unknown_login_verifies_a_hash_of_the_configured_cost(
    client, db, costly, verified
):
    credentials = base64.b64encode(f"{UNKNOWN_LOGIN}:{SOME_PASSWORD}".encode()).decode()
    r = client.get(
        "/nobody/nothing.git/info/refs?service=git-upload-pack",
        headers={"Authorization": f"Basic {credentials}"},
    )
    assert r.status_code == 401
    assert one_hash_of_the_configured_cost(verified)


def test_git_over_http_as_an_unknown_login_verifies_a_hash(client, db, verified):
    credentials = base64.b64encode(f"{UNKNOWN_LOGIN}:{SOME_PASSWORD}".encode()).decode()
    r = client.get(
        "/nobody/nothing.git/info/refs?service=git-upload-pack",
        headers={"Authorization": f"Basic {credentials}"},
    )
    assert r.status_code == 401
    assert len(verified) == 1
