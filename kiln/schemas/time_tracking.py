"""Request contracts for time tracking (GitLab's TimeTrackingEndpoints parameters)."""

from __future__ import annotations

from kiln.schemas._types import Int, Params


class IssueTime(Params):
    id: str
    issue_iid: Int


class EstimateSet(IssueTime):
    # A human duration ("3h30m", "1w 2d"); its format is the service's to judge.
    duration: str


class SpentAdd(IssueTime):
    duration: str
    summary: str | None = None


class MergeRequestTime(Params):
    id: str
    merge_request_iid: Int


class MergeRequestEstimateSet(MergeRequestTime):
    duration: str


class MergeRequestSpentAdd(MergeRequestTime):
    duration: str
    summary: str | None = None
