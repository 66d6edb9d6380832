"""The tag view. Tagger times keep their own UTC offset, as git records them."""

from __future__ import annotations

from typing import Any

from kiln.entities._format import git_text, git_time
from kiln.entities.commits import commit_basic
from kiln.git.branches import TagRef


def tag(t: TagRef, web_base: str) -> dict[str, Any]:
    annotation = t.annotation
    message = ""
    created_at = None
    if annotation is not None:
        message = git_text(annotation.raw_message)
        # git ends a tag message with a newline; the API shows the message as it was given.
        message = message[:-1] if message.endswith("\n") else message
        tagger = annotation.tagger
        if tagger is not None:
            created_at = git_time(tagger.time)
    return {
        "name": t.name,
        "message": message,
        "target": t.target,
        "commit": commit_basic(t.commit, web_base) if t.commit is not None else None,
        "release": None,
        "protected": False,
        "created_at": created_at,
    }
