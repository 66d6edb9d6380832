"""Time tracking records: what the time tracking view shows of an issue (or merge request).
The counts live on the target's own row (kept with each time log), read with its subject."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class TimeStats:
    time_estimate: int
    total_time_spent: int
