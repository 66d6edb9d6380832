"""Instance settings changed at run time (GitLab's application settings).

One row holds what administrators changed; everything else is the default below. Readers
call `current` once per request and pass the result down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.db import transaction
from kiln.models import ApplicationSetting

DEFAULTS: dict[str, Any] = {
    # Largest upload (project and group attachments), in MB.
    "max_attachment_size": 100,
    # Days a deleted project or group waits before it is removed; 0 removes at once.
    "deletion_adjourned_period": 0,
    "default_project_visibility": "private",
    "default_group_visibility": "private",
    # 0 none, 1 partial, 2 full: applies to new projects' default branch.
    "default_branch_protection": 2,
    # Who may create projects in groups: 0 no one, 1 maintainers, 2 developers + maintainers.
    "default_project_creation": 2,
    "default_projects_limit": 100000,
    "restricted_visibility_levels": [],
    "default_branch_name": "main",
}


class InstanceSettings(Mapping[str, Any]):
    """Read-only view: defaults overlaid with what was stored."""

    def __init__(self, stored: Mapping[str, Any]) -> None:
        self._values = {**DEFAULTS, **stored}

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def current(db: Session) -> InstanceSettings:
    row = db.scalars(select(ApplicationSetting).order_by(ApplicationSetting.id).limit(1)).first()
    return InstanceSettings(row.values if row is not None else {})


def update(db: Session, changes: Mapping[str, Any]) -> InstanceSettings:
    unknown = set(changes) - set(DEFAULTS)
    if unknown:
        raise KeyError(f"unknown settings: {', '.join(sorted(unknown))}")
    with transaction(db):
        row = db.scalars(
            select(ApplicationSetting).order_by(ApplicationSetting.id).limit(1).with_for_update()
        ).first()
        if row is None:
            row = ApplicationSetting(values={})
            db.add(row)
        row.values = {**row.values, **changes}
        db.flush()
        return InstanceSettings(row.values)
