"""CI/CD variables at three levels: the instance's (administrators), a group's (its Owners)
and a project's (its Maintainers), each value kept sealed under the server key
(kiln.auth.sealing), never as written.

A group or project variable belongs to an environment scope (`*`: every environment); one key
may have one variable per scope, and a read, change or removal of a key held in several scopes
names the scope with `filter[environment_scope]` (a group's change without one takes its
oldest, as GitLab takes one). A hidden variable (`masked_and_hidden` on creation) is masked,
and its value is never shown again.

What a job is given (the runner protocol builds a job's payload with it, pipelines evaluate
`rules:` with it):

    for_pipeline(db, settings, *, project_id, namespace_ids, protected_ref, environment)

returns the instance's variables, then those of the project's groups from the root group down
(`namespace_ids`, in that order), then the project's own, as the runner's variables
`{"key", "value", "public": False, "file", "masked", "raw"}` with their values unsealed.
Protected variables are given only to a protected ref (`protected_ref`). A group or project
variable is given when its scope matches `environment` (`*` matches every environment, a `*`
inside a scope any run of characters: `review/*`), and with no environment only `*`-scoped
ones are. A later level's variable replaces an earlier one of the same key, as does, within a
level, a variable of a more specific scope (`*`, then wildcard scopes, then the environment's
own name). Each key is given once, where its winning variable stands."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import events, policy
from kiln.auth.actor import Actor
from kiln.auth.sealing import seal, unseal
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Conflict, NotFound, ValidationFailed
from kiln.models import GroupVariable, InstanceVariable, ProjectVariable
from kiln.models.ci import FILE
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import ci_variables as finder
from kiln.queries.ci_variables import Level, VariableRow
from kiln.schemas.ci_variables import (
    InstanceVariableCreate,
    InstanceVariableUpdate,
    VariableCreate,
    VariableFilter,
    VariableUpdate,
)
from kiln.services import subjects

KEY_LIMIT = 255
VALUE_LIMIT = 10_000
DESCRIPTION_LIMIT = 255
SCOPE_LIMIT = 255
WILDCARD = "*"

KEY_FORMAT = re.compile(r"[a-zA-Z0-9_]+")
KEY_MESSAGE = "can contain only letters, digits and '_'."
SCOPE_FORMAT = re.compile(r"[a-zA-Z0-9_/${}. \-*]+")
SCOPE_MESSAGE = "can contain only letters, digits, '-', '_', '/', '$', '{', '}', '.', '*' and spaces"
# A masked value: one line of at least 8 characters of the Base64 alphabet (RFC 4648, both
# forms) and `@`, `:`, `.`, `~`, so that no variable reference is expanded into it; a raw one
# (never expanded) may hold any characters but whitespace.
MASKABLE = re.compile(r"[a-zA-Z0-9_+=/@:.~-]{8,}")
MASKABLE_RAW = re.compile(r"\S{8,}")
HIDDEN_MASKED = "Updating masked attribute is not allowed on updates for hidden variables."
MULTIPLE = "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'"

_MODELS: dict[Level, type[InstanceVariable | GroupVariable | ProjectVariable]] = {
    "instance": InstanceVariable,
    "groups": GroupVariable,
    "projects": ProjectVariable,
}
# The name GitLab's 404 gives a missing variable at each level.
_MISSING: dict[Level, str] = {
    "instance": "InstanceVariable",
    "groups": "GroupVariable",
    "projects": "Variable",
}
_EVENT_LEVEL: dict[Level, str] = {"instance": "instance", "groups": "group", "projects": "project"}


@dataclass(slots=True, frozen=True)
class Owner:
    """Whose variables a route reads or changes: a project's, a group's or the instance's
    (`id` None)."""

    level: Level
    id: int | None


@dataclass(slots=True)
class Shown:
    """A variable with its value unsealed (None when hidden)."""

    row: VariableRow
    value: str | None


@dataclass(slots=True)
class Variables:
    page: PageResult  # items: Shown


# ----------------------------------------------------------------------------- owners


def _owner(
    db: Session, actor: Actor | None, level: Level, ident: str | None, *, write: bool = False
) -> Owner:
    """The owner, once the actor may manage its variables: a hidden project or group is 404,
    a visible one 403 below its Maintainers (project) or Owners (group); the instance's are
    the administrators' alone."""
    action = Action.ADMIN_CI_VARIABLES
    if level == "projects":
        assert ident is not None
        return Owner(level, subjects.project(db, actor, ident, action, rows=not write).project.id)
    if level == "groups":
        assert ident is not None
        return Owner(level, subjects.group(db, actor, ident, action, rows=not write).group.id)
    policy.require(actor, action)
    return Owner(level, None)


def _scoped(level: Level) -> bool:
    return level != "instance"


# ----------------------------------------------------------------------------- values


def _shown(settings: Settings, row: VariableRow) -> Shown:
    return Shown(row, None if row.hidden else unseal(settings, row.value))


def _find(db: Session, owner: Owner, key: str, scope: str | None, *, oldest: bool = False) -> VariableRow:
    """The owner's variable `key` (in `scope` when given): 404 when there is none, 409 when
    the key is held in several scopes and none was named (`oldest`: take the oldest then)."""
    rows = finder.by_key(db, owner.level, owner.id, key, scope if _scoped(owner.level) else None)
    if not rows:
        raise NotFound(_MISSING[owner.level])
    if len(rows) > 1 and not oldest:
        raise Conflict(MULTIPLE)
    return rows[0]


def _filter_scope(f: VariableFilter | None) -> str | None:
    """The scope `filter[environment_scope]` names; an empty one names none, as GitLab's
    finder ignores it."""
    return (f.environment_scope or None) if f is not None else None


# ----------------------------------------------------------------------------- validation


def _too_long(limit: int) -> str:
    return f"is too long (maximum is {limit} characters)"


def value_error(value: str, *, masked: bool, raw: bool) -> str | None:
    """Why `value` cannot be kept as given (None: it can): GitLab's length limit, and what a
    masked value must be for the runner to find it in a job's log."""
    if len(value) > VALUE_LIMIT:
        return f"The value of the provided variable exceeds the {VALUE_LIMIT} character limit"
    if masked and not (MASKABLE_RAW if raw else MASKABLE).fullmatch(value):
        return "is invalid"
    return None


def _errors(
    level: Level,
    *,
    key: str | None,
    value: str,
    masked: bool,
    raw: bool,
    scope: str | None,
    description: str | None,
) -> dict[str, list[str]]:
    """Every problem with a variable as it would be kept, by field (GitLab's validations);
    `key` None: not being set."""
    errors: dict[str, list[str]] = {}
    if key is not None:
        if not key:
            errors["key"] = ["can't be blank", KEY_MESSAGE]
        elif len(key) > KEY_LIMIT:
            errors["key"] = [_too_long(KEY_LIMIT)]
        elif not KEY_FORMAT.fullmatch(key):
            errors["key"] = [KEY_MESSAGE]
    if (problem := value_error(value, masked=masked, raw=raw)) is not None:
        errors["value"] = [problem]
    if _scoped(level) and scope is not None:
        if not scope:
            errors["environment_scope"] = ["can't be blank"]
        elif len(scope) > SCOPE_LIMIT:
            errors["environment_scope"] = [_too_long(SCOPE_LIMIT)]
        elif not SCOPE_FORMAT.fullmatch(scope):
            errors["environment_scope"] = [SCOPE_MESSAGE]
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        errors["description"] = [_too_long(DESCRIPTION_LIMIT)]
    return errors


def _taken(key: str) -> dict[str, list[str]]:
    return {"key": [f"({key}) has already been taken"]}


def _check_free(db: Session, owner: Owner, key: str, scope: str, errors: dict[str, list[str]]) -> None:
    """Adds GitLab's uniqueness error when the owner already has `key` in `scope`."""
    if finder.by_key(db, owner.level, owner.id, key, scope if _scoped(owner.level) else None):
        errors.update(_taken(key))


# ----------------------------------------------------------------------------- events


def _record(db: Session, actor: Actor, owner: Owner, action: str, row: VariableRow) -> None:
    data: dict[str, Any] = {"level": _EVENT_LEVEL[owner.level], "key": row.key}
    if _scoped(owner.level):
        data["environment_scope"] = row.environment_scope
    if owner.level == "groups":
        data["group_id"] = owner.id
    events.record(
        db,
        action,
        project_id=owner.id if owner.level == "projects" else None,
        actor=actor,
        target_type="CiVariable",
        target_id=row.id,
        data=data,
    )


def _row_of(model: InstanceVariable | GroupVariable | ProjectVariable, owner: Owner) -> VariableRow:
    return VariableRow(
        id=model.id,
        key=model.key,
        value=model.value,
        variable_type=model.variable_type,
        protected=model.protected,
        masked=model.masked,
        hidden=model.hidden,
        raw=model.raw,
        description=model.description,
        environment_scope=getattr(model, "environment_scope", WILDCARD),
        owner_id=owner.id,
    )


def _owner_column(owner: Owner) -> dict[str, int]:
    if owner.level == "projects":
        assert owner.id is not None
        return {"project_id": owner.id}
    if owner.level == "groups":
        assert owner.id is not None
        return {"namespace_id": owner.id}
    return {}


# ----------------------------------------------------------------------------- reading


def list_variables(
    db: Session, actor: Actor, level: Level, ident: str | None, page: Page, settings: Settings
) -> Variables:
    """A page of the owner's variables, oldest first."""
    owner = _owner(db, actor, level, ident)
    result = finder.page_of(db, level, owner.id, page)
    result.items = [_shown(settings, row) for row in result.items]
    return Variables(result)


def get_variable(
    db: Session,
    actor: Actor,
    level: Level,
    ident: str | None,
    key: str,
    scope: VariableFilter | None,
    settings: Settings,
) -> Shown:
    """One variable by key; `scope`: the request's `filter` (project and group)."""
    owner = _owner(db, actor, level, ident)
    return _shown(settings, _find(db, owner, key, _filter_scope(scope)))


# ----------------------------------------------------------------------------- changing


def create_variable(
    db: Session,
    actor: Actor,
    level: Level,
    p: VariableCreate | InstanceVariableCreate,
    settings: Settings,
) -> Shown:
    owner = _owner(db, actor, level, getattr(p, "id", None), write=True)
    key = p.key.strip()
    hidden = bool(getattr(p, "masked_and_hidden", None)) and _scoped(level)
    masked = hidden or bool(p.masked)
    raw = bool(p.raw)
    given_scope = getattr(p, "environment_scope", None)
    scope = given_scope if _scoped(level) and given_scope is not None else WILDCARD
    errors = _errors(
        level, key=key, value=p.value, masked=masked, raw=raw, scope=given_scope, description=p.description
    )
    with transaction(db):
        if "key" not in errors:
            _check_free(db, owner, key, scope, errors)
        if errors:
            raise ValidationFailed(errors)
        fields: dict[str, Any] = {
            "key": key,
            "value": seal(settings, p.value),
            "variable_type": p.variable_type or "env_var",
            "protected": bool(p.protected),
            "masked": masked,
            "hidden": hidden,
            "raw": raw,
            "description": p.description,
            **_owner_column(owner),
        }
        if _scoped(level):
            fields["environment_scope"] = scope
        model = _MODELS[level](**fields)
        try:
            with db.begin_nested():
                db.add(model)
                db.flush()
        except IntegrityError:
            # Another request took the key and scope first.
            raise ValidationFailed(_taken(key)) from None
        row = _row_of(model, owner)
        _record(db, actor, owner, "created", row)
    return Shown(row, None if hidden else p.value)


def update_variable(
    db: Session,
    actor: Actor,
    level: Level,
    p: VariableUpdate | InstanceVariableUpdate,
    settings: Settings,
) -> Shown:
    """Change what was given of a variable (never its key); a group's change names no scope
    may take its oldest variable of the key, as GitLab's does."""
    owner = _owner(db, actor, level, getattr(p, "id", None), write=True)
    given = p.given()
    scope_filter = _filter_scope(getattr(p, "filter", None))
    with transaction(db):
        found = _find(
            db, owner, p.key, scope_filter, oldest=level == "groups" and getattr(p, "filter", None) is None
        )
        model = db.get(_MODELS[level], found.id)
        if model is None:
            raise NotFound(_MISSING[level])
        value = p.value if p.value is not None else unseal(settings, model.value)
        masked = p.masked if p.masked is not None else model.masked
        raw = p.raw if p.raw is not None else model.raw
        new_scope = getattr(p, "environment_scope", None)
        description = p.description if "description" in given else model.description
        errors = _errors(
            level,
            key=None,
            value=value,
            masked=masked,
            raw=raw,
            scope=new_scope,
            description=description,
        )
        if model.hidden and masked != model.masked:
            errors["base"] = [HIDDEN_MASKED]
        if _scoped(level) and new_scope and new_scope != found.environment_scope:
            _check_free(db, owner, model.key, new_scope, errors)
        if errors:
            raise ValidationFailed(errors)
        if p.value is not None:
            model.value = seal(settings, p.value)
        if p.variable_type is not None:
            model.variable_type = p.variable_type
        if p.protected is not None:
            model.protected = p.protected
        model.masked = masked
        model.raw = raw
        model.description = description
        if _scoped(level) and new_scope is not None:
            model.environment_scope = new_scope  # type: ignore[union-attr]
        try:
            with db.begin_nested():
                db.flush()
        except IntegrityError:
            raise ValidationFailed(_taken(model.key)) from None
        row = _row_of(model, owner)
        _record(db, actor, owner, "updated", row)
    return Shown(row, None if row.hidden else value)


def delete_variable(
    db: Session, actor: Actor, level: Level, ident: str | None, key: str, scope: VariableFilter | None
) -> None:
    owner = _owner(db, actor, level, ident, write=True)
    with transaction(db):
        found = _find(db, owner, key, _filter_scope(scope))
        model = _MODELS[level]
        db.execute(delete(model).where(model.id == found.id))
        _record(db, actor, owner, "destroyed", found)


# ----------------------------------------------------------------------------- pipelines


@lru_cache(maxsize=1024)
def _scope_pattern(scope: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in scope.split(WILDCARD)), re.DOTALL)


def scope_matches(scope: str, environment: str | None) -> bool:
    """Whether a variable of environment scope `scope` is given to a job deploying to
    `environment` (None: to none), GitLab's rules."""
    if scope == WILDCARD:
        return True
    if environment is None:
        return False
    if WILDCARD not in scope:
        return scope == environment
    return _scope_pattern(scope).fullmatch(environment) is not None


def _specificity(scope: str, environment: str | None) -> int:
    """Which of a level's matching variables of one key wins: the environment's own name over
    a wildcard scope over `*`."""
    if scope == WILDCARD:
        return 0
    return 2 if scope == environment else 1


def _runner_variable(settings: Settings, row: VariableRow) -> dict[str, Any]:
    return {
        "key": row.key,
        "value": unseal(settings, row.value),
        "public": False,
        "file": row.variable_type == FILE,
        "masked": bool(row.masked),
        "raw": bool(row.raw),
    }


def for_pipeline(
    db: Session,
    settings: Settings,
    *,
    project_id: int,
    namespace_ids: list[int],
    protected_ref: bool,
    environment: str | None,
) -> list[dict[str, Any]]:
    """The variables a job of the project is given (see the module's docstring); three
    statements at most, however many variables and groups."""
    instance, groups, project = finder.for_pipeline(
        db,
        project_id=project_id,
        namespace_ids=namespace_ids,
        protected_ref=protected_ref,
        any_scope=environment is not None,
    )
    depth = {ns: i for i, ns in enumerate(namespace_ids)}

    def scoped(rows: Iterable[VariableRow], *order: Any) -> list[VariableRow]:
        kept = [r for r in rows if scope_matches(r.environment_scope, environment)]
        return sorted(
            kept, key=lambda r: (*(f(r) for f in order), _specificity(r.environment_scope, environment), r.id)
        )

    ordered: Sequence[VariableRow] = [
        *instance,
        *scoped(groups, lambda r: depth.get(r.owner_id, 0)),
        *scoped(project),
    ]
    given: dict[str, VariableRow] = {}
    for row in ordered:
        given.pop(row.key, None)
        given[row.key] = row
    return [_runner_variable(settings, row) for row in given.values()]
