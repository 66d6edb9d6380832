"""Users, their tokens and group ownership."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any

from sqlalchemy.orm import Session

from kiln.auth.passwords import hash_password
from kiln.auth.tokens import PREFIX_PAT, digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.models import PersonalAccessToken, User
from kiln.services.users import user_namespace

DEFAULT_PASSWORD = "password-123"


@cache
def password_hash(password: str) -> str:
    """One hash per password for the whole run (argon2, cheap parameters): a salt per user
    proves nothing here, and thousands of users each paid ~5 ms of CPU for theirs."""
    return hash_password(password, time_cost=1, memory_cost=8192)


@dataclass(eq=False)  # hashable: tests key member maps by user
class MadeUser:
    id: int
    username: str
    email: str
    token: str
    password: str
    row: User


class UserFactory:
    db: Session
    settings: Settings

    def seq(self) -> int:
        raise NotImplementedError

    def user(
        self,
        *,
        username: str | None = None,
        scopes: list[str] | None = None,
        password: str = DEFAULT_PASSWORD,
        **fields: Any,
    ) -> MadeUser:
        n = self.seq()
        username = username or f"user{n}"
        with transaction(self.db):
            user = User(
                username=username,
                email=fields.pop("email", f"{username}@example.com"),
                name=fields.pop("name", f"User {n}"),
                password_hash=password_hash(password),
                **fields,
            )
            self.db.add(user)
            self.db.flush()
            user_namespace(self.db, user)
            secret = self._token(user, scopes or ["api"])
        return MadeUser(user.id, user.username, user.email, secret, password, user)

    def admin(self, **fields: Any) -> MadeUser:
        return self.user(admin=True, **fields)

    def token(
        self,
        user: MadeUser,
        *,
        scopes: list[str] | None = None,
        expires_at: date | None = None,
        revoked: bool = False,
        impersonation: bool = False,
        name: str = "test",
    ) -> str:
        with transaction(self.db):
            return self._token(
                user.row,
                scopes or ["api"],
                expires_at=expires_at,
                revoked=revoked,
                impersonation=impersonation,
                name=name,
            )

    def _token(self, user: User, scopes: list[str], **fields: Any) -> str:
        secret = new_secret(PREFIX_PAT)
        self.db.add(
            PersonalAccessToken(
                user_id=user.id,
                name=fields.pop("name", "test"),
                digest=digest(secret),
                scopes=scopes,
                **fields,
            )
        )
        self.db.flush()
        return secret
