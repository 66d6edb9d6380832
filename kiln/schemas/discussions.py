"""Request contracts for threads (GitLab's lib/api/discussions.rb parameters); the noteable's
path field is added per kind by schemas.notes.for_noteable."""

from __future__ import annotations

from typing import Self

from pydantic import model_validator

from kiln.schemas._types import Flag, GrapeMessage, Int, PageParams, When
from kiln.schemas.notes import NoteableParams


class DiscussionList(NoteableParams, PageParams):
    pass


class DiscussionGet(NoteableParams):
    discussion_id: str


class DiscussionCreate(NoteableParams):
    body: str
    created_at: When | None = None


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
