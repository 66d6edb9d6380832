"""Request contracts for labels (GitLab's lib/api/labels.rb and group_labels.rb parameters),
the same under /projects/:id and /groups/:id; a label is named by its id or its title."""

from __future__ import annotations

from typing import ClassVar

from pydantic import model_validator

from kiln.schemas._types import Flag, GrapeMessage, OptionalInt, PageParams, Params, SearchText

# A priority given as null or "" takes the label's priority away (Grape's allow_blank).
Priority = OptionalInt


class LabelList(PageParams):
    id: str
    with_counts: Flag = False
    include_ancestor_groups: Flag = True
    # Group lists only: labels of the groups below, and of the projects inside.
    include_descendant_groups: Flag = False
    only_group_labels: Flag = True
    search: SearchText | None = None


class LabelGet(Params):
    id: str
    label_id: str
    include_ancestor_groups: Flag = True
    include_descendant_groups: Flag = False
    only_group_labels: Flag = True


class LabelRef(Params):
    """A label named in the path (`label_id`), or in the parameters by the deprecated routes."""

    id: str
    label_id: str | None = None
    name: str | None = None

    def ident(self) -> str:
        return self.label_id if self.label_id is not None else (self.name or "")


class LabelRefByName(LabelRef):
    """The deprecated routes that name the label by `name` only (promote, group delete)."""

    name: str


class LabelRefOneOf(LabelRef):
    """The deprecated routes that take exactly one of `label_id` and `name`."""

    @model_validator(mode="after")
    def _one_of(self) -> LabelRefOneOf:
        check_one_of(self.label_id, self.name)
        return self


def check_one_of(label_id: str | None, name: str | None) -> None:
    if label_id is not None and name is not None:
        raise GrapeMessage("label_id, name are mutually exclusive")
    if label_id is None and name is None:
        raise GrapeMessage("label_id, name are missing, exactly one parameter must be provided")


class LabelCreate(Params):
    id: str
    name: str
    color: str
    description: str | None = None
    # Projects only; a group label has no priority of its own.
    priority: Priority = None


class LabelUpdate(LabelRef):
    new_name: str | None = None
    color: str | None = None
    description: str | None = None
    priority: Priority = None

    keep_null: ClassVar[frozenset[str]] = frozenset({"priority"})
    # What counts as a change, in GitLab's at_least_one_of (projects also take a priority).
    changes: ClassVar[tuple[str, ...]] = ("new_name", "color", "description", "priority")

    @model_validator(mode="after")
    def _at_least_one(self) -> LabelUpdate:
        if not (set(self.changes) & self.given()):
            raise GrapeMessage(
                f"{', '.join(self.changes)} are missing, at least one parameter must be provided"
            )
        return self


class GroupLabelUpdate(LabelUpdate):
    changes: ClassVar[tuple[str, ...]] = ("new_name", "color", "description")


class LabelUpdateOneOf(LabelUpdate):
    """PUT /projects/:id/labels: the label by `label_id` or `name` in the parameters."""

    @model_validator(mode="after")
    def _one_of(self) -> LabelUpdateOneOf:
        check_one_of(self.label_id, self.name)
        return self


class GroupLabelUpdateOneOf(GroupLabelUpdate):
    @model_validator(mode="after")
    def _one_of(self) -> GroupLabelUpdateOneOf:
        check_one_of(self.label_id, self.name)
        return self
