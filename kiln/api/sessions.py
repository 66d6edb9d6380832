"""Web sign-in: sets the `_service_session` cookie the API accepts; sign-out sends the
visitor where the instance settings say."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.datastructures import Cookie

from kiln.api._deps import SESSION_COOKIE, Db, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import delete, get, post
from kiln.errors import ParamError
from kiln.schemas.tokens import SignIn
from kiln.services import sessions as service

Req = Request[Any, Any, Any]


@post("/users/sign_in", auth="none", params=SignIn, status=302)
async def sign_in(request: Req, db: Db) -> Response[bytes]:
    p: SignIn = await params(request)
    fields = p.fields()
    if fields is None:
        raise ParamError("user[login] is missing, user[password] is missing")
    rt = runtime(request)
    ip = request.client.host if request.client else None
    # In a thread: checking the password takes a fifth of a second of CPU.
    signed_in = await in_thread(service.sign_in, db, rt.settings, fields, ip)
    response = render(
        {"message": "Signed in successfully.", "csrf_token": signed_in.csrf_token},
        status=302,
        headers={"Location": f"{rt.settings.external_url}/", "X-CSRF-Token": signed_in.csrf_token},
    )
    response.cookies.append(
        Cookie(
            key=SESSION_COOKIE,
            value=signed_in.cookie,
            max_age=signed_in.max_age,
            httponly=True,
            samesite="lax",
            secure=rt.settings.external_url.startswith("https://"),
            path="/",
        )
    )
    return response


@delete("/users/sign_out", auth="none", status=302)
async def sign_out(request: Req, db: Db) -> Response[bytes]:
    settings = runtime(request).settings
    location = await in_thread(service.sign_out, db, settings, request.cookies.get(SESSION_COOKIE))
    response = redirect(location, "Signed out successfully.")
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@get("/", auth="none", status=302, summary="The web root: sends the visitor on")
async def root(request: Req, db: Db) -> Response[bytes]:
    location = service.root_location(db, runtime(request).settings, request.cookies.get(SESSION_COOKIE))
    return redirect(location, "You are being redirected.")


def redirect(location: str, message: str) -> Response[bytes]:
    """A 302 as GitLab's web pages answer, with a JSON body for API clients."""
    return render({"message": message}, status=302, headers={"Location": location})
