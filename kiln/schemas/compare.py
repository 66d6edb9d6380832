"""Request contracts of compare, contributors and archives (GitLab's lib/api/repositories.rb)."""

from __future__ import annotations

from typing import Literal

from pydantic import create_model

from kiln.schemas._types import Flag, OptionalInt, PageParams, Params

# `from` is a Python keyword, so the two refs are declared by name; their order is Grape's
# ("from is missing, to is missing").
_Refs = create_model("_Refs", __base__=Params, **{"from": (str, ...), "to": (str, ...)})  # type: ignore[call-overload]


class CompareParams(_Refs):  # type: ignore[misc,valid-type]
    from_project_id: OptionalInt = None
    # false: `from...to`, changes since the merge base; true: `from..to`, the two trees.
    straight: Flag = False
    unidiff: Flag = False

    @property
    def from_ref(self) -> str:
        return str(getattr(self, "from"))

    @property
    def to_ref(self) -> str:
        return str(self.to)  # type: ignore[attr-defined]


class ContributorList(PageParams):
    ref: str | None = None
    order_by: Literal["email", "name", "commits"] = "commits"
    sort: Literal["asc", "desc"] = "asc"  # type: ignore[assignment]


class ArchiveParams(Params):
    sha: str | None = None
    format: str | None = None
    path: str | None = None
    # Accepted for GitLab's clients; kiln keeps no LFS objects to include.
    include_lfs_blobs: Flag = True
