"""The time tracking view (GitLab's IssuableTimeStats entity), as issues show it too."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities.issues import time_stats as issue_time_stats

if TYPE_CHECKING:
    from kiln.queries.time_tracking import TimeStats


def time_stats(stats: TimeStats) -> dict[str, Any]:
    return issue_time_stats(stats.time_estimate, stats.total_time_spent)
