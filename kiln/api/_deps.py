"""Dependencies every route draws from: the database session and the caller.

`viewer` may be anonymous (None); `actor` is always someone (401 otherwise). Both check
the token's scopes against the route's declaration and apply sudo."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl

from litestar import Request
from litestar.di import NamedDependency, Provide
from sqlalchemy.orm import Session

from kiln import changes, policy
from kiln.api import _answers
from kiln.auth.actor import Actor
from kiln.auth.credentials import Credentials, authenticate
from kiln.auth.sudo import apply_sudo
from kiln.entities.projects import project_web_url
from kiln.errors import KilnError, RouteNotFound, Unauthorized
from kiln.models.base import numeric_id
from kiln.runtime import Runtime
from kiln.services import git_http

SESSION_COOKIE = "_service_session"
# Where a request keeps its database session for KilnASGI to close.
SESSION_SCOPE_KEY = "kiln_db"
# Set by a handler whose streamed answer still uses the database (a push records itself once
# git has taken the pack): it keeps its admission slot until the answer ends.
DATABASE_WHILE_STREAMING = "kiln_database_while_streaming"
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
T = TypeVar("T")


def int_id(value: str) -> int:
    """A numeric path segment; anything else is no route at all (GitLab's requirements)."""
    found = numeric_id(value)
    if found is None:
        raise RouteNotFound()
    return found


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A service call that waits on git (a child process, a repository lock), on the
    database's writer (every write) or reads much, run off the event loop so other requests
    go on meanwhile (DESIGN.md: work that waits runs in a thread). Short reads stay inline:
    the hop costs more than they do.

    A thread cannot be stopped: when the request is cancelled (at shutdown, past its
    deadline), the cancellation waits for the call to return before it goes on, so the
    request's cleanup never closes a session the thread is still using. A call that never
    returns is ended with the process (`kiln serve` exits once the deadline has passed)."""
    call = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
    try:
        return await asyncio.shield(call)
    except asyncio.CancelledError:
        await outlast_cancellation(call)
        raise


async def streamed(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Each piece made in a thread (read from git, encoded): none of it on the event loop.
    Closing the pieces, when the answer ends early, stops what reads them."""
    try:
        while (piece := await in_thread(next, pieces, None)) is not None:
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def is_head(request: Request[Any, Any, Any]) -> bool:
    """A HEAD request, answered by its GET route (KilnASGI sends the headers alone)."""
    return bool(request.scope.get("kiln_head"))  # type: ignore[typeddict-item]


async def outlast_cancellation(work: asyncio.Future[Any]) -> None:
    """Waits, in a cancelled request, for work that cannot be stopped (a thread, a read loop's
    task) to end, however often the request is cancelled again: its cleanup must not close
    a session the work still uses. The work's outcome goes unused, an error included."""
    while not work.done():
        try:
            await asyncio.wait({work})
        except asyncio.CancelledError:
            continue  # cancelled again: still not before the work is done
    if not work.cancelled():
        work.exception()  # retrieved: no "never retrieved" report


def runtime(request: Request[Any, Any, Any]) -> Runtime:
    return request.app.state.kiln  # type: ignore[no-any-return]


def base_url(request: Request[Any, Any, Any]) -> str:
    """This instance's external URL, which every web_url and _links is built on."""
    return runtime(request).settings.external_url


def project_web(request: Request[Any, Any, Any], full_path: str) -> str:
    """A project's web URL, on this instance's external URL."""
    return project_web_url(full_path, runtime(request).settings.external_url)


def provide_db(request: Request[Any, Any, Any]) -> Session:
    """The request's session. KilnASGI closes it once the response is sent: a generator
    dependency's cleanup machinery measured as a tenth of a cheap request. The rate limits
    may have opened it already (to look up the caller)."""
    db = request.scope.get(SESSION_SCOPE_KEY)  # type: ignore[typeddict-item]
    if db is None:
        db = runtime(request).sessions()
        request.scope[SESSION_SCOPE_KEY] = db  # type: ignore[literal-required]
    return db  # type: ignore[no-any-return]


# Where credentials_of finds the caller: the headers (the session's cookie among all cookies),
# and the query's parameters.
CREDENTIAL_HEADERS = frozenset({b"private-token", b"authorization", b"job-token", b"cookie", b"sudo"})
CREDENTIAL_PARAMS = (b"private_token", b"access_token", b"job_token", b"sudo")


def credentials_of(request: Request[Any, Any, Any]) -> tuple[Credentials, str | None]:
    """The credentials and sudo target the request presents, from headers or query."""
    headers = request.headers
    query: dict[str, str] = {}
    raw_query = request.scope.get("query_string", b"")
    if raw_query:
        try:
            query = dict(parse_qsl(raw_query.decode("utf-8"), keep_blank_values=True))
        except UnicodeError:
            query = {}
    private = headers.get("private-token") or query.get("private_token")
    bearer = None
    authorization = headers.get("authorization")
    if authorization and authorization[:7].lower() == "bearer ":
        bearer = authorization[7:].strip()
    elif "access_token" in query:
        bearer = query["access_token"]
    job = headers.get("job-token") or query.get("job_token")
    session = request.cookies.get(SESSION_COOKIE)
    sudo = headers.get("sudo") or query.get("sudo")
    creds = Credentials(
        private_token=private or None,
        bearer=bearer or None,
        job_token=job or None,
        session=session or None,
        safe_method=request.method in _SAFE_METHODS,
        csrf_token=headers.get("x-csrf-token"),
    )
    return creds, (sudo or None)


def caller(
    db: Session, rt: Runtime, scope: dict[str, Any], *, frontend: bool = False
) -> tuple[Actor | None, bool]:
    """Who the request's credentials name, for the rate limits (before any route): a token in
    a header or the query, a browser session (with its CSRF token for unsafe methods), git's
    Basic credentials with a token or CI job token as password. None when there are none or
    they are not good (an unknown, expired or revoked token): such a caller counts by address.
    And whether the request is the frontend's: with `frontend` (it has a session cookie and
    an X-CSRF-Token header), a browser session whose CSRF token is the header's, whatever the
    method (GitLab validates the token; any other value leaves the request the API's)."""
    headers: dict[bytes, str] = {}
    for name, value in scope.get("headers", ()):
        if name in _REQUESTER_HEADERS and name not in headers:
            headers[name] = value.decode("latin-1")
    query: dict[str, str] = {}
    raw_query = scope.get("query_string", b"")
    if raw_query and any(param in raw_query for param in CREDENTIAL_PARAMS):
        try:
            query = dict(parse_qsl(raw_query.decode("utf-8"), keep_blank_values=True))
        except UnicodeError:
            query = {}
    authorization = headers.get(b"authorization", "")
    try:
        if authorization[:6].lower() == "basic ":
            found = git_http.basic_credentials(authorization)
            if found is None:
                return None, False
            # git's own lookup, tokens only: a password costs too much to count a request.
            login, password = found
            actor = git_http.authenticate_basic(
                db, rt.settings, login, password, rt.job_token_resolver, passwords=False
            )
            return actor, False
        bearer = authorization[7:].strip() if authorization[:7].lower() == "bearer " else None
        creds = Credentials(
            private_token=headers.get(b"private-token") or query.get("private_token") or None,
            bearer=bearer or query.get("access_token") or None,
            job_token=headers.get(b"job-token") or query.get("job_token") or None,
            session=session_cookie(headers.get(b"cookie", "")),
            safe_method=scope["method"] in _SAFE_METHODS,
            csrf_token=headers.get(b"x-csrf-token"),
        )
        if frontend and creds.session is not None and creds.csrf_token:
            # The session counts only with its own CSRF token, as for an unsafe method.
            strict = replace(creds, safe_method=False)
            actor = authenticate(db, rt.settings, strict, job_token_resolver=rt.job_token_resolver)
            if actor is not None or not creds.safe_method:
                return actor, actor is not None and actor.via == "session"
        return authenticate(db, rt.settings, creds, job_token_resolver=rt.job_token_resolver), False
    except KilnError:
        return None, False


_REQUESTER_HEADERS = frozenset({b"private-token", b"authorization", b"job-token", b"cookie", b"x-csrf-token"})


def session_cookie(header: str) -> str | None:
    """The session's cookie among a Cookie header's."""
    if SESSION_COOKIE not in header:
        return None
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == SESSION_COOKIE:
            return value.strip('"') or None
    return None


def provide_viewer(request: Request[Any, Any, Any], db: NamedDependency[Session]) -> Actor | None:
    cached = request.scope.get("kiln_actor", False)  # type: ignore[typeddict-item]
    if cached is not False:
        return cast("Actor | None", cached)
    rt = runtime(request)
    opt = request.route_handler.opt
    _answers.starting(request.scope, changes.clock_of(rt.engine))  # type: ignore[arg-type]
    creds, sudo = credentials_of(request)
    # Under sudo the token needs the sudo scope instead of the route's (checked by apply_sudo).
    actor = authenticate(
        db,
        rt.settings,
        creds,
        scopes=None if sudo is not None else opt["scopes"],
        job_token_resolver=rt.job_token_resolver,
    )
    if sudo is not None:
        actor = apply_sudo(db, actor, sudo)
    request.scope["kiln_actor"] = actor  # type: ignore[typeddict-unknown-key]
    _answers.signed_in(request.scope, actor)  # type: ignore[arg-type]
    return actor


def provide_actor(request: Request[Any, Any, Any], db: NamedDependency[Session]) -> Actor:
    actor = provide_viewer(request, db)
    if actor is None:
        raise Unauthorized()
    action = request.route_handler.opt.get("requires")
    if action is not None:
        policy.require(actor, action)
    return actor


DEPENDENCIES = {
    "db": Provide(provide_db, sync_to_thread=False),
    "viewer": Provide(provide_viewer, sync_to_thread=False),
    "actor": Provide(provide_actor, sync_to_thread=False),
}

# What handlers declare: `db: Db`, `viewer: Viewer` (maybe anonymous), `actor: Authenticated`.
Db = NamedDependency[Session]
Viewer = NamedDependency[Actor | None]
Authenticated = NamedDependency[Actor]
