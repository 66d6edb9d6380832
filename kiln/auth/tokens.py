"""Token secrets: generation, SHA-256 digests and the scope vocabulary."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# Personal access token scopes kiln knows; GitLab's names so clients can ask for them.
API = "api"
READ_API = "read_api"
READ_USER = "read_user"
READ_REPOSITORY = "read_repository"
WRITE_REPOSITORY = "write_repository"
SUDO = "sudo"
ADMIN_MODE = "admin_mode"
CREATE_RUNNER = "create_runner"
READ_REGISTRY = "read_registry"
WRITE_REGISTRY = "write_registry"

PAT_SCOPES = (
    API,
    READ_API,
    READ_USER,
    READ_REPOSITORY,
    WRITE_REPOSITORY,
    SUDO,
    ADMIN_MODE,
    CREATE_RUNNER,
    READ_REGISTRY,
    WRITE_REGISTRY,
)
# Impersonation tokens can't carry admin_mode (GitLab).
IMPERSONATION_SCOPES = tuple(s for s in PAT_SCOPES if s != ADMIN_MODE)
OAUTH_SCOPES = (API, READ_API, READ_USER, READ_REPOSITORY, WRITE_REPOSITORY, SUDO, ADMIN_MODE)

PREFIX_PAT = "kilnpat-"
PREFIX_OAUTH = "kilnoat-"
PREFIX_REFRESH = "kilnort-"
PREFIX_SESSION = "kilnses-"
PREFIX_RUNNERS = "GR1348941"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(24)


def new_runners_nonce() -> str:
    """What a project's runner registration token is derived from: random and unique, and
    no secret without the server key."""
    return secrets.token_urlsafe(24)


def runners_token(key: bytes, nonce: str) -> str:
    """A project's runner registration token, in GitLab's form: derived from the project's
    nonce under the server key (kiln.auth.server_secret), so kiln can show it again while the
    database holds only the nonce and the token's digest."""
    return PREFIX_RUNNERS + base64.urlsafe_b64encode(derived_mac(key, "runners_token", nonce)[:15]).decode(
        "ascii"
    )


def derived_mac(key: bytes, purpose: str, nonce: str) -> bytes:
    """The HMAC-SHA-256 of a token's nonce under the server key, separated by purpose: what a
    token kiln can show again (it stores the nonce and the token's digest) is made from."""
    return hmac.new(key, purpose.encode("ascii") + b":" + nonce.encode("utf-8"), hashlib.sha256).digest()
