"""Request contracts for issues (GitLab's lib/api/issues.rb and its issuable filters)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from kiln.schemas._issuable import IdList, IdOrKeyword, IssuableFilters, in_fields, with_in_and_not
from kiln.schemas._types import (
    CommaList,
    Day,
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

# GitLab's Issuable::DESCRIPTION_LENGTH_MAX.

ISSUE_TYPES = ("issue", "incident", "test_case", "task")
ORDERS = (
    "created_at",
    "updated_at",
    "priority",
    "due_date",
    "relative_position",
    "label_priority",
    "milestone_due",
    "popularity",
    "weight",
    "title",
)
SCOPES = ("created_by_me", "assigned_to_me", "all", "created-by-me", "assigned-to-me")
DUE_DATES = (
    "0",
    "any",
    "today",
    "tomorrow",
    "overdue",
    "week",
    "month",
    "next_month_and_previous_two_weeks",
)


class Negated(Params):
    """`not[...]`: the filters an issue must not match."""

    labels: CommaList | None = None
    milestone: str | None = None
    author_id: OptionalInt = None
    author_username: str | None = None
    assignee_id: IdOrKeyword = None
    assignee_username: StrArray | None = None
    my_reaction_emoji: str | None = None
    search: SearchText | None = None
    in_: CommaList | None = Field(default=None, alias="in")
    weight: IdOrKeyword = None
    iids: IntArray | None = None

    @model_validator(mode="before")
    @classmethod
    def _in_fields(cls, data: Any) -> Any:
        in_fields(data, "not[in]")
        return data


class IssueFilters(IssuableFilters):
    """GET /issues, /groups/:id/issues, /projects/:id/issues (`in` and `not` are added below:
    Python keywords, they cannot be written as fields here)."""

    id: str | None = None
    state: Literal["opened", "closed", "all"] | None = None
    labels: CommaList | None = None
    with_labels_details: Flag = False
    milestone: str | None = None
    milestone_id: str | None = None
    scope: Literal[SCOPES] | None = None  # type: ignore[valid-type]
    author_id: OptionalInt = None
    author_username: str | None = None
    assignee_id: IdOrKeyword = None
    assignee_username: StrArray | None = None
    my_reaction_emoji: str | None = None
    weight: IdOrKeyword = None
    iids: IntArray | None = None
    order_by: Literal[ORDERS] = "created_at"  # type: ignore[valid-type]
    sort: Literal["asc", "desc"] = "desc"  # type: ignore[assignment]
    search: SearchText | None = None
    created_after: When | None = None
    created_before: When | None = None
    updated_after: When | None = None
    updated_before: When | None = None
    due_date: Literal[DUE_DATES] | None = None  # type: ignore[valid-type]
    confidential: Flag | None = None
    issue_type: Literal[ISSUE_TYPES] | None = None  # type: ignore[valid-type]
    non_archived: Flag = True


# The route's contract: IssueFilters with `in` and `not` (type hints name IssueFilters).
IssueList = with_in_and_not("IssueList", IssueFilters, Negated)


class IssueGet(Params):
    id: str
    issue_iid: Int


class IssueById(Params):
    id: Int


class _IssueFields(Params):
    keep_null = frozenset({"assignee_ids", "milestone_id", "weight", "due_date", "epic_id", "epic_iid"})

    id: str
    description: str | None = None
    confidential: Flag | None = None
    assignee_ids: IdList | None = None
    assignee_id: OptionalInt = None
    milestone_id: OptionalInt = None
    labels: LabelNames = None
    due_date: Annotated[Day | None, BeforeValidator(lambda v: None if v == "" else v)] = None
    weight: OptionalInt = None
    issue_type: Literal[ISSUE_TYPES] | None = None  # type: ignore[valid-type]
    discussion_locked: Flag | None = None
    epic_id: OptionalInt = None
    epic_iid: OptionalInt = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise GrapeMessage("weight does not have a valid value")
        return value


class IssueCreate(_IssueFields):
    title: str
    iid: OptionalInt = None
    created_at: When | None = None
    merge_request_to_resolve_discussions_of: OptionalInt = None
    discussion_to_resolve: str | None = None


class IssueUpdate(_IssueFields):
    issue_iid: Int
    title: str | None = None
    state_event: Literal["close", "reopen"] | None = None
    add_labels: LabelNames = None
    remove_labels: LabelNames = None
    updated_at: When | None = None


class IssueMove(Params):
    id: str
    issue_iid: Int
    to_project_id: Int


class IssueClone(IssueMove):
    with_notes: Flag = False


class IssueReorder(Params):
    id: str
    issue_iid: Int
    move_after_id: OptionalInt = None
    move_before_id: OptionalInt = None


class ParticipantList(PageParams):
    id: str
    issue_iid: Int
