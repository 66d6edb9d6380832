"""Badges of groups and projects: a link and an image, with placeholders filled from a
project. A project shows its own badges and those of its group and every group above it;
a group's badges are filled from its oldest project. Reading needs sight of the group or
project; changing badges takes GitLab's admin ability on it (a project's Maintainer, a
group's Owner), and a group badge is changed only through its group."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import NotFound, ValidationFailed
from kiln.git import branches as git_refs
from kiln.git.branches import TagRef
from kiln.models import Badge
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import badges as finder
from kiln.queries.badges import BadgeRow, PlaceholderProject
from kiln.schemas.badges import BadgeCreate, BadgeList, BadgeRender, BadgeUpdate
from kiln.services import repositories, subjects

Kind = Literal["groups", "projects"]
Values = dict[str, str]

INVALID_URL = "must be a valid URL"
BLOCKED = "is blocked: "
NAME_LIMIT = 255


@dataclass(slots=True)
class Badges:
    page: PageResult  # items: BadgeRow
    values: Values | None


@dataclass(slots=True)
class OneBadge:
    row: BadgeRow
    values: Values | None


@dataclass(slots=True)
class Preview:
    link_url: str
    image_url: str
    values: Values | None


# ----------------------------------------------------------------------------- placeholders


def _updated(tag: TagRef) -> int:
    """When a tag was made: its tagger's time, or its commit's for a lightweight tag."""
    if tag.annotation is not None and tag.annotation.tagger is not None:
        return int(tag.annotation.tagger.time)
    return int(tag.commit.committer.time) if tag.commit is not None else 0


def _git_values(settings: Settings, project: PlaceholderProject, text: str) -> tuple[str, str]:
    """The head of the default branch and the newest tag, read only when a URL asks."""
    wants_sha, wants_tag = "%{commit_sha}" in text, "%{latest_tag}" in text
    if not (wants_sha or wants_tag):
        return "", ""
    repo = repositories.store(settings).find(project.id)
    if repo is None:
        return "", ""
    sha = tag = ""
    if wants_sha and project.default_branch:
        head = git_refs.find_branch(repo, project.default_branch)
        sha = str(head.commit.id) if head is not None else ""
    if wants_tag:
        tags = git_refs.list_tags(repo)
        if tags:
            tag = max(tags, key=lambda t: (_updated(t), t.name)).name
    return sha, tag


def placeholder_values(
    settings: Settings, project: PlaceholderProject | None, urls: Iterable[str]
) -> Values | None:
    """What each placeholder stands for in badges shown for `project` (None: no project, the
    URLs stay as written). Values kiln cannot know read as empty, as GitLab's do."""
    if project is None:
        return None
    text = "".join(urls)
    full_path = f"{project.namespace_path}/{project.path}"
    sha, tag = _git_values(settings, project, text)
    return {
        "project_path": full_path,
        "project_title": project.name,
        "project_name": project.path,
        "project_id": str(project.id),
        "project_namespace": full_path,
        "group_name": project.group_path or "",
        "gitlab_server": urlsplit(settings.external_url).hostname or "",
        "default_branch": project.default_branch or "",
        "commit_sha": sha,
        "latest_tag": tag,
    }


def _urls(rows: Iterable[BadgeRow]) -> list[str]:
    return [url for r in rows for url in (r.link_url, r.image_url)]


def _of_project(s: ProjectSubject) -> PlaceholderProject:
    ns = s.namespace
    return PlaceholderProject(
        s.project.id,
        s.project.name,
        s.project.path,
        s.project.default_branch,
        namespace_path=ns.full_path,
        group_path=ns.full_path if ns.is_group else None,
    )


def _values_for(
    db: Session,
    settings: Settings,
    actor: Actor | None,
    subject: GroupSubject | ProjectSubject,
    urls: list[str],
) -> Values | None:
    """Placeholder values for badges shown on a subject: its own for a project; for a group,
    its oldest project the caller may see (none needed while no URL holds a placeholder)."""
    if isinstance(subject, ProjectSubject):
        return placeholder_values(settings, _of_project(subject), urls)
    if not any("%{" in url for url in urls):
        return None
    return placeholder_values(settings, finder.first_project_of_group(db, actor, subject.group.id), urls)


# ----------------------------------------------------------------------------- validation


def url_error(url: str) -> str | None:
    """GitLab's check of a badge URL: present, parseable, http or https, with a host."""
    if not url.strip():
        return INVALID_URL
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url.strip()):
        return BLOCKED + "URI is invalid"
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError:
        return BLOCKED + "URI is invalid"
    if parts.scheme.lower() not in ("http", "https"):
        return BLOCKED + "Only allowed schemes are http, https"
    if not parts.hostname:
        return BLOCKED + "URI is invalid"
    return None


def _validate(link_url: str | None, image_url: str | None, name: str | None) -> None:
    errors: dict[str, list[str]] = {}
    for field, value in (("link_url", link_url), ("image_url", image_url)):
        if value is not None and (problem := url_error(value)) is not None:
            errors[field] = [problem]
    if name is not None and len(name) > NAME_LIMIT:
        errors["name"] = [f"is too long (maximum is {NAME_LIMIT} characters)"]
    if errors:
        raise ValidationFailed(errors)


# ----------------------------------------------------------------------------- subjects


def _subject(
    db: Session, actor: Actor | None, kind: Kind, ident: str, *, admin: bool = False, rows: bool = True
) -> GroupSubject | ProjectSubject:
    """The group or project, read (`admin` off) or to change its badges."""
    if kind == "groups":
        return subjects.group(
            db, actor, ident, Action.ADMIN_BADGES if admin else Action.READ_GROUP, rows=rows
        )
    return subjects.project(
        db, actor, ident, Action.ADMIN_BADGES if admin else Action.READ_PROJECT, rows=rows
    )


def _owner(subject: GroupSubject | ProjectSubject) -> dict[str, int]:
    if isinstance(subject, GroupSubject):
        return {"group_id": subject.group.id}
    return {"project_id": subject.project.id}


def _row(db: Session, subject: GroupSubject | ProjectSubject, badge_id: int) -> BadgeRow:
    """One of the subject's own badges (a project's group badges are its groups')."""
    row = finder.badge_of(db, badge_id, **_owner(subject))
    if row is None:
        raise NotFound("Badge")
    return row


# ----------------------------------------------------------------------------- reading


def list_badges(
    db: Session, actor: Actor | None, kind: Kind, q: BadgeList, page: Page, settings: Settings
) -> Badges:
    """A group's badges, or a project's own followed by those of its groups (ancestors
    included), oldest first; `name` keeps those named exactly so."""
    s = _subject(db, actor, kind, q.id)
    if isinstance(s, GroupSubject):
        result = finder.page_of_group(db, s.group.id, q.name, page)
    else:
        groups = s.namespace.ancestor_ids if s.namespace.is_group else []
        result = finder.page_of_project(db, s.project.id, groups, q.name, page)
    return Badges(result, _values_for(db, settings, actor, s, _urls(result.items)))


def get_badge(
    db: Session, actor: Actor | None, kind: Kind, ident: str, badge_id: int, settings: Settings
) -> OneBadge:
    s = _subject(db, actor, kind, ident)
    row = _row(db, s, badge_id)
    return OneBadge(row, _values_for(db, settings, actor, s, _urls([row])))


def render(db: Session, actor: Actor, kind: Kind, p: BadgeRender, settings: Settings) -> Preview:
    """A badge as it would show, stored nowhere (for those who may add one)."""
    s = _subject(db, actor, kind, p.id, admin=True)
    link_url, image_url = p.link_url.strip(), p.image_url.strip()
    _validate(link_url, image_url, None)
    return Preview(link_url, image_url, _values_for(db, settings, actor, s, [link_url, image_url]))


# ----------------------------------------------------------------------------- changing


def create_badge(db: Session, actor: Actor, kind: Kind, p: BadgeCreate, settings: Settings) -> OneBadge:
    s = _subject(db, actor, kind, p.id, admin=True, rows=False)
    link_url, image_url = p.link_url.strip(), p.image_url.strip()
    _validate(link_url, image_url, p.name)
    with transaction(db):
        badge = Badge(link_url=link_url, image_url=image_url, name=p.name, **_owner(s))
        db.add(badge)
        db.flush()
        badge_id = badge.id
    row = _row(db, s, badge_id)
    return OneBadge(row, _values_for(db, settings, actor, s, _urls([row])))


def _find(db: Session, subject: GroupSubject | ProjectSubject, badge_id: int) -> Badge:
    """The subject's own badge, for a write."""
    owner = _owner(subject)
    stmt = select(Badge).where(Badge.id == badge_id)
    if "group_id" in owner:
        stmt = stmt.where(Badge.group_id == owner["group_id"])
    else:
        stmt = stmt.where(Badge.project_id == owner["project_id"])
    badge = db.scalars(stmt).first()
    if badge is None:
        raise NotFound("Badge")
    return badge


def update_badge(db: Session, actor: Actor, kind: Kind, p: BadgeUpdate, settings: Settings) -> OneBadge:
    s = _subject(db, actor, kind, p.id, admin=True, rows=False)
    link_url = p.link_url.strip() if p.link_url is not None else None
    image_url = p.image_url.strip() if p.image_url is not None else None
    with transaction(db):
        badge = _find(db, s, p.badge_id)
        _validate(link_url, image_url, p.name)
        if link_url is not None:
            badge.link_url = link_url
        if image_url is not None:
            badge.image_url = image_url
        if p.name is not None:
            badge.name = p.name
        db.flush()
    row = _row(db, s, p.badge_id)
    return OneBadge(row, _values_for(db, settings, actor, s, _urls([row])))


def delete_badge(db: Session, actor: Actor, kind: Kind, ident: str, badge_id: int) -> None:
    s = _subject(db, actor, kind, ident, admin=True, rows=False)
    with transaction(db):
        db.delete(_find(db, s, badge_id))
