"""A plain ASGI wrapper around the Litestar app, for what must happen before routing:

- route on the raw path, so `%2F` inside a segment stays one parameter
  (`/projects/group%2Fproject`); every other escape is decoded;
- route a project's uploads at their project-relative URL, whose project path has slashes;
- answer HEAD on every GET route (headers of the GET, no body);
- refuse oversized bodies (Content-Length up front, chunked bodies as they stream) and
  non-UTF-8 paths before any work;
- admit at most as many requests to the database as its pool can serve at once (Admission):
  the rest wait briefly in a bounded queue, then get a fast 503 with Retry-After. No
  request ever waits for a connection on the event loop, which would stop every other
  request and the release of the connections it waits for. Probes that need no database
  (health, liveness, an anonymous version) are always answered.
- count each request against the rate limits that are switched on (kiln.rate_limits), and
  answer 429 past a limit before any route or kept answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import deque
from functools import partial
from typing import Any

import orjson

from kiln import changes, rate_limits
from kiln.api import _answers
from kiln.api._deps import (
    CREDENTIAL_HEADERS,
    CREDENTIAL_PARAMS,
    DATABASE_WHILE_STREAMING,
    SESSION_COOKIE,
    SESSION_SCOPE_KEY,
    caller,
)
from kiln.api._errors import UNAVAILABLE
from kiln.api._observe import answered_as
from kiln.api._params import NUL_REFUSED
from kiln.api._read_loops import ReadLoops
from kiln.auth.actor import Actor
from kiln.errors import BadRequest, PayloadTooLarge
from kiln.services import git_http as transport
from kiln.services import instance_settings

Scope = dict[str, Any]
log = logging.getLogger("kiln.api")
_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")
_KEEP = {b"2F", b"2f", b"25"}  # '/' and '%' stay escaped; the dependency decodes them
# A project's upload at its project-relative URL: /<namespace>/<project>/uploads/<secret>/<name>.
_PROJECT_UPLOAD = re.compile(r"^/(?!api/|-/)(.+)/uploads/([0-9a-f]{32})/([^/]+)$")


def decode_path(raw: bytes) -> str | None:
    """The routing path: every escape decoded except `%2F` and `%25`; None if not UTF-8."""

    def repl(m: re.Match[bytes]) -> bytes:
        if m.group(1) in _KEEP:
            return m.group(0)
        return bytes([int(m.group(1), 16)])

    try:
        return (_ESCAPE.sub(repl, raw) if b"%" in raw else raw).decode("utf-8")
    except UnicodeDecodeError:
        return None


# A push's pack: streamed to git as it arrives, bounded by max_push_bytes instead of the body
# limit. Every other git request (a fetch's wants and haves) is an ordinary bounded body.
_RECEIVE_PACK_PATH = f"/{transport.RECEIVE_PACK}"
_RECEIVE_PACK_REQUEST = transport.content_type(transport.RECEIVE_PACK, "request").encode()
_NUL_ESCAPE = re.compile(rb"%00")
# What the parameter parser answers for a NUL in a body, answered here for one in the URL or
# a header, before any route reads them.
_NUL_ANSWER = BadRequest(NUL_REFUSED).body()


# Answered without the database: an orchestrator's probes and tooling's version check.
_PROBES = frozenset({"/-/health", "/-/liveness"})
_VERSION = "/api/v4/version"  # a probe too when anonymous
LAG_TICK = 0.01  # seconds between the loop-lag timer's runs
# A late loop refuses only once more requests came since its last tick than a pool of
# clients each waiting for its answer would send: a stall with little traffic (a slow
# statement, a thread holding the GIL) or a benchmark's 32 connections is no overload.
LAG_BATCH = 32


def needs_database(scope: Scope) -> bool:
    """Everything but the probes; `/version` with credentials authenticates them."""
    path = scope["path"]
    if scope["method"] not in ("GET", "HEAD"):
        return True
    if path in _PROBES:
        return False
    if path != _VERSION:
        return True
    if any(name in CREDENTIAL_HEADERS for name, _ in scope.get("headers", ())):
        return True
    query = scope.get("query_string", b"")
    return bool(query) and any(param in query for param in CREDENTIAL_PARAMS)


class Admission:
    """Which requests the server takes on now.

    At most `limit` requests use the database at once; more wait in a FIFO queue of
    `queue` places until a slot frees, at most `timeout` seconds. And while the event loop
    runs more than `max_lag` seconds behind with requests streaming in (each request it
    reads then has already waited about that long), new requests are refused, which lets
    it catch up: the requests it serves stay fast, and the refusals are cheap. What cannot
    be taken on is refused at once. Everything here runs on the event loop: nothing
    blocks, and no lock is needed."""

    def __init__(self, limit: int, queue: int, timeout: float, max_lag: float, retry_after: int) -> None:
        self.limit = max(1, limit)
        self.queue = max(0, queue)
        self.timeout = timeout
        self.max_lag = max_lag
        self.retry_after = retry_after
        self.in_flight = 0
        self.waiting = 0
        self.refused = 0
        self._waiters: deque[asyncio.Future[bool]] = deque()
        self._lag = 0.0
        self._due = 0.0
        self._arrived = 0
        self._tick: asyncio.TimerHandle | None = None

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Measure the loop's lag: a timer every LAG_TICK seconds notes how late it runs."""
        self.unwatch()
        self._due = time.perf_counter() + LAG_TICK

        def tick() -> None:
            now = time.perf_counter()
            self._lag = max(0.0, now - self._due)
            self._arrived = 0
            self._due = now + LAG_TICK
            self._tick = loop.call_later(LAG_TICK, tick)

        self._tick = loop.call_later(LAG_TICK, tick)

    def unwatch(self) -> None:
        if self._tick is not None:
            self._tick.cancel()
            self._tick = None
            self._lag = 0.0

    def lag(self) -> float:
        """How far behind the loop is: as late as its last tick ran, or as the one now overdue."""
        if self._tick is None:
            return 0.0
        return max(self._lag, time.perf_counter() - self._due)

    async def enter(self) -> bool:
        """True with a slot held (give it back with `leave`), False if refused."""
        self._arrived += 1
        if self.max_lag > 0 and self._arrived > LAG_BATCH and self.lag() > self.max_lag:
            self.refused += 1
            return False
        if self.in_flight < self.limit and not self.waiting:
            self.in_flight += 1
            return True
        if self.waiting >= self.queue or self.timeout <= 0:
            self.refused += 1
            return False
        loop = asyncio.get_running_loop()
        slot: asyncio.Future[bool] = loop.create_future()
        self._waiters.append(slot)
        self.waiting += 1
        timer = loop.call_later(self.timeout, _expire, slot)
        try:
            admitted = await slot
        except asyncio.CancelledError:
            if slot.done() and not slot.cancelled() and slot.result():
                self.leave()
            raise
        finally:
            timer.cancel()
            self.waiting -= 1
            if not self.waiting:
                self._waiters.clear()  # only expired ones are left
        if not admitted:
            self.refused += 1
        return admitted

    def leave(self) -> None:
        """Hand the slot to the longest waiting request, or free it."""
        while self._waiters:
            slot = self._waiters.popleft()
            if not slot.done():
                slot.set_result(True)
                return
        self.in_flight -= 1


class AdmissionSlot:
    """The database slot a request holds. A request that waits on purpose (a runner's long
    poll for a job) gives it back while it waits and takes it again to use the database, so
    that any number of runners may wait without keeping other requests out."""

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self._admission.leave()

    async def retake(self) -> bool:
        """True with the slot held again; False when the server refuses it now (overload)."""
        if not self.held:
            self.held = await self._admission.enter()
        return self.held


# Where a request finds its AdmissionSlot (absent when admission is off).
ADMISSION_SLOT = "kiln.admission_slot"


def _expire(slot: asyncio.Future[bool]) -> None:
    if not slot.done():
        slot.set_result(False)


# A caller not looked up yet (None is the anonymous one).
_UNKNOWN = object()


class KilnASGI:
    def __init__(
        self, app: Any, max_body: int, admission: Admission | None = None, read_loops: ReadLoops | None = None
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.admission = admission
        self.read_loops = read_loops
        self._limiter: rate_limits.Limiter | None = None
        self._allowlist: tuple[str, frozenset[int]] = ("", frozenset())
        # The causes of failed caller lookups already logged (_cause).
        self._caller_failures: set[tuple[str, str, int]] = set()

    def body_limit(self, headers: Any = ()) -> int:
        """Read per request from the runtime's settings, so a reconfigured limit applies at once;
        a body read as JSON (declared so, or undeclared) has the JSON limit too."""
        runtime = getattr(getattr(self.app, "state", None), "kiln", None)
        settings = getattr(runtime, "settings", None)
        limit = int(getattr(settings, "max_request_body_bytes", self.max_body))
        declared = next((value for name, value in headers if name == b"content-type"), b"")
        kind = declared.split(b";", 1)[0].strip().lower()
        if kind in (b"", b"application/json") or kind.endswith(b"+json"):
            limit = min(limit, int(getattr(settings, "max_json_body_bytes", limit)))
        return limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path")
        if (
            _NUL_ESCAPE.search(query := scope.get("query_string", b""))
            or b"\x00" in query
            or "\x00" in scope.get("path", "")
            or any(b"\x00" in value for _, value in scope.get("headers", ()))
        ):
            await _reply(send, 400, _NUL_ANSWER)
            return
        if raw:
            path = decode_path(raw.split(b"?", 1)[0])
            if path is None:
                await _reply(send, 400, {"error": "path is not valid UTF-8"})
                return
            if "\x00" in path:
                await _reply(send, 400, _NUL_ANSWER)
                return
            upload = _PROJECT_UPLOAD.match(path)
            if upload is not None:
                project = upload.group(1).replace("%", "%25").replace("/", "%2F")
                path = f"/-/project-uploads/{project}/{upload.group(2)}/{upload.group(3)}"
            scope = {**scope, "path": path}
        headers = scope.get("headers", ())
        if (
            scope["method"] == "POST"
            and scope["path"].endswith(_RECEIVE_PACK_PATH)
            and any(name == b"content-type" and value == _RECEIVE_PACK_REQUEST for name, value in headers)
        ):
            await self._forward(scope, receive, send)
            return
        limit = self.body_limit(headers)
        for name, value in headers:
            if name == b"content-length":
                try:
                    too_big = int(value) > limit
                except ValueError:
                    await _reply(send, 400, {"error": "Content-Length is invalid"})
                    return
                if too_big:
                    await _reply(send, 413, PayloadTooLarge().body())
                    return
        await self._forward(scope, _limited(receive, limit), send)

    async def _forward(self, scope: Scope, receive: Any, send: Any) -> None:
        runtime = getattr(getattr(self.app, "state", None), "kiln", None)
        keeping = None if runtime is None or not needs_database(scope) else _answers.may_keep(scope)
        if keeping is None:
            await self._answer(scope, receive, send)
            return
        clock = changes.clock_of(runtime.engine)
        found = _answers.kept(scope, runtime.settings, clock)
        if found is not None:
            # Counted as the request it repeats, by the caller it was made for; when the
            # settings must be read first, the request is answered in full instead.
            try:
                refusal = self._throttled(scope, runtime, database=False, actor=found.actor)
            except _Unread:
                refusal, found = None, None
            if refusal is not None:
                await _refuse(send, refusal)
                return
        if found is not None:
            answered_as(scope, found.route, found.actor)
            await send(found.start)
            await send({"type": "http.response.body", "body": found.body})
            return
        await self._answer(scope, receive, send, keeping)
        _answers.end(scope, keeping, runtime.settings, clock)

    async def _answer(
        self, scope: Scope, receive: Any, send: Any, keeping: _answers.Keeping | None = None
    ) -> None:
        admission = self.admission
        if admission is not None and not needs_database(scope):
            admission = None
        if scope["method"] == "HEAD":
            scope = {**scope, "method": "GET", "kiln_head": True}
            send = _without_body(send)
        if admission is not None and not await admission.enter():
            await _reply(send, 503, UNAVAILABLE, [(b"retry-after", str(admission.retry_after).encode())])
            return
        held = None
        if admission is not None:
            held = scope[ADMISSION_SLOT] = AdmissionSlot(admission)
        runtime = getattr(getattr(self.app, "state", None), "kiln", None)
        app = self.app if runtime is None else partial(self._limited, runtime, admission is not None)
        done = False

        def done_with_database() -> None:
            nonlocal done
            if done:
                return
            done = True
            try:
                db = scope.get(SESSION_SCOPE_KEY)
                if db is not None:
                    db.close()
            finally:
                # After the close: the connection is back in the pool for whoever gets the slot.
                if held is not None:
                    held.release()

        async def answering(message: dict[str, Any]) -> None:
            # Once the answer starts, the request is done with the database (unless it said
            # otherwise): a clone or an archive streamed to a slow client holds neither a
            # connection nor a slot for as long as the client takes.
            if message["type"] == "http.response.start" and not scope.get(DATABASE_WHILE_STREAMING):
                done_with_database()
            if keeping is not None:
                _answers.seen(keeping, message)
            await send(message)

        try:
            loops = self.read_loops
            if loops is not None and loops.running and _is_api_read(scope):
                await loops.run(app, scope, receive, answering)
            else:
                await app(scope, receive, answering)
        except asyncio.CancelledError:
            # Only the server cancels a request: at shutdown, once its deadline has passed. The
            # request ends here, with a line in the log rather than a traceback.
            log.warning("%s %s ended unfinished at shutdown", scope["method"], scope["path"])
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            done_with_database()

    async def _limited(self, runtime: Any, database: bool, scope: Scope, receive: Any, send: Any) -> None:
        """The app behind the rate limits: on the loop that answers the request (a read loop
        for API reads on PostgreSQL), since counting waits on the store."""
        try:
            refusal = self._throttled(scope, runtime, database=database)
        except _Unread:
            refusal = None
        if refusal is not None:
            await _refuse(send, refusal)
            return
        await self.app(scope, receive, send)

    def limiter(self, runtime: Any) -> rate_limits.Limiter:
        """This process's throttles, on the store beside the runtime's database."""
        settings = runtime.settings
        limiter = self._limiter
        if limiter is None:
            limiter = rate_limits.Limiter(rate_limits.store_for(settings.sqlalchemy_url, settings.data_dir))
            self._limiter = limiter
        limiter.watch(runtime.engine)
        listed = settings.throttle_user_allowlist
        if listed != self._allowlist[0]:
            self._allowlist = (listed, rate_limits.allowlist(listed))
        limiter.allowlist = self._allowlist[1]
        return limiter

    def _caller(self, db: Any, runtime: Any, scope: Scope, frontend: bool) -> tuple[Actor | None, bool]:
        """The request's caller (and whether it is the frontend's, see `caller`). A lookup that
        fails unexpectedly counts the request by its address, as an anonymous caller's: no
        credentials ever skip the throttles. Each cause is logged once, with its traceback."""
        try:
            return caller(db, runtime, scope, frontend=frontend)
        except Exception as error:
            cause = _cause(error)
            if cause not in self._caller_failures:
                if len(self._caller_failures) >= _CAUSES_LIMIT:
                    self._caller_failures.clear()
                self._caller_failures.add(cause)
                log.exception(
                    "rate limits: caller of %s %s not found; counted by address",
                    scope["method"],
                    scope["path"],
                )
            else:
                log.debug("rate limits: caller not found (%s); counted by address", error)
            with contextlib.suppress(Exception):
                db.rollback()
            return None, False

    def _throttled(
        self, scope: Scope, runtime: Any, *, database: bool, actor: Actor | object | None = _UNKNOWN
    ) -> rate_limits.Refusal | None:
        """The refusal for a request past a rate limit, else None (counted where a throttle
        applies). The settings are read again only once the database has changed; where that
        is needed and `database` is false, _Unread. `actor`: the caller, when already known.
        Nothing here ever fails the request: trouble is logged and the request goes through."""
        db = None
        try:
            bypass = runtime.settings.throttle_bypass_header
            if bypass and _header(scope, bypass.lower().encode("utf-8")) == b"1":
                return None
            limiter = self.limiter(runtime)
            version = limiter.version(changes.clock_of(runtime.engine))
            rules = limiter.fresh(version)
            if rules is None:
                if not database:
                    raise _Unread()
                db = runtime.sessions()
                rules = limiter.rules(instance_settings.current(db), version)
            if not rules.rules:
                return None
            client = scope.get("client")
            request = rate_limits.Request(
                method=scope["method"],
                path=scope["path"],
                query=scope.get("query_string", b""),
                ip=str(client[0]) if client else "",
            )
            candidates = rules.candidates(request)
            maybe_frontend = request.api and _frontend_credentials(scope)
            if not candidates and not maybe_frontend:
                return None
            frontend = False
            if actor is _UNKNOWN:
                if db is None:
                    db = runtime.sessions()
                actor, frontend = self._caller(db, runtime, scope, maybe_frontend)
            elif maybe_frontend and isinstance(actor, Actor) and actor.via == "session":
                # A kept answer's session: whether the CSRF header is its token takes the
                # database, so the request is answered in full.
                raise _Unread()
            if isinstance(actor, Actor):
                request.user_id = actor.id
                if frontend:
                    request.frontend = True
                    candidates = rules.candidates(request)
            refusal = limiter.count(candidates, request, rules.body)
            if db is not None and refusal is None and database:
                # The request's own session from here (provide_db), closed when it is done.
                scope[SESSION_SCOPE_KEY], db = db, None
            return refusal
        except _Unread:
            raise
        except Exception:
            log.exception("rate limits: not applied to %s %s", scope["method"], scope["path"])
            return None
        finally:
            if db is not None:
                db.close()


# At most this many causes are remembered; past it they are logged again, from scratch.
_CAUSES_LIMIT = 64


def _cause(error: BaseException) -> tuple[str, str, int]:
    """An error's kind and where it was raised: the same trouble, whatever its message."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = ("", 0) if tb is None else (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return (type(error).__qualname__, *where)


class _Unread(Exception):
    """The settings must be read again, and this request may not use the database."""


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return value  # type: ignore[no-any-return]
    return None


_SESSION_COOKIE = SESSION_COOKIE.encode()


def _frontend_credentials(scope: Scope) -> bool:
    """Maybe a browser's request: its session cookie and a CSRF header (GitLab counts such API
    requests as web traffic once the token is the session's, which `caller` checks)."""
    cookie = _header(scope, b"cookie")
    return cookie is not None and _SESSION_COOKIE in cookie and _header(scope, b"x-csrf-token") is not None


async def _refuse(send: Any, refusal: rate_limits.Refusal) -> None:
    body = refusal.body.encode()
    headers = [(name.lower().encode(), value.encode("latin-1")) for name, value in refusal.headers()]
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _is_api_read(scope: Scope) -> bool:
    """A read of the API that waits on the database (an anonymous /version does not)."""
    return scope["method"] == "GET" and scope["path"].startswith(API_READS) and needs_database(scope)


API_READS = "/api/v4/"


def _limited(receive: Any, limit: int) -> Any:
    """A body without Content-Length is counted as it arrives; whoever reads past the limit
    gets PayloadTooLarge, which the error handlers answer with 413."""
    received = 0

    async def wrapped() -> dict[str, Any]:
        nonlocal received
        message: dict[str, Any] = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise PayloadTooLarge()
        return message

    return wrapped


def _without_body(send: Any) -> Any:
    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body"):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return wrapped


async def _reply(
    send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or ()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
