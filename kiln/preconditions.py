"""Conditional requests: `If-Unmodified-Since` guards a change against a stale view (412)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from kiln.errors import PreconditionFailed


def parse_http_date(value: str | None) -> datetime | None:
    """An HTTP date, or None: an unparseable header is ignored, as RFC 9110 asks."""
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def require_unmodified_since(updated_at: datetime, since: datetime | None) -> None:
    # HTTP dates carry whole seconds: a change within the same second is not "after".
    if since is not None and updated_at.replace(microsecond=0) > since:
        raise PreconditionFailed()
