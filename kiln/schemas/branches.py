"""Request contracts for branches (GitLab's lib/api/branches.rb parameters)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, ValidationInfo

from kiln.schemas._types import GrapeMessage, PageParams, Params, SearchText


def _not_blank(value: str, info: ValidationInfo) -> str:
    # Grape's allow_blank: false (whitespace alone is blank too).
    if not value.strip():
        raise GrapeMessage(f"{info.field_name} is empty")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]


class BranchList(PageParams):
    id: str
    # `^prefix`, `suffix$`, or a part of the name (case-insensitive).
    search: SearchText | None = None
    sort: Literal["name_asc", "updated_asc", "updated_desc"] | None = None


class BranchGet(Params):
    id: str
    branch: str


class BranchCreate(Params):
    id: str
    branch: NonBlank
    ref: NonBlank


class MergedBranchesDelete(Params):
    id: str
