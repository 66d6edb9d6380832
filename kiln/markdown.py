"""Markdown to sanitized HTML for `*_html` fields: markdown-it-py, then nh3, so no XSS.

Two layers, each enough alone against script: markdown-it escapes raw HTML (`html` off) and
refuses `javascript:`, `vbscript:`, `file:` and `data:` URLs (but raster images) however they
are spelled; nh3 then keeps only the elements and attributes Markdown itself makes, and URLs
that are relative or whose scheme is on a short list, so a gap in one is closed by the other."""

from __future__ import annotations

import re
from functools import lru_cache

import nh3
from markdown_it import MarkdownIt

_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")

# What CommonMark with tables and strikethrough renders, and nothing else: no element that runs
# or loads anything but an image, no style, no id or class to clobber a page's own.
_TAGS = {
    "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "img", "li",
    "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "ol": {"start"}}
# Relative links are kept; absolute ones only with these schemes (never javascript, vbscript, data).
_URL_SCHEMES = {"http", "https", "mailto", "ftp", "ftps", "git", "irc", "ircs", "ssh", "tel", "xmpp"}

# A lone surrogate is not text nh3 (UTF-8) can take: it becomes U+FFFD, as NUL does in Markdown.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Texts rendered again and again (descriptions in lists) are short; a long one is not kept, so
# the cache holds at most its size times this many characters.
_CACHED_CHARS = 4096


def render(text: str | None) -> str:
    if not text:
        return ""
    text = _SURROGATE.sub("\ufffd", text)
    if len(text) > _CACHED_CHARS:
        return _clean(_md.render(text))
    return _render_cached(text)


@lru_cache(maxsize=1024)
def _render_cached(text: str) -> str:
    # The HTML depends on the text alone; lists render the same descriptions again and again.
    return _clean(_md.render(text))


def render_inline(text: str | None) -> str:
    """One line of Markdown without the surrounding paragraph (status messages)."""
    if not text:
        return ""
    return _clean(_md.renderInline(_SURROGATE.sub("\ufffd", text)))


def _clean(html: str) -> str:
    return nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES, url_schemes=_URL_SCHEMES).strip()
