"""Request contracts for resource events (GitLab's resource_*_events parameters): an issue or
a merge request by its iid, an epic by its global id."""

from __future__ import annotations

from kiln.schemas._types import Int, PageParams, Params


class IssueEventList(PageParams):
    id: str
    issue_iid: Int


class IssueEventGet(Params):
    id: str
    issue_iid: Int
    event_id: Int


class EpicEventList(PageParams):
    id: str
    epic_id: Int


class EpicEventGet(Params):
    id: str
    epic_id: Int
    event_id: Int


class MergeRequestEventList(PageParams):
    id: str
    merge_request_iid: Int


class MergeRequestEventGet(Params):
    id: str
    merge_request_iid: Int
    event_id: Int
