"""Request contracts for issue links (GitLab's lib/api/issue_links.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Int, Params


class LinkList(Params):
    id: str
    issue_iid: Int


class LinkGet(LinkList):
    issue_link_id: Int


class LinkCreate(LinkList):
    # The other issue's project, by id or full path, and its iid.
    target_project_id: str
    target_issue_iid: Int
    link_type: Literal["relates_to", "blocks", "is_blocked_by"] = "relates_to"
