"""Request contracts for custom attributes of users, groups and projects (admin only)."""

from __future__ import annotations

from kiln.schemas._types import Params


class CustomAttributeSet(Params):
    value: str
