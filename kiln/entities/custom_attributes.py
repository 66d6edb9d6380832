"""The view of one custom attribute, as GitLab's Entities::CustomAttribute."""

from __future__ import annotations


def custom_attribute(key: str, value: str) -> dict[str, str]:
    return {"key": key, "value": value}
