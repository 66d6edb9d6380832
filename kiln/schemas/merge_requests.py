"""Request contracts for merge requests (GitLab's lib/api/merge_requests.rb and its
merge request filters)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, field_validator, model_validator

from kiln.schemas._issuable import IdList, IdOrKeyword, IssuableFilters, with_in_and_not
from kiln.schemas._types import (
    CommaList,
    Flag,
    GrapeMessage,
    Int,
    IntArray,
    LabelNames,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    StrArray,
    When,
)

STATES = ("opened", "closed", "locked", "merged", "all")
ORDERS = ("created_at", "updated_at", "title", "merged_at", "label_priority", "milestone_due", "popularity")
SCOPES = ("created_by_me", "assigned_to_me", "all", "created-by-me", "assigned-to-me")
MAX_APPROVED_BY = 5


def _ids_or_keyword(value: Any) -> Any:
    """approver_ids / approved_by_ids: an array of ids, or `None` / `Any` (-> "none"/"any")."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if value.strip().lower() in ("none", "any"):
            return value.strip().lower()
        return [p.strip() for p in value.split(",") if p.strip()]
    if isinstance(value, int):
        return [value]
    return value


IdsOrKeyword = Annotated[Literal["none", "any"] | list[Int] | None, BeforeValidator(_ids_or_keyword)]


class MergeRequestNegated(Params):
    """`not[...]`: the filters a merge request must not match."""

    labels: CommaList | None = None
    milestone: str | None = None
    author_id: OptionalInt = None
    author_username: str | None = None
    assignee_id: IdOrKeyword = None
    assignee_username: StrArray | None = None
    reviewer_id: IdOrKeyword = None
    reviewer_username: str | None = None
    my_reaction_emoji: str | None = None


class MergeRequestFilters(IssuableFilters):
    """GET /merge_requests, /groups/:id/merge_requests, /projects/:id/merge_requests."""

    id: str | None = None
    state: Literal[STATES] | None = None  # type: ignore[valid-type]
    order_by: Literal[ORDERS] = "created_at"  # type: ignore[valid-type]
    sort: Literal["asc", "desc"] = "desc"  # type: ignore[assignment]
    milestone: str | None = None
    view: Literal["simple"] | None = None
    labels: CommaList | None = None
    with_labels_details: Flag = False
    with_merge_status_recheck: Flag = False
    created_after: When | None = None
    created_before: When | None = None
    updated_after: When | None = None
    updated_before: When | None = None
    scope: Literal[SCOPES] | None = None  # type: ignore[valid-type]
    author_id: OptionalInt = None
    author_username: str | None = None
    assignee_id: IdOrKeyword = None
    assignee_username: StrArray | None = None
    reviewer_id: IdOrKeyword = None
    reviewer_username: str | None = None
    approver_ids: IdsOrKeyword = None
    approved_by_ids: IdsOrKeyword = None
    approved_by_usernames: StrArray | None = None
    my_reaction_emoji: str | None = None
    source_branch: str | None = None
    target_branch: str | None = None
    search: SearchText | None = None
    wip: Literal["yes", "no"] | None = None
    iids: IntArray | None = None
    non_archived: Flag = True
    deployed_before: str | None = None
    deployed_after: str | None = None
    environment: str | None = None

    exclusive = (*IssuableFilters.exclusive, ("reviewer_id", "reviewer_username"))

    @field_validator("approved_by_ids")
    @classmethod
    def _at_most_five(cls, value: Any) -> Any:
        if isinstance(value, list) and len(value) > MAX_APPROVED_BY:
            raise GrapeMessage("approved_by_ids is too long (maximum is 5 elements)")
        return value


# The route's contract: MergeRequestFilters with `in` and `not` (type hints name MergeRequestFilters).
MergeRequestList = with_in_and_not("MergeRequestList", MergeRequestFilters, MergeRequestNegated)


class MergeRequestGet(Params):
    id: str
    merge_request_iid: Int


class MergeRequestPage(PageParams):
    id: str
    merge_request_iid: Int


class MergeRequestChanges(MergeRequestGet):
    access_raw_diffs: Flag = False
    unidiff: Flag = False


class MergeRequestDiffs(MergeRequestPage):
    unidiff: Flag = False


class CommitMergeRequests(PageParams):
    id: str
    sha: str


class _Fields(Params):
    keep_null = frozenset({"assignee_ids", "reviewer_ids", "milestone_id", "assignee_id"})

    id: str
    description: str | None = None
    assignee_id: OptionalInt = None
    assignee_ids: IdList | None = None
    reviewer_ids: IdList | None = None
    labels: LabelNames = None
    milestone_id: OptionalInt = None
    remove_source_branch: Flag | None = None
    squash: Flag | None = None
    allow_collaboration: Flag | None = None
    allow_maintainer_to_push: Flag | None = None


class MergeRequestCreate(_Fields):
    source_branch: str
    target_branch: str
    title: str
    target_project_id: OptionalInt = None
    approvals_before_merge: OptionalInt = None


# What an update must name at least one of, in GitLab's order.
UPDATE_FIELDS = (
    "assignee_id",
    "assignee_ids",
    "reviewer_ids",
    "description",
    "labels",
    "add_labels",
    "remove_labels",
    "milestone_id",
    "remove_source_branch",
    "allow_collaboration",
    "allow_maintainer_to_push",
    "squash",
    "target_branch",
    "title",
    "state_event",
    "discussion_locked",
)


class MergeRequestUpdate(_Fields):
    merge_request_iid: Int
    title: str | None = None
    target_branch: str | None = None
    state_event: Literal["close", "reopen"] | None = None
    add_labels: LabelNames = None
    remove_labels: LabelNames = None
    discussion_locked: Flag | None = None
    approvals_before_merge: OptionalInt = None

    @model_validator(mode="after")
    def _something(self) -> MergeRequestUpdate:
        if not self.given() & set(UPDATE_FIELDS) and "approvals_before_merge" not in self.given():
            raise GrapeMessage(
                f"{', '.join(UPDATE_FIELDS)} are missing, at least one parameter must be provided"
            )
        return self
