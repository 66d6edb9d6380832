"""argon2id password hashing; the cost comes from Settings so tests can lower it."""

from __future__ import annotations

import secrets
import string

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 8

_hashers: dict[tuple[int, int], PasswordHasher] = {}


def _hasher(time_cost: int, memory_cost: int) -> PasswordHasher:
    key = (time_cost, memory_cost)
    hasher = _hashers.get(key)
    if hasher is None:
        hasher = _hashers[key] = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost)
    return hasher


def hash_password(password: str, *, time_cost: int = 3, memory_cost: int = 65536) -> str:
    return _hasher(time_cost, memory_cost).hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    if not password_hash:
        return False
    try:
        return PasswordHasher().verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def random_password(length: int = 24) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))
