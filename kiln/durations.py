"""Durations as GitLab's time tracking writes and reads them: "1mo 2w 3d 4h 30m", "3h30m",
"3 hours, 20 minutes", "1.5" (a bare number is hours), "-1h"; counted as GitLab counts by
default: a month is 4 weeks, a week 5 days, a day 8 hours. What time tracking parses and what
the time stats and system notes show."""

from __future__ import annotations

import re

MINUTE, HOUR = 60, 3600

# The names of each unit, as GitLab's duration parsers (ChronicDuration) read them; what a
# unit is worth is each reader's business (a working day of 8 hours, or a calendar day).
UNIT_NAMES = {
    "second": ("s", "sec", "secs", "second", "seconds"),
    "minute": ("m", "min", "mins", "minute", "minutes"),
    "hour": ("h", "hr", "hrs", "hour", "hours"),
    "day": ("d", "day", "days"),
    "week": ("w", "wk", "wks", "week", "weeks"),
    "month": ("mo", "mos", "month", "months"),
    "year": ("y", "yr", "yrs", "year", "years"),
}


def unit_table(**seconds: int) -> dict[str, int]:
    """Every name of the units given (`day=86400`, ...) mapped to its seconds."""
    return {name: size for unit, size in seconds.items() for name in UNIT_NAMES[unit]}


CALENDAR_DAY = 24 * HOUR
# Calendar units (a month is 30 days, a year 365), as CI durations and settings read them.
CALENDAR_UNITS = unit_table(
    second=1,
    minute=MINUTE,
    hour=HOUR,
    day=CALENDAR_DAY,
    week=7 * CALENDAR_DAY,
    month=30 * CALENDAR_DAY,
    year=365 * CALENDAR_DAY,
)

# Time tracking's units: a month is 4 weeks, a week 5 days, a day 8 hours; no years.
DAY = 8 * HOUR
WEEK = 5 * DAY
MONTH = 4 * WEEK
_UNITS = unit_table(second=1, minute=MINUTE, hour=HOUR, day=DAY, week=WEEK, month=MONTH)
_UNITS["dy"] = DAY
_HUMAN_UNITS = (("mo", MONTH), ("w", WEEK), ("d", DAY), ("h", HOUR), ("m", MINUTE), ("s", 1))

# A number with an optional unit (a bare number is hours), any number of times.
_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)")
_SEPARATORS = re.compile(r",|\band\b")
# Longer than any duration anyone writes; bounds the work a crafted one costs.
MAX_DURATION_TEXT = 256


def parse_duration(text: str) -> int | None:
    """Seconds in a human duration (negative with a leading `-`), None if it is none."""
    if len(text) > MAX_DURATION_TEXT:
        return None
    s = _SEPARATORS.sub(" ", text.strip().lower())
    sign = 1
    if s.startswith("-"):
        sign, s = -1, s[1:]
    s = s.strip()
    if not s:
        return None
    total, at = 0.0, 0
    while at < len(s):
        if s[at].isspace():
            at += 1
            continue
        m = _PART.match(s, at)
        if m is None:
            return None
        unit = m.group(2)
        size = HOUR if not unit else _UNITS.get(unit)
        if size is None:
            return None
        total += float(m.group(1)) * size
        at = m.end()
    if total > 2**62:
        return None
    return sign * int(total)


def human(seconds: int) -> str:
    """Seconds as GitLab writes a duration: "1w 2d 3h 30m" (months, weeks, days of 8 hours)."""
    sign, left = ("-" if seconds < 0 else ""), abs(seconds)
    parts = []
    for unit, size in _HUMAN_UNITS:
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return sign + (" ".join(parts) or "0m")
