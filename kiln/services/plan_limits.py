"""Plan limits (GitLab's plan_limits): what each plan allows, read and changed by
administrators. The one plan is `default`; its row holds what was changed, over these
defaults, and each change is noted in its `limits_history`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import ValidationFailed
from kiln.models import PlanLimits
from kiln.policy import Action
from kiln.schemas._types import Params

GIB = 1024**3
MIB = 1024**2
DEFAULTS: dict[str, int] = {
    "ci_instance_level_variables": 25,
    "ci_pipeline_size": 0,
    "ci_active_jobs": 0,
    "ci_project_subscriptions": 2,
    "ci_pipeline_schedules": 10,
    "ci_needs_size_limit": 50,
    "ci_registered_group_runners": 1000,
    "ci_registered_project_runners": 1000,
    "conan_max_file_size": 3 * GIB,
    "dotenv_size": 5120,
    "dotenv_variables": 20,
    "enforcement_limit": 0,
    "generic_packages_max_file_size": 5 * GIB,
    "helm_max_file_size": 5 * MIB,
    "maven_max_file_size": 3 * GIB,
    "notification_limit": 0,
    "npm_max_file_size": 500 * MIB,
    "nuget_max_file_size": 500 * MIB,
    "pipeline_hierarchy_size": 1000,
    "pypi_max_file_size": 3 * GIB,
    "storage_size_limit": 0,
    "terraform_module_max_file_size": GIB,
    "web_hook_calls": 0,
}
NAMES = tuple(DEFAULTS)
HISTORY = "limits_history"


def _row(db: Session, plan_name: str, *, lock: bool = False) -> PlanLimits | None:
    stmt = select(PlanLimits).where(PlanLimits.plan_name == plan_name)
    return db.scalars(stmt.with_for_update() if lock else stmt).first()


def _view(stored: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **DEFAULTS,
        **{k: v for k, v in stored.items() if k in DEFAULTS},
        HISTORY: stored.get(HISTORY, {}),
    }


def read(db: Session, actor: Actor, plan_name: str) -> dict[str, Any]:
    policy.require(actor, Action.ADMIN_SETTINGS)
    found = db.scalars(select(PlanLimits.values).where(PlanLimits.plan_name == plan_name)).first()
    return _view(found or {})


def change(db: Session, actor: Actor, p: Params) -> dict[str, Any]:
    """Set the limits given; a negative one is refused and nothing is changed."""
    policy.require(actor, Action.ADMIN_SETTINGS)
    plan_name: str = getattr(p, "plan_name")  # noqa: B009 - the update contract is built per limit
    changes = {
        name: getattr(p, name) for name in p.given() if name in DEFAULTS and getattr(p, name) is not None
    }
    errors = {name: ["must be greater than or equal to 0"] for name, value in changes.items() if value < 0}
    if errors:
        raise ValidationFailed(errors)
    try:
        return _store(db, actor, plan_name, changes)
    except IntegrityError:  # a twin request made the plan's row first
        return _store(db, actor, plan_name, changes)


def _store(db: Session, actor: Actor, plan_name: str, changes: Mapping[str, int]) -> dict[str, Any]:
    with transaction(db):
        row = _row(db, plan_name, lock=True)
        if row is None:
            row = PlanLimits(plan_name=plan_name, values={})
            db.add(row)
        values = dict(row.values)
        history = {name: list(entries) for name, entries in values.get(HISTORY, {}).items()}
        now = int(time.time())
        for name, value in changes.items():
            if values.get(name, DEFAULTS[name]) != value:
                entry = {
                    "user_id": actor.user.id,
                    "username": actor.user.username,
                    "timestamp": now,
                    "value": value,
                }
                history.setdefault(name, []).append(entry)
            values[name] = value
        values[HISTORY] = history
        row.values = values
        db.flush()
        return _view(values)
