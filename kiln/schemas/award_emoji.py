"""Request contracts for emoji reactions (GitLab's lib/api/award_emoji.rb parameters); the
awardable's path fields are added per route by schemas.notes.for_noteable."""

from __future__ import annotations

from kiln.schemas._types import Int, PageParams
from kiln.schemas.notes import NoteableParams


class AwardableParams(NoteableParams):
    @property
    def note_ref(self) -> int | None:
        """The note reacted to, on the routes under …/notes/:note_id."""
        value = getattr(self, "note_id", None)
        return None if value is None else int(value)


class AwardList(AwardableParams, PageParams):
    pass


class AwardGet(AwardableParams):
    award_id: Int


class AwardCreate(AwardableParams):
    name: str
