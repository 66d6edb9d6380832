"""Markdown XSS: the `*_html` fields kiln renders (kiln.markdown) carry no script, whatever
the text. Each payload class that has hit forges is read back the way a browser reads the
HTML: entities decoded, tabs and newlines dropped from URLs, schemes in any case."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

import pytest

from kiln.markdown import render, render_inline

# What Markdown itself makes, and the attributes it gives them.
ELEMENTS = {
    "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "img", "li",
    "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ATTRIBUTES = {"href", "title", "src", "alt", "start", "rel"}
SCRIPT_SCHEMES = {"javascript", "vbscript", "data", "file"}
C0_AND_SPACE = "".join(map(chr, range(0x21)))

# Ways to spell a script URL that a browser still runs.
SCRIPT_URLS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "  JAVASCRIPT:alert(1)  ",
    "java&#115;cript:alert(1)",
    "&#106;avascript:alert(1)",
    "&#x6A;avascript:alert(1)",
    "jav&#0000097;script:alert(1)",
    "javascript&colon;alert(1)",
    "jav&#x09;ascript:alert(1)",
    "jav&#x0A;ascript:alert(1)",
    "jav&#x0D;ascript:alert(1)",
    "&#1;javascript:alert(1)",
    "&#x20;javascript:alert(1)",
    "<javascript:alert(1)>",
    "javascript:/*--></title></style></script><svg/onload=alert(1)>",
    "vbscript:msgbox(1)",
    "VBScript:msgbox(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "DATA:text/html,%3Cscript%3Ealert(1)%3C/script%3E",
    "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+",
    "data:image/png;base64,iVBORw0KGgo=",
    "file:///etc/passwd",
]

# Markdown that puts a URL where a browser follows or loads it.
PLACES = {
    "link": "[click]({url})",
    "image": "![pic]({url})",
    "titled link": '[click]({url} "title")',
    "reference link": "[click][r]\n\n[r]: {url}",
    "reference image": "![pic][r]\n\n[r]: {url}",
    "autolink": "<{url}>",
    "link in a table": "| a |\n|---|\n| [click]({url}) |",
    "link in a list": "- [click]({url})",
    "link in a quote": "> [click]({url})",
}

# Raw HTML, which Markdown renders as text (html is off).
RAW_HTML = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<math><maction actiontype=statusline xlink:href=javascript:alert(1)>x</maction></math>",
    '<a href="javascript:alert(1)">x</a>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    "<details open ontoggle=alert(1)>",
    "<style>*{background:url(javascript:alert(1))}</style>",
    "<form><button formaction=javascript:alert(1)>x</button></form>",
    "<object data=javascript:alert(1)></object>",
    "<embed src=javascript:alert(1)>",
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    "<base href=//evil.example/>",
    "<input autofocus onfocus=alert(1)>",
    "<!--><script>alert(1)</script>-->",
    "<div>\n<script>alert(1)</script>\n</div>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<scr<script>ipt>alert(1)</script>",
]

# Text that tries to break out of an attribute Markdown writes.
ATTRIBUTE_BREAKOUTS = [
    '![x" onerror="alert(1)](x.png)',
    '![x](x.png "t" onerror="alert(1)")',
    '[x](x.png "t\\" onmouseover=\\"alert(1)")',
    '[x](https://example.com/"onmouseover="alert(1))',
    '<https://example.com/"onclick="alert(1)>',
    '```"><script>alert(1)</script>\ncode\n```',
    '```js" onmouseover="alert(1)\ncode\n```',
    "[x](https://example.com/'onmouseover='alert(1))",
]


class Parsed(HTMLParser):
    """Elements, attributes and text as a browser builds them (character references decoded)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def scheme(url: str) -> str | None:
    """The scheme a browser's URL parser finds (WHATWG): C0 controls and spaces trimmed, tabs
    and newlines dropped, case folded; None for a relative URL."""
    cleaned = re.sub(r"[\t\n\r]", "", url.strip(C0_AND_SPACE))
    found = re.match(r"([A-Za-z][A-Za-z0-9+.\-]*):", cleaned)
    return found.group(1).lower() if found else None


def runs_nothing(html: str) -> None:
    """What a browser builds from `html` holds only Markdown's own elements and attributes, and
    no URL it would follow or load runs script."""
    for tag, attrs in Parsed(html).elements:
        assert tag in ELEMENTS, f"<{tag}> in {html!r}"
        assert set(attrs) <= ATTRIBUTES, f"{set(attrs) - ATTRIBUTES} on <{tag}> in {html!r}"
        for name in ("href", "src"):
            if attrs.get(name) is not None:
                assert scheme(attrs[name] or "") not in SCRIPT_SCHEMES, f"{name}={attrs[name]!r} in {html!r}"


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("url", SCRIPT_URLS)
def test_a_script_url_never_becomes_a_link_or_an_image_source(place, url):
    text = PLACES[place].format(url=url)
    runs_nothing(render(text))
    runs_nothing(render_inline(text))


@pytest.mark.parametrize("html", RAW_HTML)
def test_raw_html_is_shown_as_text(html):
    assert Parsed(render_inline(html)).elements == []
    assert unescape(render(html)).strip() == f"<p>{html}</p>"
    assert unescape(render_inline(html)) == html


@pytest.mark.parametrize("html", RAW_HTML)
def test_raw_html_inside_markdown_is_shown_as_text(html):
    for text in (f"**{html}**", f"[{html}](https://example.com)", f"| a |\n|---|\n| {html} |", f"> {html}"):
        runs_nothing(render(text))
        assert not {"script", "img", "svg", "math", "iframe", "style"} & {
            t for t, _ in Parsed(render(text)).elements
        }


@pytest.mark.parametrize("text", ATTRIBUTE_BREAKOUTS)
def test_text_cannot_break_out_of_an_attribute(text):
    runs_nothing(render(text))
    runs_nothing(render_inline(text))


def test_links_and_images_that_run_nothing_are_kept():
    html = render(
        "[site](https://example.com/a?b=1#c) [mail](mailto:a@example.com) [rel](/group/project)"
        " ![pic](/uploads/0123/pic.png) <https://example.com>"
    )
    assert [attrs.get("href") or attrs.get("src") for _, attrs in Parsed(html).elements][1:] == [
        "https://example.com/a?b=1#c",
        "mailto:a@example.com",
        "/group/project",
        "/uploads/0123/pic.png",
        "https://example.com",
    ]


def test_a_link_opens_no_window_that_can_reach_back():
    anchors = [attrs for tag, attrs in Parsed(render("[x](https://example.com)")).elements if tag == "a"]
    assert anchors == [{"href": "https://example.com", "rel": "noopener noreferrer"}]


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("a\ud800b", "<p>a\ufffdb</p>"),
        ("\udfff", "<p>\ufffd</p>"),
        (
            "[x](https://example.com/\ud83d)",
            '<p><a href="https://example.com/%EF%BF%BD" rel="noopener noreferrer">x</a></p>',
        ),
    ],
)
def test_text_no_encoding_can_carry_renders_with_a_replacement_character(text, html):
    assert render(text) == html
    assert render_inline(text) == html.removeprefix("<p>").removesuffix("</p>")


def test_a_text_too_long_to_keep_rendered_is_sanitized_alike():
    long_text = "[x](javascript:alert(1)) <script>alert(1)</script>\n\n" * 1000
    html = render(long_text)
    runs_nothing(html)
    assert html.count("&lt;script&gt;") == 1000


# ------------------------------------------------------------------------- through the API


def test_a_project_description_html_runs_nothing(api, make):
    owner = make.user()
    project = make.project(owner=owner)
    text = "\n\n".join([*RAW_HTML, *(PLACES["link"].format(url=url) for url in SCRIPT_URLS)])
    r = api(owner).put(f"/projects/{project.id}", json={"description": text})
    assert r.status_code == 200
    runs_nothing(r.json()["description_html"])
    assert "<script" not in r.json()["description_html"].lower()


def test_a_status_message_html_runs_nothing(api, make):
    user = make.user()
    r = api(user).put(
        "/user/status", json={"message": "<img src=x onerror=alert(1)>[x](javascript:alert(1))"}
    )
    assert r.status_code == 200
    runs_nothing(r.json()["message_html"])
    assert r.json()["message_html"] == ("&lt;img src=x onerror=alert(1)&gt;[x](javascript:alert(1))")
