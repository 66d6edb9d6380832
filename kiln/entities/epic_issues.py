"""Views of an epic's issues: the issue view with the link's id and position (GitLab's
EpicIssue entity), and a link with its epic and issue (EpicIssueLink)."""

from __future__ import annotations

from typing import Any


def epic_issue(issue_view: dict[str, Any], link_id: int, relative_position: int | None) -> dict[str, Any]:
    """An issue as an epic lists it."""
    return {**issue_view, "epic_issue_id": link_id, "relative_position": relative_position}


def epic_issue_link(
    link_id: int, relative_position: int | None, epic_view: dict[str, Any], issue_view: dict[str, Any]
) -> dict[str, Any]:
    """What assigning an issue to an epic, or taking it out, answers."""
    return {"id": link_id, "relative_position": relative_position, "epic": epic_view, "issue": issue_view}
