"""Sign-up at the root, outside the API: `POST /users` with GitLab's registration form."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response

from kiln.api._deps import Db, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import post
from kiln.entities.signups import signed_up
from kiln.schemas.signups import SignUp
from kiln.services import signups as service

Req = Request[Any, Any, Any]


@post("/users", auth="none", params=SignUp, status=302)
async def sign_up(request: Req, db: Db) -> Response[bytes]:
    form: SignUp = await params(request)
    rt = runtime(request)
    # In a thread: hashing the password takes a fifth of a second of CPU.
    done = await in_thread(service.sign_up, db, rt.settings, form)
    # As GitLab's registration: on to the sign-in page, with what happened.
    return render(
        signed_up(done.message, done.user),
        status=302,
        headers={"Location": f"{rt.settings.external_url}/users/sign_in"},
    )


ROUTES = [sign_up]
