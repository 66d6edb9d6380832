"""Request contracts of a merge request's pipelines (GitLab's merge_requests.rb pipelines)."""

from __future__ import annotations

from kiln.schemas._types import Int, PageParams, Params


class MergeRequestPipelineList(PageParams):
    id: str
    merge_request_iid: Int


class MergeRequestPipelineCreate(Params):
    id: str
    merge_request_iid: Int
