"""Request contracts for the issues of an epic (GitLab's ee/lib/api/epic_issues.rb)."""

from __future__ import annotations

from kiln.schemas._types import Int, OptionalInt, PageParams, Params


class EpicIssueList(PageParams):
    id: str
    epic_iid: Int


class EpicIssueAssign(Params):
    id: str
    epic_iid: Int
    # The issue's global id.
    issue_id: Int


class EpicIssueRef(Params):
    id: str
    epic_iid: Int
    epic_issue_id: Int


class EpicIssueMove(PageParams):
    id: str
    epic_iid: Int
    epic_issue_id: Int
    # Ids of the epic's issue links: the one to come before the moved issue, or after it.
    move_before_id: OptionalInt = None
    move_after_id: OptionalInt = None
