"""Request contracts for members and access requests of groups and projects (one set for both:
`id` is the group's or project's id or URL-encoded full path)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ModelWrapValidatorHandler,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails

from kiln.models.namespaces import ACCESS_LEVELS, DEVELOPER
from kiln.schemas._types import Day, Flag, GrapeMessage, Int, PageParams, Params, SearchText, _string_list


def _blank_is_none(value: Any) -> Any:
    return None if value == "" else value


def _known_level(value: int) -> int:
    if value not in ACCESS_LEVELS:
        raise GrapeMessage("access_level does not have a valid value")
    return value


# An integer (from JSON, a form or a query) that must be one of Guest…Owner.
AccessLevel = Annotated[
    int,
    AfterValidator(_known_level),
    WithJsonSchema({"type": "integer", "enum": list(ACCESS_LEVELS)}),
]
# `user_ids[]=1&user_ids[]=2`, [1, 2] or "1,2".
IdList = Annotated[
    list[Int],
    BeforeValidator(_string_list),
    WithJsonSchema({"type": "array", "items": {"type": "integer"}}),
]


class MemberAllList(PageParams):
    id: str
    query: SearchText | None = None
    user_ids: IdList | None = None
    show_seat_info: Flag | None = None


class MemberList(MemberAllList):
    skip_users: IdList | None = None


class MemberGet(Params):
    id: str
    user_id: Int


class MemberCreate(Params):
    id: str
    access_level: AccessLevel
    # One id, or several separated by commas (GitLab's `types: [Integer, String]`).
    user_id: str | None = None
    username: str | None = None
    expires_at: Day | None = None
    invite_source: str | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _one_way_to_name_users(
        cls, data: Any, handler: ModelWrapValidatorHandler[MemberCreate]
    ) -> MemberCreate:
        """Grape checks these after the fields and reports every problem in one message."""
        problem = _users_problem(data)
        try:
            model = handler(data)
        except ValidationError as exc:
            if problem is None:
                raise
            details = [_again(e) for e in exc.errors()]
            details.append(InitErrorDetails(type="value_error", loc=(), input=data, ctx={"error": problem}))
            raise ValidationError.from_exception_data(cls.__name__, details) from None
        if problem is not None:
            raise problem
        return model


def _users_problem(data: Any) -> GrapeMessage | None:
    if not isinstance(data, dict):
        return None
    by_id, by_name = data.get("user_id") is not None, data.get("username") is not None
    if by_id and by_name:
        return GrapeMessage("user_id, username are mutually exclusive")
    if not by_id and not by_name:
        return GrapeMessage("user_id, username are missing, at least one parameter must be provided")
    return None


def _again(error: ErrorDetails) -> InitErrorDetails:
    """A reported error in the form ValidationError.from_exception_data takes back."""
    details = InitErrorDetails(type=error["type"], loc=error["loc"], input=error["input"])
    if "ctx" in error:
        details["ctx"] = error["ctx"]
    return details


class MemberUpdate(Params):
    id: str
    user_id: Int
    access_level: AccessLevel
    # Null or "" clears the expiry; absent leaves it as it is.
    expires_at: Annotated[Day | None, BeforeValidator(_blank_is_none)] = None

    keep_null: ClassVar[frozenset[str]] = frozenset({"expires_at"})


class MemberDelete(Params):
    id: str
    user_id: Int
    skip_subresources: Flag = False
    unassign_issuables: Flag = False


class AccessRequestList(PageParams):
    id: str


class AccessRequestCreate(Params):
    id: str


class AccessRequestApprove(Params):
    id: str
    user_id: Int
    access_level: AccessLevel = DEVELOPER


class AccessRequestDeny(Params):
    id: str
    user_id: Int
