"""The application statistics view (GitLab's Entities::ApplicationStatistics): each count a
string with thousands separators ("1,234"), as GitLab's number_with_delimiter writes it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.application_statistics import Counts


def _n(value: int) -> str:
    return f"{value:,}"


def application_statistics(c: Counts) -> dict[str, Any]:
    # Snippets are not kept by kiln: none.
    return {
        "forks": _n(c.forks),
        "issues": _n(c.issues),
        "merge_requests": _n(c.merge_requests),
        "notes": _n(c.notes),
        "snippets": _n(0),
        "ssh_keys": _n(c.ssh_keys),
        "milestones": _n(c.milestones),
        "users": _n(c.users),
        "groups": _n(c.groups),
        "projects": _n(c.projects),
        "active_users": _n(c.active_users),
    }
