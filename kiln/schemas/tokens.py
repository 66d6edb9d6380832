"""Request contracts for personal access tokens, impersonation tokens, OAuth and sign-in."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from kiln.auth.tokens import PAT_SCOPES
from kiln.schemas._types import (
    Day,
    Flag,
    GrapeMessage,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    When,
    _string_list,
)


def _known_scopes(value: list[str]) -> list[str]:
    # Grape's values validator names the whole array, not the offending element.
    if any(scope not in PAT_SCOPES for scope in value):
        raise GrapeMessage("scopes does not have a valid value")
    return value


_SCOPES_SCHEMA = WithJsonSchema({"type": "array", "items": {"type": "string", "enum": list(PAT_SCOPES)}})
# `scopes[]=a&scopes[]=b`, ["a", "b"] or "a,b"; only known scopes.
PatScopes = Annotated[list[str], BeforeValidator(_string_list), AfterValidator(_known_scopes), _SCOPES_SCHEMA]
# Impersonation tokens validate their scopes in the model (400 with a field hash), as GitLab.
ScopeList = Annotated[list[str], BeforeValidator(_string_list), _SCOPES_SCHEMA]


class TokenList(PageParams):
    user_id: OptionalInt = None
    revoked: Flag | None = None
    state: Literal["active", "inactive"] | None = None
    search: SearchText | None = None
    created_before: When | None = None
    created_after: When | None = None
    last_used_before: When | None = None
    last_used_after: When | None = None
    expires_before: Day | None = None
    expires_after: Day | None = None


class TokenCreate(Params):
    name: str
    scopes: PatScopes
    description: str | None = None
    expires_at: Day | None = None


class TokenRotate(Params):
    expires_at: Day | None = None


class ImpersonationTokenList(PageParams):
    state: Literal["all", "active", "inactive"] = "all"


class ImpersonationTokenCreate(Params):
    name: str
    scopes: ScopeList = []
    description: str | None = None
    expires_at: Day | None = None


class OAuthTokenRequest(Params):
    grant_type: str | None = None
    username: str | None = None
    password: str | None = None
    refresh_token: str | None = None
    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = None


class OAuthRevoke(Params):
    token: str | None = None
    token_type_hint: str | None = None


class SignInFields(Params):
    login: str
    password: str
    new_password: str | None = None


class SignIn(Params):
    """GitLab's form nests the fields under `user[...]`; a flat form is accepted too."""

    user: SignInFields | None = None
    login: str | None = None
    password: str | None = None
    new_password: str | None = None

    def fields(self) -> SignInFields | None:
        if self.user is not None:
            return self.user
        if self.login is not None and self.password is not None:
            return SignInFields(login=self.login, password=self.password, new_password=self.new_password)
        return None
