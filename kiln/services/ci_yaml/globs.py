"""Path globs as GitLab matches them (Ruby's File.fnmatch? with FNM_PATHNAME, FNM_DOTMATCH
and FNM_EXTGLOB): `*` and `?` stay inside one directory, `**/` spans any number of them,
`[...]` classes and `{a,b}` alternatives."""

from __future__ import annotations

import functools
import re

MAX_PATTERN = 1024


@functools.lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str] | None:
    """The glob as an anchored regular expression; None for one that cannot match."""
    if len(pattern) > MAX_PATTERN:
        return None
    out: list[str] = []
    i, n, braces = 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
                out.append("(?:[^/]*/)*")
                i += 3
                continue
            while i < n and pattern[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find(
                "]", i + 2 if pattern.startswith("[!", i) or pattern.startswith("[^", i) else i + 1
            )
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
                continue
        elif c == "{":
            braces += 1
            out.append("(?:")
        elif c == "}" and braces:
            braces -= 1
            out.append(")")
        elif c == "," and braces:
            out.append("|")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    if braces:
        return None
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error:
        return None


def matches(pattern: str, path: str) -> bool:
    """Whether `path` matches the glob."""
    compiled = compile_glob(pattern)
    return compiled is not None and compiled.match(path) is not None


def any_match(patterns: list[str], paths: list[str]) -> bool:
    """Whether any path matches any of the globs."""
    compiled = [c for c in (compile_glob(p) for p in patterns) if c is not None]
    return any(c.match(path) for path in paths for c in compiled)
