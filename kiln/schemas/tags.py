"""Request contracts for tags (GitLab's lib/api/tags.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import PageParams, Params, SearchText


class TagList(PageParams):
    id: str
    search: SearchText | None = None
    order_by: Literal["name", "updated", "version"] = "updated"
    sort: Literal["asc", "desc"] = "desc"


class TagGet(Params):
    id: str
    tag_name: str


class TagCreate(Params):
    id: str
    tag_name: str
    ref: str
    # Given (and not blank once stripped): an annotated tag with this message.
    message: str | None = None
