"""Request contracts for milestones (GitLab's lib/api/milestone_responses.rb parameters), the
same under /projects/:id and /groups/:id."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import BeforeValidator, model_validator

from kiln.schemas._types import (
    Day,
    Flag,
    GrapeMessage,
    Int,
    OptionalDay,
    PageParams,
    Params,
    SearchText,
    When,
)


def _iids(value: object) -> object:
    # `iids=1,2` (GitLab's CommaSeparatedToIntegerArray) as well as `iids[]=1&iids[]=2`.
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, int):
        return [value]
    return value


class MilestoneList(PageParams):
    id: str
    state: Literal["active", "closed", "all"] = "all"
    iids: Annotated[list[Int], BeforeValidator(_iids)] | None = None
    title: str | None = None
    search: SearchText | None = None
    search_title: SearchText | None = None
    include_parent_milestones: Flag | None = None
    include_ancestors: Flag | None = None
    # Groups only: milestones of the subgroups and of the projects below the group.
    include_descendants: Flag | None = None
    updated_before: When | None = None
    updated_after: When | None = None
    # GitLab's finder reads these too (documented for groups): milestones whose dates overlap.
    containing_date: Day | None = None
    start_date: Day | None = None
    end_date: Day | None = None

    @model_validator(mode="after")
    def _exclusive(self) -> MilestoneList:
        if self.include_ancestors is not None and self.include_parent_milestones is not None:
            raise GrapeMessage("include_ancestors, include_parent_milestones are mutually exclusive")
        return self

    @property
    def ancestors(self) -> bool:
        """include_ancestors, or its deprecated name."""
        return bool(self.include_ancestors or self.include_parent_milestones)


class MilestoneGet(Params):
    id: str
    milestone_id: Int


class MilestonePage(PageParams):
    id: str
    milestone_id: Int


class MilestoneCreate(Params):
    id: str
    title: str
    description: str | None = None
    due_date: OptionalDay = None
    start_date: OptionalDay = None


class MilestoneUpdate(Params):
    id: str
    milestone_id: Int
    title: str | None = None
    description: str | None = None
    due_date: OptionalDay = None
    start_date: OptionalDay = None
    state_event: Literal["close", "activate"] | None = None

    # JSON null clears a description or a date.
    keep_null: ClassVar[frozenset[str]] = frozenset({"description", "due_date", "start_date"})

    @model_validator(mode="after")
    def _at_least_one(self) -> MilestoneUpdate:
        if not self.given() & {"title", "description", "start_date", "due_date", "state_event"}:
            raise GrapeMessage(
                "title, description, start_date, due_date, state_event are missing, "
                "at least one parameter must be provided"
            )
        return self
