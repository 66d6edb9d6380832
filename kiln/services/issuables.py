"""What issues and epics (and merge requests to come) check alike: a title that is there and
fits, and a description that fits (GitLab's Issuable validations), before anything is written."""

from __future__ import annotations

from kiln.errors import ValidationFailed

TITLE_LIMIT = 255
DESCRIPTION_LIMIT = 1_048_576


def validate_text(title: str | None, description: str | None, *, creating: bool) -> None:
    """400 {"message": {"title": [...], "description": [...]}} for a blank or long title (given,
    or needed on creation) and a long description."""
    errors: dict[str, list[str]] = {}
    if title is not None or creating:
        if not (title or "").strip():
            errors["title"] = ["can't be blank"]
        elif len(title or "") > TITLE_LIMIT:
            errors["title"] = [f"is too long (maximum is {TITLE_LIMIT} characters)"]
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        errors["description"] = [f"is too long (maximum is {DESCRIPTION_LIMIT} characters)"]
    if errors:
        raise ValidationFailed(errors)
