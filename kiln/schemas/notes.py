"""Request contracts for notes (GitLab's lib/api/notes.rb parameters). The noteable is named
in the path as each kind names it (`issue_iid`, an epic's global `epic_id`): `for_noteable`
gives each route its contract with that field."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import AfterValidator, ValidationInfo, create_model

from kiln.schemas._types import Flag, GrapeMessage, Int, PageParams, Params, When

P = TypeVar("P", bound="NoteableParams")

# A note's body, as GitLab's Note validates it (longer is refused by the service with its text).
BODY_LIMIT = 1_000_000


def _not_blank(value: str, info: ValidationInfo) -> str:
    # Grape's allow_blank: false (whitespace alone is blank too).
    if not value.strip():
        raise GrapeMessage(f"{info.field_name} is empty")
    return value


NonBlank = Annotated[str, AfterValidator(_not_blank)]


class NoteableParams(Params):
    """The parent (project or group) and, in a subclass, the noteable's reference."""

    id: str
    ref_field: ClassVar[str] = ""

    @property
    def ref(self) -> int:
        """The noteable's iid or id, whichever its path names."""
        return int(getattr(self, self.ref_field))


@cache
def for_noteable(base: type[P], ref_field: str, prefix: str, *, on_note: bool = False) -> type[P]:
    """`base` with the noteable's path field (`issue_iid`, `epic_id`, `epic_iid`) required, and
    with `on_note` the path's `note_id` too (what is reacted to is one of its notes)."""
    fields: dict[str, Any] = {ref_field: (Int, ...)}
    if on_note:
        fields["note_id"] = (Int, ...)
    name = f"{prefix}{'Note' if on_note else ''}{base.__name__}"
    model = create_model(name, __base__=base, **fields)
    model.ref_field = ref_field
    return model


class NoteList(NoteableParams, PageParams):
    order_by: Literal["created_at", "updated_at"] = "created_at"
    sort: Literal["asc", "desc"] | None = None  # type: ignore[assignment]
    activity_filter: Literal["all_notes", "only_comments", "only_activity"] = "all_notes"


class NoteGet(NoteableParams):
    note_id: Int


class NoteCreate(NoteableParams):
    body: str
    internal: Flag | None = None
    # Deprecated spelling of `internal`, still accepted.
    confidential: Flag | None = None
    created_at: When | None = None
    merge_request_diff_head_sha: str | None = None


class NoteUpdate(NoteableParams):
    note_id: Int
    body: NonBlank | None = None
    # Deprecated: a note's confidentiality no longer changes; accepted and ignored.
    confidential: Flag | None = None
