"""Markdown to sanitized HTML for `*_html` fields: markdown-it-py, then nh3, so no XSS.

Two layers, each enough alone against script: markdown-it escapes raw HTML (`html` off) and
refuses `javascript:`, `vbscript:`, `file:` and `data:` URLs (but raster images) however they
are spelled; nh3 then keeps only the elements and attributes Markdown itself makes, and URLs
that are relative or whose scheme is on a short list, so a gap in one is closed by the other."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Protocol

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token

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

# GitLab Flavored Markdown references (render_gfm) are links kiln itself writes: they alone
# carry these classes and data attributes, which nothing a user types can produce (raw HTML
# is escaped), and whose values are kiln's ids, paths and escaped titles.
_GFM_CLASSES = {
    "gfm", "gfm-issue", "gfm-merge_request", "gfm-label", "gfm-milestone", "gfm-epic",
    "gfm-project_member",
}  # fmt: skip
_GFM_ATTRIBUTES = {
    **_ATTRIBUTES,
    "a": _ATTRIBUTES["a"] | {
        "data-reference-type", "data-original", "data-link", "data-project", "data-project-path",
        "data-issue", "data-iid", "data-merge-request", "data-label", "data-milestone",
        "data-epic", "data-group", "data-user",
    },
}  # fmt: skip

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


class Linker(Protocol):
    """What render_gfm asks of its context: for each run of plain text (never code, never a
    link's text), the spans to turn into links, as (start, end, anchor HTML), each for a
    reference that exists and the viewer may see. One call per text, so lookups batch."""

    def links(self, segments: Sequence[str]) -> list[list[tuple[int, int, str]]]: ...


def render_gfm(text: str | None, linker: Linker) -> str:
    """`render`, with GitLab's references (`#12`, `~bug`, `%v1`, `&5`, `@user`, ...) linked:
    the links are put in after markdown-it has parsed the text (so never inside code or a
    link) and nh3 cleans the whole, links included."""
    if not text:
        return ""
    text = _SURROGATE.sub("\ufffd", text)
    segments = plain_segments(text)
    spans = linker.links(segments) if segments else []
    if not any(spans):
        return render(text)
    key = tuple(tuple(found) for found in spans)
    if len(text) > _CACHED_CHARS:
        return _render_linked(text, key)
    return _render_linked_cached(text, key)


def plain_segments(text: str | None) -> tuple[str, ...]:
    """The runs of plain text Markdown makes of `text`: what references may be found in
    (code spans, code blocks, links and images left out)."""
    if not text:
        return ()
    text = _SURROGATE.sub("\ufffd", text)
    if len(text) > _CACHED_CHARS:
        return _segments_of(text)
    return _plain_segments(text)


@lru_cache(maxsize=1024)
def _plain_segments(text: str) -> tuple[str, ...]:
    return _segments_of(text)


def _segments_of(text: str) -> tuple[str, ...]:
    tokens = _md.parse(text)
    return tuple(child.content for child, _ in _text_tokens(tokens))


def _text_tokens(tokens: list[Token]) -> Iterator[tuple[Token, Token]]:
    """Each text token outside links, with the inline token holding it, in document order."""
    for token in tokens:
        if token.type != "inline" or not token.children:
            continue
        depth = 0
        for child in token.children:
            if child.type == "link_open":
                depth += 1
            elif child.type == "link_close":
                depth -= 1
            elif child.type == "text" and depth == 0 and child.content:
                yield child, token


@lru_cache(maxsize=1024)
def _render_linked_cached(text: str, spans: tuple[tuple[tuple[int, int, str], ...], ...]) -> str:
    return _render_linked(text, spans)


def _render_linked(text: str, spans: tuple[tuple[tuple[int, int, str], ...], ...]) -> str:
    tokens = _md.parse(text)
    replaced: dict[int, list[Token]] = {}
    for (child, _), found in zip(list(_text_tokens(tokens)), spans, strict=False):
        if not found:
            continue
        pieces: list[Token] = []
        at = 0
        for start, end, anchor in found:
            if start > at:
                pieces.append(_token("text", child.content[at:start]))
            pieces.append(_token("html_inline", anchor))
            at = end
        if at < len(child.content):
            pieces.append(_token("text", child.content[at:]))
        replaced[id(child)] = pieces
    for token in tokens:
        if token.type == "inline" and token.children:
            children: list[Token] = []
            for child in token.children:
                children.extend(replaced.get(id(child), [child]))
            token.children = children
    html = _md.renderer.render(tokens, _md.options, {})
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_GFM_ATTRIBUTES,
        allowed_classes={"a": _GFM_CLASSES},
        url_schemes=_URL_SCHEMES,
    ).strip()


def _token(kind: str, content: str) -> Token:
    token = Token(kind, "", 0)
    token.content = content
    return token
