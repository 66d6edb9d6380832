"""Request contracts for threads (GitLab's lib/api/discussions.rb parameters); the noteable's
path field is added per kind by schemas.notes.for_noteable."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import model_validator

from kiln.schemas._types import Flag, GrapeMessage, Int, OptionalInt, OptionalStr, PageParams, Params, When
from kiln.schemas.notes import NoteableParams


class DiscussionList(NoteableParams, PageParams):
    pass


class DiscussionGet(NoteableParams):
    discussion_id: str


class DiffLineRangeEnd(Params):
    """One end of a multiline comment's range, as the client describes it."""

    line_code: OptionalStr = None
    type: OptionalStr = None
    old_line: OptionalInt = None
    new_line: OptionalInt = None


class DiffLineRange(Params):
    start: DiffLineRangeEnd | None = None
    end: DiffLineRangeEnd | None = None


class DiffPosition(Params):
    """Where on a merge request's diff a thread sits (GitLab's position parameters): the diff
    version by its three shas, the file, and the line (text) or spot (image)."""

    base_sha: str
    start_sha: str
    head_sha: str
    position_type: Literal["text", "image", "file"]
    new_path: OptionalStr = None
    old_path: OptionalStr = None
    new_line: OptionalInt = None
    old_line: OptionalInt = None
    line_range: DiffLineRange | None = None
    width: OptionalInt = None
    height: OptionalInt = None
    x: OptionalInt = None
    y: OptionalInt = None


class DiscussionCreate(NoteableParams):
    body: str
    created_at: When | None = None
    # Merge requests: a thread on the diff (a DiffNote), or on one of its commits.
    position: DiffPosition | None = None
    commit_id: OptionalStr = None


class DiscussionReply(NoteableParams):
    discussion_id: str
    body: str
    created_at: When | None = None


class DiscussionNoteGet(NoteableParams):
    discussion_id: str
    note_id: Int


class DiscussionNoteUpdate(NoteableParams):
    discussion_id: str
    note_id: Int
    body: str | None = None
    resolved: Flag | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        # Grape's exactly_one_of :body, :resolved.
        given = [name for name in ("body", "resolved") if getattr(self, name) is not None]
        if not given:
            raise GrapeMessage("body, resolved are missing, exactly one parameter must be provided")
        if len(given) > 1:
            raise GrapeMessage("body, resolved are mutually exclusive")
        return self


class DiscussionResolve(NoteableParams):
    discussion_id: str
    resolved: Flag
