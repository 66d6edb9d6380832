"""The one Content-Disposition every file answer sends (raw files, archives, uploads)."""

from __future__ import annotations

import pytest

from kiln.api._render import content_disposition


@pytest.mark.parametrize(
    ("name", "fallback", "exact"),
    [
        ("plain.txt", "plain.txt", "plain.txt"),
        ('say "hi".txt', "say _hi_.txt", "say%20%22hi%22.txt"),
        ("back\\slash", "back_slash", "back%5Cslash"),
        ("café ☕.md", "caf_ _.md", "caf%C3%A9%20%E2%98%95.md"),
        ("evil\r\nSet-Cookie: a=b.txt", "evil__Set-Cookie: a=b.txt", "evil%0D%0ASet-Cookie%3A%20a%3Db.txt"),
    ],
)
def test_a_file_name_is_quoted_safely_and_kept_exactly(name, fallback, exact):
    header = content_disposition("attachment", name)
    assert header == f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{exact}"
    assert "\r" not in header
    assert "\n" not in header
    assert header.count('"') == 2


def test_inline_names_its_kind():
    assert content_disposition("inline", "a.png").startswith('inline; filename="a.png"')
