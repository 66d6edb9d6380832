"""argon2id password hashing; the cost comes from Settings so tests can lower it."""

from __future__ import annotations

import secrets
import string
from contextlib import suppress
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 8
# The library's defaults, which Settings keeps in production.
DEFAULT_TIME_COST = 3
DEFAULT_MEMORY_COST = 65536

_hashers: dict[tuple[int, int], PasswordHasher] = {}


def _hasher(time_cost: int, memory_cost: int) -> PasswordHasher:
    key = (time_cost, memory_cost)
    hasher = _hashers.get(key)
    if hasher is None:
        hasher = _hashers[key] = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost)
    return hasher


def hash_password(
    password: str, *, time_cost: int = DEFAULT_TIME_COST, memory_cost: int = DEFAULT_MEMORY_COST
) -> str:
    return _hasher(time_cost, memory_cost).hash(password)


def verify_password(
    password_hash: str | None,
    password: str,
    *,
    time_cost: int = DEFAULT_TIME_COST,
    memory_cost: int = DEFAULT_MEMORY_COST,
) -> bool:
    """Whether `password` is the one hashed. Every call pays one verification: where there is
    no hash to verify (no user, no password set, a hash argon2 cannot read), a hash of the
    cost new passwords get is verified instead, so how long a sign-in takes never tells
    whether the login exists. `time_cost` and `memory_cost` are that cost (Settings')."""
    hasher = _hasher(time_cost, memory_cost)
    if password_hash:
        try:
            return hasher.verify(password_hash, password)
        except VerificationError:
            return False
        except InvalidHashError:
            pass
    with suppress(VerificationError, InvalidHashError):
        hasher.verify(_stand_in_hash(time_cost, memory_cost), password)
    return False


@cache
def _stand_in_hash(time_cost: int, memory_cost: int) -> str:
    """A hash of a random password nobody knows, at that cost: made once per cost, the first
    time a login without a usable hash is checked."""
    return hash_password(secrets.token_urlsafe(32), time_cost=time_cost, memory_cost=memory_cost)


def random_password(length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))
