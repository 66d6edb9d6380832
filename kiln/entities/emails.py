"""The further e-mail address view (GitLab's Email entity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso

if TYPE_CHECKING:
    from kiln.models import Email
    from kiln.queries.emails import EmailRow


def email(row: EmailRow | Email) -> dict[str, Any]:
    return {"id": row.id, "email": row.email, "confirmed_at": iso(row.confirmed_at)}
