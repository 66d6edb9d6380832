"""Request contracts for merging a merge request (GitLab's lib/api/merge_requests.rb: merge,
cancel_merge_when_pipeline_succeeds, merge_ref, rebase)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationInfo, field_validator, model_validator

from kiln.schemas._types import Flag, GrapeMessage, Int, Params


def _encodable(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


class MergeTarget(Params):
    id: str
    merge_request_iid: Int


class MergeParams(MergeTarget):
    """`auto_merge` is the newer name of `merge_when_pipeline_succeeds`; either asks for it."""

    merge_commit_message: str | None = None
    squash_commit_message: str | None = None
    squash: Flag | None = None
    should_remove_source_branch: Flag | None = None
    merge_when_pipeline_succeeds: Flag = False
    auto_merge: Flag = False
    sha: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _blank_sha(cls, data: Any) -> Any:
        # An empty sha is "not given", as Grape's optional String with a blank value.
        if isinstance(data, dict) and data.get("sha") == "":
            data = {k: v for k, v in data.items() if k != "sha"}
        return data

    @field_validator("merge_commit_message", "squash_commit_message")
    @classmethod
    def _storable(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A commit message is kept byte for byte: one git can't hold is refused, not cut.
        if value is not None and ("\0" in value or not _encodable(value)):
            raise GrapeMessage(f"{info.field_name} is invalid")
        return value

    @property
    def when_pipeline_succeeds(self) -> bool:
        return self.merge_when_pipeline_succeeds or self.auto_merge


class RebaseParams(MergeTarget):
    skip_ci: Flag = False
