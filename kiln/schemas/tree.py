"""Request contracts for the repository tree and blobs (spec part 1 "Repository files")."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Flag, OptionalStr, PageParams, Params


class TreeList(PageParams):
    id: str
    ref: OptionalStr = None
    path: str | None = None
    recursive: Flag = False
    pagination: Literal["legacy", "keyset", "none"] | None = None
    page_token: str | None = None


class BlobGet(Params):
    id: str
    sha: str
