"""Markdown to sanitized HTML for `*_html` fields: markdown-it-py, then nh3, so no XSS."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


def render(text: str | None) -> str:
    if not text:
        return ""
    return nh3.clean(_md.render(text)).strip()


def render_inline(text: str | None) -> str:
    """One line of Markdown without the surrounding paragraph (status messages)."""
    if not text:
        return ""
    return nh3.clean(_md.renderInline(text)).strip()
