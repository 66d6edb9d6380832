"""The plan limits view (GitLab's Entities::PlanLimit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def plan_limits(limits: Mapping[str, Any]) -> dict[str, Any]:
    return dict(limits)
