"""Request contracts for badges (GitLab's lib/api/badges.rb parameters), the same under
/groups/:id and /projects/:id."""

from __future__ import annotations

from kiln.schemas._types import Int, PageParams, Params


class BadgeList(PageParams):
    id: str
    # Compared exactly, case included (GitLab's `with_name` scope).
    name: str | None = None


class BadgeGet(Params):
    id: str
    badge_id: Int


class BadgeRender(Params):
    id: str
    link_url: str
    image_url: str


class BadgeCreate(Params):
    id: str
    link_url: str
    image_url: str
    name: str | None = None


class BadgeUpdate(Params):
    id: str
    badge_id: Int
    link_url: str | None = None
    image_url: str | None = None
    name: str | None = None
