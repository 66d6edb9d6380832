"""CI/CD variable views (GitLab's Ci::Variable entity): a project's or group's with its
environment scope and whether it is hidden (a hidden one's value shows as null); the
instance's without either, as GitLab shows them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.ci_variables import VariableRow


def variable(row: VariableRow, value: str | None, *, scoped: bool = True) -> dict[str, Any]:
    """A variable with its value unsealed (None: hidden); `scoped` off for the instance's."""
    view: dict[str, Any] = {"variable_type": row.variable_type, "key": row.key, "value": value}
    if scoped:
        view["hidden"] = bool(row.hidden)
    view.update(protected=bool(row.protected), masked=bool(row.masked), raw=bool(row.raw))
    if scoped:
        view["environment_scope"] = row.environment_scope
    view["description"] = row.description
    return view
