"""Request contracts for issue boards and their lists (GitLab's lib/api/boards.rb and
group_boards.rb parameters), the same under /projects/:id and /groups/:id."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from kiln.schemas._types import CommaList, Flag, GrapeMessage, Int, PageParams, Params

# A board's weight is an integer column; anything wider is invalid, not a database error.
Weight = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]

# The list kinds, in the order GitLab's exactly_one_of names them.
LIST_TARGETS = ("label_id", "milestone_id", "iteration_id", "assignee_id")


class BoardList(PageParams):
    id: str


class BoardGet(Params):
    id: str
    board_id: Int


class BoardCreate(Params):
    id: str
    name: str


class BoardUpdate(Params):
    id: str
    board_id: Int
    name: str | None = None
    hide_backlog_list: Flag | None = None
    hide_closed_list: Flag | None = None
    # The board's scope; null (or an id nothing matches) clears it, as GitLab does.
    assignee_id: Int | None = None
    milestone_id: Int | None = None
    # Label titles, comma-separated (or a JSON array); missing labels are created.
    labels: CommaList | None = None
    weight: Weight | None = None

    keep_null: ClassVar[frozenset[str]] = frozenset({"assignee_id", "milestone_id", "weight"})


class ListOfBoard(PageParams):
    id: str
    board_id: Int


class ListGet(Params):
    id: str
    board_id: Int
    list_id: Int


class ListCreate(Params):
    id: str
    board_id: Int
    label_id: Int | None = None
    milestone_id: Int | None = None
    iteration_id: Int | None = None
    assignee_id: Int | None = None

    @model_validator(mode="before")
    @classmethod
    def _exactly_one_target(cls, data: Any) -> Any:
        """Grape's exactly_one_of, checked on what was sent (before the types)."""
        if isinstance(data, dict):
            given = [name for name in LIST_TARGETS if data.get(name) is not None]
            if not given:
                raise GrapeMessage(
                    f"{', '.join(LIST_TARGETS)} are missing, exactly one parameter must be provided"
                )
            if len(given) > 1:
                raise GrapeMessage(f"{', '.join(given)} are mutually exclusive")
        return data


class ListMove(Params):
    id: str
    board_id: Int
    list_id: Int
    position: Int
