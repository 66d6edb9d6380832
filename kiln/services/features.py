"""Feature flags, as GitLab keeps them with Flipper: a flag is on for everyone (the boolean
gate), for named actors (`User:1`, `Project:2`, `Group:3`), for feature groups, or for a
percentage of time or of actors. A flag nobody has set is at its default (kiln's known flags
below; off for any other name). The gates are rows in the database, so a change holds on
every process and node at once.

Behaviour behind a flag asks `enabled(db, NAME, user=…, project=…, group=…)`."""

from __future__ import annotations

import json
import random
import re
import zlib
from collections.abc import Iterable
from typing import Any, Protocol

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln.db import transaction
from kiln.errors import BadRequest, ValidationFailed
from kiln.git.layout import repository_relpath
from kiln.models import FeatureGate
from kiln.models.namespaces import KIND_GROUP
from kiln.queries import features as finder
from kiln.queries.features import (
    ACTORS,
    BOOLEAN,
    GROUPS,
    PERCENTAGE_OF_ACTORS,
    PERCENTAGE_OF_TIME,
    Definition,
    Flag,
    GateRow,
)
from kiln.schemas.features import FeatureSet

# The order GitLab lists a flag's gates in.
GATE_ORDER = (BOOLEAN, ACTORS, PERCENTAGE_OF_ACTORS, PERCENTAGE_OF_TIME, GROUPS)
NAME_LIMIT = 255
# Flipper's percentage of actors: crc32(flag name + actor id) modulo 100 times this, below
# the percentage times this.
_SCALE = 1_000


# The flags behaviour in kiln is gated by, under GitLab's names.
VULNERABILITY_EXPORTS = "first_class_vulnerabilities"  # vulnerability exports API (alpha)
CONFIDENTIAL_EPICS = "confidential_epics"  # `confidential` on epics; ignored while off
# Epics at all: off, the epics endpoints answer 403 (the feature unavailable).
EPICS = "epics"

DEFINITIONS: dict[str, Definition] = {
    d.name: d
    for d in (
        Definition(
            VULNERABILITY_EXPORTS,
            type="development",
            group="group::threat insights",
            milestone="12.10",
            default_enabled=False,
        ),
        Definition(
            EPICS,
            type="ops",
            group="group::portfolio management",
            milestone="10.2",
            default_enabled=True,
        ),
        Definition(
            CONFIDENTIAL_EPICS,
            type="development",
            group="group::portfolio management",
            milestone="13.0",
            default_enabled=False,
        ),
    )
}


def _flag(name: str, gates: Iterable[GateRow]) -> Flag:
    ordered = sorted(gates, key=lambda g: (GATE_ORDER.index(g.key) if g.key in GATE_ORDER else 99, g.value))
    return Flag(name, ordered, DEFINITIONS.get(name))


# ----------------------------------------------------------------------------- deciding


class _Identified(Protocol):
    @property
    def id(self) -> int: ...


def actor_id(kind: str, thing: Any) -> str:
    """The Flipper id of a user, project or namespace (a user's namespace has its own kind)."""
    if kind == "namespace":
        ns_kind = getattr(thing, "kind", KIND_GROUP)
        return f"{'Group' if ns_kind == KIND_GROUP else 'Namespaces::UserNamespace'}:{thing.id}"
    return f"{kind.capitalize()}:{thing.id}"


def _open_for(flag: Flag, actors: list[str]) -> bool:
    if flag.boolean:
        return True
    if actors and set(actors) & set(flag.values(ACTORS)):
        return True
    share = flag.percentage(PERCENTAGE_OF_ACTORS)
    if share > 0 and any(
        zlib.crc32(f"{flag.name}{a}".encode()) % (100 * _SCALE) < share * _SCALE for a in actors
    ):
        return True
    share = flag.percentage(PERCENTAGE_OF_TIME)
    # Feature groups (GitLab's gitlab_team_members) hold no one in kiln.
    return share > 0 and random.random() * 100 < share


def enabled(
    db: Session,
    name: str,
    *,
    user: _Identified | None = None,
    project: _Identified | None = None,
    group: _Identified | None = None,
) -> bool:
    """Whether the flag is on for these actors (any of them): its gates once set, its default
    until then (off for a name kiln has no definition of)."""
    gates = finder.gates_of(db, name)
    if not gates:
        known = DEFINITIONS.get(name)
        return known is not None and known.default_enabled
    actors = [
        actor_id(kind, thing)
        for kind, thing in (("user", user), ("project", project), ("namespace", group))
        if thing is not None
    ]
    return _open_for(_flag(name, gates), actors)


# ----------------------------------------------------------------------------- reading


def list_flags(db: Session) -> list[Flag]:
    """Every flag that has been set (and not removed), by name."""
    by_name: dict[str, list[GateRow]] = {}
    for gate in finder.all_gates(db):
        by_name.setdefault(gate.feature_key, []).append(gate)
    return [_flag(name, gates) for name, gates in by_name.items()]


def definitions() -> list[Definition]:
    return sorted(DEFINITIONS.values(), key=lambda d: d.name)


def get_flag(db: Session, name: str) -> Flag:
    return _flag(name, finder.gates_of(db, name))


# ----------------------------------------------------------------------------- setting


# Values that turn a flag fully on or off, whatever `key` says (GitLab's SetFeatureFlagService).
ENABLE = frozenset({"true", "100", "100.0"})
DISABLE = frozenset({"false", "0", "0.0"})
_NUMBER = re.compile(r"\d+(\.\d+)?")


def _shown(value: str) -> str:
    """A value as GitLab's messages quote it."""
    return json.dumps(value)


def _percentage(value: str) -> float:
    if not _NUMBER.fullmatch(value):
        raise BadRequest("Not a percentage")
    number = float(value)
    if number > 100:
        shown = int(number) if number.is_integer() else number
        raise BadRequest(f"value must be a positive number less than or equal to 100, but was {shown}")
    return number


def _operation(p: FeatureSet, targets: list[tuple[str, str]]) -> bool | tuple[str, float]:
    """What the request asks: on (True) or off (False), for everyone or the named actors,
    or a gate and its percentage; the way GitLab reads `value` and `key`."""
    value, name = p.value, p.name
    if value in ENABLE:
        return True
    if value in DISABLE:
        return False
    if targets:
        raise BadRequest(f"Cannot set '{name}' to {_shown(value)} for {targets[0][1]}")
    if p.key == PERCENTAGE_OF_ACTORS:
        return (PERCENTAGE_OF_ACTORS, _percentage(value))
    if p.key == PERCENTAGE_OF_TIME or (p.key is None and _NUMBER.fullmatch(value)):
        return (PERCENTAGE_OF_TIME, _percentage(value))
    if p.key is not None:
        raise BadRequest(f"Cannot set '{name}' ({_shown(p.key)}) to {_shown(value)}")
    raise BadRequest(f"Cannot set '{name}' to {_shown(value)}")


def _percentage_text(number: float) -> str:
    return str(int(number)) if number.is_integer() else str(number)


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _not_found(name: str) -> BadRequest:
    return BadRequest(f"{name} is not found!")


def _targets(db: Session, p: FeatureSet) -> list[tuple[str, str]]:
    """The gates (key, value) the request names: feature groups and actors, each of which
    must exist."""
    out: list[tuple[str, str]] = [(GROUPS, name) for name in _split(p.feature_group)]
    names = _split(p.user)
    if names:
        found = finder.users_named(db, [n.lower() for n in names])
        for n in names:
            if n.lower() not in found:
                raise _not_found(n)
            out.append((ACTORS, f"User:{found[n.lower()]}"))
    for param, groups_only in (("group", True), ("namespace", False)):
        paths = _split(getattr(p, param))
        if not paths:
            continue
        spaces = finder.namespaces_at(db, [x.lower() for x in paths], groups_only=groups_only)
        for path in paths:
            ns = spaces.get(path.lower())
            if ns is None:
                raise _not_found(path)
            out.append((ACTORS, actor_id("namespace", ns)))
    paths = _split(p.project)
    if paths:
        projects = finder.projects_at(db, [x.lower() for x in paths])
        for path in paths:
            if path.lower() not in projects:
                raise _not_found(path)
            out.append((ACTORS, f"Project:{projects[path.lower()].id}"))
    repos = _split(p.repository)
    if repos:
        wanted = {r: r.removesuffix(".git") for r in repos}
        projects = finder.projects_at(db, [x.lower() for x in wanted.values() if not x.endswith(".wiki")])
        for repo in repos:
            found = projects.get(wanted[repo].lower())
            if found is None or not repo.endswith(".git"):
                raise _not_found(repo)
            out.append((ACTORS, f"Repository:{repository_relpath(found.id)}"))
    return out


def _ensure_persisted(db: Session, name: str) -> None:
    """A set flag always holds its boolean gate (off until turned on for everyone)."""
    exists = db.scalars(
        select(FeatureGate.id).where(FeatureGate.feature_key == name, FeatureGate.key == BOOLEAN)
    ).first()
    if exists is None:
        db.add(FeatureGate(feature_key=name, key=BOOLEAN, value="false"))


def _put(db: Session, name: str, key: str, value: str) -> None:
    """The one value of a single-valued gate (boolean, a percentage)."""
    db.execute(delete(FeatureGate).where(FeatureGate.feature_key == name, FeatureGate.key == key))
    db.add(FeatureGate(feature_key=name, key=key, value=value))


def _apply(db: Session, p: FeatureSet) -> None:
    name = p.name
    targets = _targets(db, p) if p.targeted() else []
    operation = _operation(p, targets)
    with transaction(db):
        if not targets and isinstance(operation, bool):
            # Flipper's boolean gate: on or off for everyone clears every other gate.
            db.execute(delete(FeatureGate).where(FeatureGate.feature_key == name))
            db.add(FeatureGate(feature_key=name, key=BOOLEAN, value="true" if operation else "false"))
        elif isinstance(operation, bool):
            _ensure_persisted(db, name)
            for key, gate_value in targets:
                db.execute(
                    delete(FeatureGate).where(
                        FeatureGate.feature_key == name,
                        FeatureGate.key == key,
                        FeatureGate.value == gate_value,
                    )
                )
                if operation:
                    db.add(FeatureGate(feature_key=name, key=key, value=gate_value))
        else:
            key, share = operation
            if get_flag(db, name).state == "on":
                what = "actors" if key == PERCENTAGE_OF_ACTORS else "time"
                raise BadRequest(f"Cannot enable percentage of {what} for a fully-enabled flag")
            _ensure_persisted(db, name)
            _put(db, name, key, _percentage_text(share))
        db.flush()


def set_flag(db: Session, p: FeatureSet) -> Flag:
    """Turn a flag on or off, for everyone or for the named actors, or set a percentage; any
    name is accepted, as GitLab accepts names it has no definition of."""
    if len(p.name) > NAME_LIMIT:
        raise ValidationFailed({"name": [f"is too long (maximum is {NAME_LIMIT} characters)"]})
    try:
        _apply(db, p)
    except IntegrityError:  # a twin request wrote the same gate first: once more, on its result
        _apply(db, p)
    return get_flag(db, p.name)


def remove_flag(db: Session, name: str) -> None:
    """Forget a flag: it is back at its default."""
    with transaction(db):
        db.execute(delete(FeatureGate).where(FeatureGate.feature_key == name))
