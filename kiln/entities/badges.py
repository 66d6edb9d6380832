"""Badge views (GitLab's Badge and BasicBadgeDetails entities): the stored URLs and their
rendered forms, with `%{placeholder}`s filled from the project the badge is shown for.

Values are put in as GitLab puts them (unescaped) in a URL's path, query and fragment; in its
scheme and authority, where a value such as a tag named `@evil.com` would send the URL to
another host, only kiln's own host name (`%{gitlab_server}`) goes in as it is, other values
only when they are letters, digits and dashes (they may extend a label of the host written,
never add a label, user info, a port or a path), and are otherwise left as written."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.badges import BadgeRow

_PLACEHOLDER = re.compile(r"%\{([a-z_]+)\}")
# Where a URL's authority starts (after `scheme:` and its slashes) and what ends it.
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.\-]*:[/\\]*")
_AUTHORITY_END = re.compile(r"[/\\?#]")
# Values that come from kiln's settings, not from what users name.
_TRUSTED_IN_HOST = frozenset({"gitlab_server"})
_LABEL_SAFE = re.compile(r"[A-Za-z0-9-]*")


def _authority_end(url: str) -> int:
    """Where the scheme and authority of `url` (as written, placeholders unfilled) end."""
    start = _SCHEME.match(url)
    end = _AUTHORITY_END.search(url, start.end() if start is not None else 0)
    return end.start() if end is not None else len(url)


def rendered_url(url: str, values: Mapping[str, str] | None) -> str:
    """`url` with each placeholder it names replaced by its value; one kiln has no value for
    stays as written, and with no project to read (`values` None) the URL is unchanged."""
    if values is None:
        return url
    host_end = _authority_end(url)

    def fill(m: re.Match[str]) -> str:
        name, written = m.group(1), m.group(0)
        value = values.get(name)
        if value is None:
            return written
        if m.start() < host_end and name not in _TRUSTED_IN_HOST and not _LABEL_SAFE.fullmatch(value):
            return written
        return value

    return _PLACEHOLDER.sub(fill, url)


def badge_preview(link_url: str, image_url: str, values: Mapping[str, str] | None) -> dict[str, Any]:
    """What `…/badges/render` answers: the URLs as given and as they would show."""
    return {
        "link_url": link_url,
        "rendered_link_url": rendered_url(link_url, values),
        "image_url": image_url,
        "rendered_image_url": rendered_url(image_url, values),
    }


def _kind(row: BadgeRow) -> str:
    return "project" if row.project_id is not None else "group"


def badge(row: BadgeRow, values: Mapping[str, str] | None, *, with_name: bool = True) -> dict[str, Any]:
    """A badge; `with_name` off for the group views that show no name (a single group badge)."""
    view: dict[str, Any] = {"name": row.name} if with_name else {}
    view.update(
        id=row.id,
        link_url=row.link_url,
        image_url=row.image_url,
        rendered_link_url=rendered_url(row.link_url, values),
        rendered_image_url=rendered_url(row.image_url, values),
        kind=_kind(row),
    )
    return view
