"""Request contracts for the application settings (GitLab's lib/api/settings.rb parameters).

Every setting is optional on update, so the update contract is built from the settings'
kinds (services.instance_settings.kind_of): one field per setting and per deprecated name,
typed as Grape types it (a wrong type is "x is invalid", a value outside a fixed choice "x does
not have a valid value"). Ranges and rules between settings are the service's (GitLab's model
validations)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast

from pydantic import BeforeValidator, Field, create_model

from kiln.schemas._types import CommaList, Flag, Int, OptionalInt, Params, _numeric, _string_list

# What a setting holds: "bool", "int", "int?" (an integer or null; an empty string is null),
# "float", "str", "list" (strings; a comma-separated string too), "ints" (integers, the same),
# "hash", "vis" (a visibility name, or its level number), "vis_list" (visibilities), or a
# tuple of the values it may take.
Kind = str | tuple[Any, ...]

VISIBILITY_BY_LEVEL = {0: "private", 10: "internal", 20: "public"}
VISIBILITIES = ("private", "internal", "public")


def _level_name(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return VISIBILITY_BY_LEVEL.get(value, value) if isinstance(value, int) else value


def _level_names(value: Any) -> Any:
    value = _string_list(value)
    return [_level_name(v) for v in value] if isinstance(value, list) else value


_TYPES: dict[str, Any] = {
    "bool": Flag,
    "int": Int,
    "int?": OptionalInt,
    "float": Annotated[float, Field(allow_inf_nan=False)],
    "str": str,
    "list": CommaList,
    "ints": Annotated[list[Int], BeforeValidator(_string_list)],
    "hash": dict[str, Any],
    "vis": Annotated[Literal["private", "internal", "public"], BeforeValidator(_level_name)],
    "vis_list": Annotated[list[str], BeforeValidator(_level_names)],
}


def field_type(kind: Kind) -> Any:
    if isinstance(kind, tuple):
        return Annotated[Literal[kind], BeforeValidator(_numeric)]  # type: ignore[valid-type]
    return _TYPES[kind]


def settings_update(kinds: Mapping[str, Kind]) -> type[Params]:
    """The PUT /application/settings contract for these settings (names and kinds)."""
    fields: dict[str, Any] = {name: (field_type(kind) | None, None) for name, kind in kinds.items()}
    model = create_model("ApplicationSettingsUpdate", __base__=Params, **fields)
    return cast("type[Params]", model)
