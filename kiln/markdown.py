"""Markdown to sanitized HTML for `*_html` fields: markdown-it-py, then nh3, so no XSS."""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


def render(text: str | None) -> str:
    if not text:
        return ""
    return _render_cached(text)


@lru_cache(maxsize=4096)
def _render_cached(text: str) -> str:
    # The HTML depends on the text alone; lists render the same descriptions again and again.
    return nh3.clean(_md.render(text)).strip()


def render_inline(text: str | None) -> str:
    """One line of Markdown without the surrounding paragraph (status messages)."""
    if not text:
        return ""
    return nh3.clean(_md.renderInline(text)).strip()
