"""Request contracts for epics and their child epics (GitLab's ee/lib/api/epics.rb and
epic_links.rb parameters)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import create_model, model_validator

from kiln.schemas._types import (
    CommaList,
    Flag,
    GrapeMessage,
    Int,
    IntArray,
    LabelNames,
    OptionalDay,
    OptionalInt,
    PageParams,
    Params,
    SearchText,
    When,
)

# GitLab's Issuable::DESCRIPTION_LENGTH_MAX and the title column's length.


def _exclusive(data: Any, *names: str, prefix: str = "") -> None:
    if isinstance(data, dict) and all(data.get(n) not in (None, "") for n in names):
        shown = ", ".join(f"{prefix}[{n}]" if prefix else n for n in names)
        raise GrapeMessage(f"{shown} are mutually exclusive")


class EpicNegated(Params):
    """`not[...]`: what a listed epic must not match."""

    labels: CommaList | None = None
    author_id: OptionalInt = None
    author_username: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_author(cls, data: Any) -> Any:
        _exclusive(data, "author_id", "author_username", prefix="not")
        return data


class _EpicFilters(PageParams):
    id: str
    author_id: OptionalInt = None
    author_username: str | None = None
    labels: CommaList | None = None
    with_labels_details: Flag = False
    order_by: Literal["created_at", "updated_at", "title"] = "created_at"
    sort: Literal["asc", "desc"] = "desc"  # type: ignore[assignment]
    search: SearchText | None = None
    state: Literal["opened", "closed", "all"] = "all"
    created_after: When | None = None
    created_before: When | None = None
    updated_after: When | None = None
    updated_before: When | None = None
    include_ancestor_groups: Flag = False
    include_descendant_groups: Flag = True
    my_reaction_emoji: str | None = None
    confidential: Flag | None = None
    iids: IntArray | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_author(cls, data: Any) -> Any:
        _exclusive(data, "author_id", "author_username")
        return data


# `not` is a Python keyword: the field gets its name, as clients send it, from create_model.
_WithNegated: Any = create_model("_WithNegated", __base__=_EpicFilters, **{"not": (EpicNegated | None, None)})


class EpicList(_WithNegated):  # type: ignore[misc]
    """GET /groups/:id/epics."""

    @property
    def negated(self) -> EpicNegated | None:
        """The `not[...]` filters."""
        return getattr(self, "not", None)


class EpicGet(Params):
    id: str
    epic_iid: Int


class _EpicFields(Params):
    """What creating and changing an epic share; `start_date` / `end_date` are the deprecated
    names of the fixed dates."""

    # JSON null clears a fixed date.
    keep_null = frozenset({"start_date_fixed", "due_date_fixed", "start_date", "end_date"})

    id: str
    description: str | None = None
    labels: LabelNames = None
    confidential: Flag | None = None
    color: str | None = None
    start_date_is_fixed: Flag | None = None
    start_date_fixed: OptionalDay = None
    start_date: OptionalDay = None
    due_date_is_fixed: Flag | None = None
    due_date_fixed: OptionalDay = None
    end_date: OptionalDay = None
    parent_id: OptionalInt = None

    def fixed_dates(self) -> dict[str, date | None]:
        """The fixed dates given, under their current names (a deprecated name counts when the
        current one is absent, as GitLab reads them)."""
        given = self.given()
        out: dict[str, date | None] = {}
        for name, old in (("start_date_fixed", "start_date"), ("due_date_fixed", "end_date")):
            if name in given and getattr(self, name) is not None:
                out[name] = getattr(self, name)
            elif old in given:
                out[name] = getattr(self, old)
            elif name in given:
                out[name] = None
        return out


class EpicCreate(_EpicFields):
    title: str
    created_at: When | None = None


# The fields of which a change names at least one (GitLab's at_least_one_of, in its order).
UPDATE_FIELDS = (
    "add_labels",
    "color",
    "confidential",
    "description",
    "due_date_fixed",
    "due_date_is_fixed",
    "labels",
    "parent_id",
    "remove_labels",
    "start_date_fixed",
    "start_date_is_fixed",
    "state_event",
    "title",
    "start_date",
    "end_date",
)


class EpicUpdate(_EpicFields):
    epic_iid: Int
    title: str | None = None
    add_labels: LabelNames = None
    remove_labels: LabelNames = None
    state_event: Literal["close", "reopen"] | None = None
    updated_at: When | None = None

    @model_validator(mode="after")
    def _something(self) -> EpicUpdate:
        if not self.given() & set(UPDATE_FIELDS):
            raise GrapeMessage(
                f"{', '.join(UPDATE_FIELDS)} are missing, at least one parameter must be provided"
            )
        return self


class ChildEpics(Params):
    id: str
    epic_iid: Int


class ChildEpicRef(Params):
    id: str
    epic_iid: Int
    child_epic_id: Int


class ChildEpicCreate(Params):
    id: str
    epic_iid: Int
    title: str
    confidential: Flag | None = None


class ChildEpicMove(ChildEpicRef):
    move_before_id: OptionalInt = None
    move_after_id: OptionalInt = None
