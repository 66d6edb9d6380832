"""The GPG key view (GitLab's GpgKey entity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso

if TYPE_CHECKING:
    from kiln.models import GPGKey
    from kiln.queries.gpg_keys import GPGKeyRow


def gpg_key(key: GPGKeyRow | GPGKey) -> dict[str, Any]:
    return {"id": key.id, "key": key.key, "created_at": iso(key.created_at)}
