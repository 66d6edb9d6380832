"""Error bodies the tests expect, written once (GitLab's exact texts)."""

from __future__ import annotations

UNAUTHORIZED = {"message": "401 Unauthorized"}
FORBIDDEN = {"message": "403 Forbidden"}
EXPIRED = {
    "error": "invalid_token",
    "error_description": "Token is expired. You can either do re-authorization or token refresh.",
}
REVOKED = {
    "error": "invalid_token",
    "error_description": "Token was revoked. You have to re-authorize from the user.",
}
IMPERSONATION_DISABLED = {
    "error": "invalid_token",
    "error_description": "Token is an impersonation token but impersonation was disabled.",
}
HIGHER_PRIVILEGES = "The request requires higher privileges than provided by the access token."
TOKEN_KEYS = [
    "id",
    "name",
    "revoked",
    "created_at",
    "description",
    "scopes",
    "user_id",
    "last_used_at",
    "active",
    "expires_at",
]
# The basic commit entity, in GitLab's order.
COMMIT_KEYS = [
    "id",
    "short_id",
    "created_at",
    "parent_ids",
    "title",
    "message",
    "author_name",
    "author_email",
    "authored_date",
    "committer_name",
    "committer_email",
    "committed_date",
    "trailers",
    "extended_trailers",
    "web_url",
]
