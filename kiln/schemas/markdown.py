"""Request contract for GitLab's Markdown API (lib/api/markdown.rb)."""

from __future__ import annotations

from kiln.schemas._types import Flag, Params


class MarkdownRender(Params):
    text: str
    # GitLab Flavored Markdown: references (#12, ~bug, %v1, &5, @user) linked.
    gfm: Flag = False
    # The project references are read from (its id or full path).
    project: str | None = None
