"""Request contracts of merge request diff versions (GitLab's merge_request_diffs.rb)."""

from __future__ import annotations

from kiln.schemas._types import Int, PageParams, Params


class VersionList(PageParams):
    id: str
    merge_request_iid: Int


class VersionGet(Params):
    id: str
    merge_request_iid: Int
    version_id: Int
