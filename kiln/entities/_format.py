"""Value formats shared by every entity."""

from __future__ import annotations

from datetime import UTC, date, datetime


def iso(value: datetime | str | None) -> str | None:
    """UTC ISO 8601 with milliseconds and Z, as GitLab renders times. Row records carry the
    string already (formatted by the database: queries.reads.utc_iso)."""
    if value is None or isinstance(value, str):
        return value
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def day(value: date | None) -> str | None:
    return value.isoformat() if value is not None else None


def git_time(seconds: int) -> str:
    """A git timestamp (author, committer, tagger) in the same UTC form as every other time."""
    return iso(datetime.fromtimestamp(seconds, UTC))


def git_text(raw: bytes) -> str:
    """Text git keeps as bytes (messages, names): bytes that are not UTF-8 show as U+FFFD
    rather than fail the answer."""
    return raw.decode("utf-8", errors="replace")
