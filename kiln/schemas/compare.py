"""Request contracts of compare, merge bases, contributors and archives (GitLab's
lib/api/repositories.rb)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, create_model

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


def _ref_list(value: Any) -> Any:
    """`refs[]=a&refs[]=b`, `refs=a,b`, or both: every value split at commas, blanks around
    each name trimmed and empty names at the end dropped (GitLab's CommaSeparatedToArray
    over Ruby's String#split)."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return value
    out: list[str] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, str | int):
            return value
        parts = str(item).split(",")
        while parts and not parts[-1]:
            parts.pop()
        out.extend(part.strip() for part in parts)
    return out


RefList = Annotated[list[str], BeforeValidator(_ref_list)]


class MergeBaseParams(Params):
    refs: RefList


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
