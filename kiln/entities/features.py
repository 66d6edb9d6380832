"""Feature flag views (GitLab's Feature, FeatureGate and Feature::Definition entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kiln.queries.features import Definition, Flag

# Gates holding one value; the others hold a set of them.
_SINGLE = {"boolean", "percentage_of_actors", "percentage_of_time"}


def _number(text: str) -> int | float:
    number = float(text)
    return int(number) if number.is_integer() else number


def _gate_value(key: str, values: list[str]) -> Any:
    if key == "boolean":
        return values[0] == "true"
    if key in _SINGLE:
        return _number(values[0])
    return sorted(values)


def definition(d: Definition) -> dict[str, Any]:
    return {
        "name": d.name,
        "introduced_by_url": d.introduced_by_url,
        "rollout_issue_url": d.rollout_issue_url,
        "milestone": d.milestone,
        "log_state_changes": d.log_state_changes,
        "type": d.type,
        "group": d.group,
        "default_enabled": d.default_enabled,
    }


def feature(flag: Flag) -> dict[str, Any]:
    """A flag with the gates that hold something (a zero percentage or an empty set shows
    nothing; the boolean gate always shows)."""
    grouped: dict[str, list[str]] = {}
    for gate in flag.gates:
        grouped.setdefault(gate.key, []).append(gate.value)
    gates = []
    for key, values in grouped.items():
        value = _gate_value(key, values)
        if key != "boolean" and value in (0, []):
            continue
        gates.append({"key": key, "value": value})
    known = flag.definition
    return {
        "name": flag.name,
        "state": flag.state,
        "gates": gates,
        "definition": definition(known) if known is not None else None,
    }
