"""The SSH key views (GitLab's SSHKey and SSHKeyWithUser entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from kiln.entities._format import iso

if TYPE_CHECKING:
    from kiln.models import SSHKey
    from kiln.queries.keys import KeyRow


def instance_host(external_url: str) -> str:
    """The host GitLab names itself by in published keys (no scheme, no port)."""
    return urlsplit(external_url).hostname or "localhost"


def publishable_key(key_text: str, owner_name: str, host: str) -> str:
    """The key as others may see it: its comment, often an e-mail address, replaced by the
    owner's name and the instance's host."""
    return " ".join([*key_text.split()[:2], f"{owner_name} ({host})"])


def ssh_key(key: KeyRow | SSHKey, owner_name: str, host: str) -> dict[str, Any]:
    return {
        "id": key.id,
        "title": key.title,
        "created_at": iso(key.created_at),
        "expires_at": iso(key.expires_at),
        "key": publishable_key(key.key, owner_name, host),
        "usage_type": key.usage_type,
    }


def ssh_key_with_user(key: KeyRow, host: str, user_view: dict[str, Any]) -> dict[str, Any]:
    view = ssh_key(key, user_view["name"], host)
    view["user"] = user_view
    return view
