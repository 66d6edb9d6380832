"""Request contracts for feature flags (GitLab's lib/api/features.rb parameters)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, model_validator

from kiln.schemas._types import Flag, GrapeMessage, Params

# The parameters naming who a flag is set for; each exclusive with `key`.
TARGETS = ("feature_group", "user", "group", "namespace", "project", "repository")


def _value_text(value: Any) -> Any:
    # `true`, `false` or a number, from a query, a form or JSON alike.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


FlagValue = Annotated[str, BeforeValidator(_value_text)]


class FeatureSet(Params):
    name: str
    # true / false to turn the flag on or off, or a percentage (of time, or of actors).
    value: FlagValue
    key: str | None = None
    feature_group: str | None = None
    # Comma-separated usernames, group paths, namespace paths, project paths, repository paths.
    user: str | None = None
    group: str | None = None
    namespace: str | None = None
    project: str | None = None
    repository: str | None = None
    # Set a flag kiln has no definition of without a word (kiln accepts those anyway).
    force: Flag = False

    @model_validator(mode="after")
    def _exclusive(self) -> FeatureSet:
        if self.key is not None:
            for target in TARGETS:
                if getattr(self, target) is not None:
                    raise GrapeMessage(f"key, {target} are mutually exclusive")
        return self

    def targeted(self) -> bool:
        """Whether the flag is set for some actors rather than for everyone."""
        return any(getattr(self, target) is not None for target in TARGETS)


class FeatureName(Params):
    name: str
