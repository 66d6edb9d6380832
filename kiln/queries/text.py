"""Matching user-typed text in SQL: one escaping of LIKE's wildcards for every search."""

from __future__ import annotations

# The escape character every pattern below is written with: `.like(pattern, escape=ESCAPE)`.
ESCAPE = "\\"


def escape_like(text: str) -> str:
    """`%`, `_` and the escape character itself match only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains(text: str) -> str:
    """A case-folded pattern matching `text` anywhere (compare with lower(column))."""
    return f"%{escape_like(text.lower())}%"


def matches_search(name: str, term: str) -> bool:
    """GitLab's branch and tag search: `^prefix`, `suffix$`, or a part, ignoring case."""
    name, term = name.lower(), term.lower()
    if term.startswith("^") and term.endswith("$") and len(term) > 1:
        return name == term[1:-1]
    if term.startswith("^"):
        return name.startswith(term[1:])
    if term.endswith("$"):
        return name.endswith(term[:-1])
    return term in name
