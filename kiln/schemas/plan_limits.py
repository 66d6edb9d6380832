"""Request contracts for plan limits (GitLab's lib/api/admin/plan_limits.rb parameters)."""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import create_model

from kiln.schemas._types import Int, Params

# Plans an instance has: the one plan of GitLab's Community Edition.
PlanName = Literal["default"]


class PlanLimitsGet(Params):
    plan_name: PlanName = "default"


def plan_limits_update(names: tuple[str, ...]) -> type[Params]:
    """The plan (required), then any of these limits, an integer each."""
    fields: dict[str, Any] = dict.fromkeys(names, (Int | None, None))
    model = create_model("PlanLimitsUpdate", __base__=Params, plan_name=(PlanName, ...), **fields)
    return cast("type[Params]", model)
