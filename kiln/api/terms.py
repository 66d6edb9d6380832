"""The terms of service at the root, as GitLab's web page has them: `GET /-/users/terms` (the
latest version, for anyone), `POST /-/users/terms/:id/accept` from a signed-in session."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.params import FromPath

from kiln.api._deps import Db, credentials_of, in_thread, int_id, runtime
from kiln.api._render import render
from kiln.api._routes import get, post
from kiln.auth.actor import Actor
from kiln.auth.credentials import Credentials, authenticate
from kiln.entities import terms as entity
from kiln.errors import Unauthorized
from kiln.services import terms as service

Req = Request[Any, Any, Any]


def _signed_in(request: Req, db: Db) -> Actor | None:
    """The web page's session only, and the terms are what it comes for: not yet accepted."""
    creds, _ = credentials_of(request)
    session = Credentials(session=creds.session, safe_method=creds.safe_method, csrf_token=creds.csrf_token)
    return authenticate(db, runtime(request).settings, session, terms=False)


@get("/-/users/terms", auth="none")
async def latest_terms(request: Req, db: Db) -> Response[bytes]:
    found = service.latest(db, _signed_in(request, db))
    return render(entity.latest_terms(found.id, found.terms, found.accepted))


@post("/-/users/terms/{id:str}/accept", auth="none", status=302)
async def accept_terms(request: Req, db: Db, id: FromPath[str]) -> Response[bytes]:
    rt = runtime(request)
    actor = _signed_in(request, db)
    if actor is None:
        raise Unauthorized()
    term_id = int_id(id)
    await in_thread(service.accept, db, actor, term_id)
    return render(entity.accepted(term_id), status=302, headers={"Location": f"{rt.settings.external_url}/"})


ROUTES = [latest_terms, accept_terms]
