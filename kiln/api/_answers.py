"""Answers kept for the next identical request.

A route may keep its answer to a GET when the answer is made of nothing but rows of the
database, git state the route can check again cheaply, and the caller's credentials. The same
request (method, path, query, every credential header, the same settings) is then answered
with the same bytes while all of these hold:

- nothing was written to the database anywhere since the answer was made (kiln.changes: the
  stamp taken before the request read anything is still the stamp);
- the route's own check still passes (the files API: its ref still names the same commit);
- the caller's credential needs no look yet (its use is due to be recorded, it expires), and
  the day is the same (memberships expire by date).

It is the same answer the route would give again, so nothing a client sees changes, and a
revoked token, a removed member or a moved branch is honoured on the next request on every
node exactly as without it."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kiln import changes
from kiln.api import _deps  # credentials_of's headers (a cycle: _deps reports here)
from kiln.auth.actor import Actor
from kiln.kept import Kept

KEEPING = "kiln_keeping"
# A kept answer's bytes: files and small views; larger ones are made each time.
_ANSWERS_LIMIT = 2048
_ANSWERS_BYTES = 32 << 20
# Requests seen once (by key): an answer is kept the second time it is made, so a request
# made once (a crawler, a script reading each file once) costs no copy of its answer.
_SEEN_LIMIT = 8192
# Paths longer than this are never kept (what is kept is bounded by count, so by size too).
_PATH_LIMIT = 2048


@dataclass(slots=True)
class Keeping:
    """What a GET learns as it runs, in its scope under KEEPING: whether its answer may be
    kept (the route says so) and what it was made from."""

    # The stamp before the request read anything (taken as its caller is authenticated), and
    # the next change of date then (what it read was read for that day).
    stamp: Hashable | None = None
    started: bool = False
    midnight: float = 0.0
    # Set by the route: the check its answer needs besides the stamp; None: not kept.
    still: Callable[[], bool] | None = None
    actor: Actor | None = None
    signed_in: bool = False
    route: str | None = None
    start: dict[str, Any] | None = None
    body: list[bytes] = field(default_factory=list)


@dataclass(slots=True, frozen=True)
class Answer:
    stamp: Hashable
    settings: object
    until: float
    still: Callable[[], bool]
    actor: Actor | None
    route: str | None
    start: dict[str, Any]
    body: bytes


_answers: Kept[Answer] = Kept(_ANSWERS_LIMIT, _ANSWERS_BYTES)
# The paths with an answer kept (any query, any caller): every other request looks no further.
_paths: dict[bytes, int] = {}
_seen: dict[Hashable, None] = {}


def may_keep(scope: dict[str, Any]) -> Keeping | None:
    """A GET's record, in its scope: the route may keep its answer."""
    if scope["method"] != "GET":
        return None
    keeping = Keeping()
    scope[KEEPING] = keeping
    return keeping


def kept(scope: dict[str, Any], settings: object, clock: changes.Clock | None) -> Answer | None:
    """The answer kept for this very request, if there is one and it still holds."""
    if clock is None or _path_of(scope) not in _paths:
        return None
    found = _answers.get(key_of(scope))
    if found is None or found.settings is not settings or time.time() >= found.until:
        return None
    if clock.stamp() != found.stamp:
        return None
    try:
        if not found.still():
            return None
    except Exception:
        return None
    return found


def key_of(scope: dict[str, Any]) -> Hashable:
    """The request as an answer depends on it: its path, and a digest of its query and every
    credential header (a kept answer holds no secret: a token may be in the query)."""
    path = _path_of(scope)
    digest = hashlib.sha256(scope.get("query_string", b""))
    credentials = _deps.CREDENTIAL_HEADERS
    for name, value in scope.get("headers", ()):
        if name in credentials:
            digest.update(b"\0")
            digest.update(name)
            digest.update(b"\0")
            digest.update(value)
    return (path, digest.digest())


def _path_of(scope: dict[str, Any]) -> bytes:
    """The raw path without its query (some servers leave the query on it)."""
    raw = scope.get("raw_path")
    if not raw:
        return scope["path"].encode("utf-8", "surrogateescape")  # type: ignore[no-any-return]
    return raw.split(b"?", 1)[0] if b"?" in raw else raw  # type: ignore[no-any-return]


def starting(scope: dict[str, Any], clock: changes.Clock | None) -> None:
    """Before the request reads anything (its caller's credentials): the stamp its answer is
    made under."""
    keeping = scope.get(KEEPING)
    if keeping is not None and not keeping.started:
        keeping.started = True
        keeping.stamp = None if clock is None else clock.stamp()
        keeping.midnight = _next_midnight()


def signed_in(scope: dict[str, Any], actor: Actor | None) -> None:
    """Who the request's credentials named (None: anonymous)."""
    keeping = scope.get(KEEPING)
    if keeping is not None:
        keeping.actor = actor
        keeping.signed_in = True


def keep(scope: dict[str, Any], still: Callable[[], bool]) -> None:
    """Called by a route whose answer may be kept: `still()` tells whether what it read
    besides the database (git) is unchanged."""
    keeping = scope.get(KEEPING)
    if keeping is not None and keeping.stamp is not None:
        keeping.still = still
        keeping.route = scope.get("path_template")


def seen(keeping: Keeping, message: dict[str, Any]) -> None:
    """A message of the answer, held while the answer may still be kept."""
    if keeping.still is None:
        return
    if message["type"] == "http.response.start":
        if message["status"] != 200:
            keeping.still = None
            return
        keeping.start = message
    elif message["type"] == "http.response.body":
        keeping.body.append(message.get("body", b""))


def end(scope: dict[str, Any], keeping: Keeping, settings: object, clock: changes.Clock | None) -> None:
    """Keep the answer if the route asked, it was whole, nothing was written meanwhile, and
    the same request was made before."""
    if keeping.still is None or keeping.start is None or not keeping.signed_in or clock is None:
        return
    until = _credential_until(keeping.actor)
    if until is None or clock.stamp() != keeping.stamp:
        return
    key = key_of(scope)
    if len(key[0]) > _PATH_LIMIT:  # type: ignore[index]
        return
    if key not in _seen:
        if len(_seen) >= _SEEN_LIMIT:
            _seen.clear()
        _seen[key] = None
        return
    body = b"".join(keeping.body)
    answer = Answer(
        stamp=keeping.stamp,
        settings=settings,
        until=min(until, keeping.midnight),
        still=keeping.still,
        actor=keeping.actor,
        route=keeping.route,
        start=keeping.start,
        body=body,
    )
    _answers.put(key, answer, len(body) + 512)
    if len(_paths) >= _ANSWERS_LIMIT * 4:
        _paths.clear()
    _paths[key[0]] = 1


def forget() -> None:
    _answers.clear()
    _paths.clear()
    _seen.clear()


def _credential_until(actor: Actor | None) -> float | None:
    """Until when the caller's credential needs no look; None: look every time."""
    if actor is None:
        return float("inf")
    return None if actor.good_until is None else actor.good_until.timestamp()


def _next_midnight() -> float:
    """The next change of date, UTC or local (dates are compared in both)."""
    now = time.time()
    utc = datetime.fromtimestamp(now, UTC)
    local = datetime.fromtimestamp(now).astimezone()
    ends = [
        datetime.combine(day.date() + timedelta(days=1), datetime.min.time(), day.tzinfo).timestamp()
        for day in (utc, local)
    ]
    return min(ends)
