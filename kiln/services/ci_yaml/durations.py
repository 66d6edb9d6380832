"""Human durations as GitLab reads them (ChronicDuration): "1h 30m", "3 days", "1 hour and
30 minutes", "90" (seconds), "1:30:00"."""

from __future__ import annotations

import re

from kiln.durations import CALENDAR_UNITS

_UNITS = CALENDAR_UNITS
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d+)")


def parse(value: object) -> int | None:
    """Seconds, or None when the value is no duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value) if value >= 0 else None
    if not isinstance(value, str) or len(value) > 200:
        return None
    text = value.strip().lower().replace(",", " ").replace(" and ", " ")
    if not text:
        return None
    clock = _CLOCK.fullmatch(text)
    if clock:
        hours, minutes, seconds = (int(g) if g else 0 for g in clock.groups())
        return hours * 3600 + minutes * 60 + seconds
    total = 0.0
    pos = 0
    found = False
    for m in _PART.finditer(text):
        if text[pos : m.start()].strip():
            return None
        unit = m.group(2) or "s"
        if unit not in _UNITS:
            return None
        total += float(m.group(1)) * _UNITS[unit]
        pos = m.end()
        found = True
    if not found or text[pos:].strip():
        return None
    return int(total)
