"""Token views: PersonalAccessToken ⊂ WithToken; impersonation adds its flag."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import day, iso

if TYPE_CHECKING:
    from kiln.queries.tokens import TokenRow


def is_active(token: TokenRow) -> bool:
    if token.revoked:
        return False
    return token.expires_at is None or token.expires_at > datetime.now(UTC).date()


def personal_access_token(token: TokenRow, secret: str | None = None) -> dict[str, Any]:
    """`secret`: the token's value, shown once by the write that issued it (the row holds
    only its digest)."""
    view: dict[str, Any] = {
        "id": token.id,
        "name": token.name,
        "revoked": token.revoked,
        "created_at": iso(token.created_at),
        "description": token.description,
        "scopes": list(token.scopes),
        "user_id": token.user_id,
        "last_used_at": iso(token.last_used_at),
        "active": is_active(token),
        "expires_at": day(token.expires_at),
    }
    if token.impersonation:
        view["impersonation"] = True
    if secret is not None:
        view["token"] = secret
    return view
