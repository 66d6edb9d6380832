"""User views, composed like GitLab's entities: basic ⊂ public ⊂ self ⊂ admin."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Union

import orjson

from kiln.entities._format import day, iso
from kiln.entities._rendered import RenderedViews
from kiln.markdown import render_inline
from kiln.storage import user_avatar_key

if TYPE_CHECKING:
    from kiln.models import User as UserModel
    from kiln.queries.users import IdentityRow, UserRow

# Reads render UserRow records; a write renders the ORM user it just saved.
User = Union["UserRow", "UserModel"]


def avatar_url(user: User, base: str) -> str | None:
    if not user.avatar_path:
        return None
    return f"{base}/uploads/{user_avatar_key(user.id, user.avatar_path.rsplit('/', 1)[-1])}"


def user_basic(user: User, base: str) -> dict[str, Any]:
    return {
        "id": user.id,
        "username": user.username,
        "name": user.name,
        "state": user.state,
        "locked": False,
        "avatar_url": avatar_url(user, base),
        "web_url": f"{base}/{user.username}",
    }


def user_public(user: User, base: str, *, profile_visible: bool = True) -> dict[str, Any]:
    """The single-user view; a private profile keeps the fields but not their values."""
    view = user_basic(user, base)
    shown = profile_visible
    view.update(
        {
            "created_at": iso(user.created_at) if shown else None,
            "bio": user.bio if shown else "",
            "location": user.location if shown else "",
            "public_email": (user.public_email or None) if shown else None,
            "skype": user.skype if shown else "",
            "linkedin": user.linkedin if shown else "",
            "twitter": user.twitter if shown else "",
            "discord": user.discord if shown else "",
            "website_url": user.website_url if shown else "",
            "organization": user.organization if shown else "",
            "job_title": user.job_title if shown else "",
            "pronouns": user.pronouns if shown else None,
            "bot": user.user_type not in ("human", "ghost"),
            "work_information": _work_information(user) if shown else None,
            "followers": 0,
            "following": 0,
            "local_time": None,
        }
    )
    return view


def user_self(
    user: User, base: str, identities: Sequence[IdentityRow], *, can_create_project: bool
) -> dict[str, Any]:
    """What a user sees of themselves (GET /user): private details, no sign-in IPs."""
    view = user_public(user, base)
    view.update(
        {
            "last_sign_in_at": iso(user.last_sign_in_at),
            "confirmed_at": iso(user.confirmed_at),
            "last_activity_on": day(user.last_activity_on),
            "email": user.email,
            "theme_id": user.theme_id,
            "color_scheme_id": user.color_scheme_id,
            "projects_limit": user.projects_limit,
            "current_sign_in_at": iso(user.current_sign_in_at),
            "identities": [
                {"provider": i.provider, "extern_uid": i.extern_uid, "saml_provider_id": i.saml_provider_id}
                for i in identities
            ],
            "can_create_group": user.can_create_group,
            "can_create_project": can_create_project,
            "two_factor_enabled": user.two_factor_enabled,
            "external": user.external,
            "private_profile": user.private_profile,
            "commit_email": user.email,
            "preferred_language": "en",
        }
    )
    return view


def user_admin(
    user: User, base: str, identities: Sequence[IdentityRow], *, can_create_project: bool
) -> dict[str, Any]:
    view = user_self(user, base, identities, can_create_project=can_create_project)
    view.update(
        {
            "is_admin": user.admin,
            "note": user.note,
            "namespace_id": user.namespace_id,
            "created_by": None,
            "current_sign_in_ip": user.current_sign_in_ip,
            "last_sign_in_ip": user.last_sign_in_ip,
            "shared_runners_minutes_limit": user.shared_runners_minutes_limit,
            "extra_shared_runners_minutes_limit": user.extra_shared_runners_minutes_limit,
            "using_license_seat": False,
            "is_auditor": False,
        }
    )
    return view


def user_detail(
    user: User,
    view: str,
    base: str,
    identities: Sequence[IdentityRow] = (),
    custom_attributes: list[tuple[str, str]] | None = None,
    *,
    can_create_project: bool = False,
) -> dict[str, Any]:
    """One of the user views, as the service chose it: admin, self, public, private profile,
    or basic (a non-administrator's list)."""
    if view == "admin":
        rendered = user_admin(user, base, identities, can_create_project=can_create_project)
        return (
            with_custom_attributes(rendered, custom_attributes) if custom_attributes is not None else rendered
        )
    if view == "self":
        return user_self(user, base, identities, can_create_project=can_create_project)
    if view == "basic":
        return user_basic(user, base)
    return user_public(user, base, profile_visible=view == "public")


# The user views lists send, as JSON kept by the row they are rendered from (RenderedViews).
RENDERED = RenderedViews(limit=2048, budget=4 << 20)


def user_detail_json(
    user: User,
    view: str,
    base: str,
    identities: Sequence[IdentityRow] = (),
    *,
    can_create_project: bool = False,
) -> orjson.Fragment:
    """user_detail without custom attributes, rendered once per row version: the version
    stands for every column of the row (models RowVersion), its identities included."""
    key = ("detail", view, base, user.id, user.row_version, tuple(identities), can_create_project)
    return RENDERED.get(
        key, lambda: user_detail(user, view, base, identities, can_create_project=can_create_project)
    )


def with_custom_attributes(view: dict[str, Any], attributes: list[tuple[str, str]]) -> dict[str, Any]:
    view["custom_attributes"] = [{"key": k, "value": v} for k, v in attributes]
    return view


def user_status(user: User) -> dict[str, Any]:
    message = user.status_message
    return {
        "emoji": user.status_emoji,
        "message": message,
        "availability": user.status_availability or "not_set",
        "message_html": render_inline(message) if message else None,
        "clear_status_at": iso(user.status_clear_at),
    }


def _work_information(user: User) -> str | None:
    if user.job_title and user.organization:
        return f"{user.job_title} at {user.organization}"
    return user.job_title or user.organization or None


def moderated() -> dict[str, Any]:
    """What approving or rejecting a user answers (GitLab's service result)."""
    return {"message": "Success"}
