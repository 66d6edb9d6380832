"""Badge views (GitLab's Badge and BasicBadgeDetails entities): the stored URLs and their
rendered forms, with `%{placeholder}`s filled from the project the badge is shown for."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.badges import BadgeRow

_PLACEHOLDER = re.compile(r"%\{([a-z_]+)\}")


def rendered_url(url: str, values: Mapping[str, str] | None) -> str:
    """`url` with each placeholder it names replaced by its value; one kiln has no value for
    stays as written, and with no project to read (`values` None) the URL is unchanged."""
    if values is None:
        return url
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), url)


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
