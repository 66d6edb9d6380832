"""Further e-mail addresses (GitLab's Users API "Emails"): /user/emails and the
administrators' /users/:id/emails. ROUTES is mounted under /api/v4 by kiln.api."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, in_thread, int_id
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.auth.tokens import API, READ_API, READ_USER
from kiln.entities.emails import email
from kiln.schemas.emails import EmailCreate, EmailList, UserEmailCreate
from kiln.services import emails as service

Req = Request[Any, Any, Any]
# read_user reaches the reads, as it does every read of GitLab's users API.
READ = (API, READ_API, READ_USER)


@get("/user/emails", params=EmailList, scopes=READ)
async def list_own_emails(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: EmailList = await params(request)
    page = page_of(q)
    result = service.list_own(db, actor, page)
    return paginated(request, [email(e) for e in result.items], page, result)


@get("/user/emails/{email_id:str}", scopes=READ)
async def get_own_email(db: Db, actor: Authenticated, email_id: FromPath[str]) -> Response[bytes]:
    return render(email(service.get_own(db, actor, int_id(email_id))))


@post("/user/emails", params=EmailCreate)
async def create_own_email(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: EmailCreate = await params(request)
    return render(email(await in_thread(service.create_own, db, actor, p)), status=201)


@delete("/user/emails/{email_id:str}")
async def delete_own_email(db: Db, actor: Authenticated, email_id: FromPath[str]) -> Response[bytes]:
    await in_thread(service.delete_own, db, actor, int_id(email_id))
    return no_content()


@get("/users/{id:str}/emails", params=EmailList, scopes=READ)
async def list_user_emails(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: EmailList = await params(request)
    page = page_of(q)
    result = service.list_of_user(db, actor, int_id(id), page)
    return paginated(request, [email(e) for e in result.items], page, result)


@post("/users/{id:str}/emails", params=UserEmailCreate)
async def create_user_email(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: UserEmailCreate = await params(request)
    return render(email(await in_thread(service.create_for_user, db, actor, int_id(id), p)), status=201)


@delete("/users/{id:str}/emails/{email_id:str}")
async def delete_user_email(
    db: Db, actor: Authenticated, id: FromPath[str], email_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(service.delete_for_user, db, actor, int_id(id), int_id(email_id))
    return no_content()


ROUTES: list[HTTPRouteHandler] = [
    list_own_emails,
    get_own_email,
    create_own_email,
    delete_own_email,
    list_user_emails,
    create_user_email,
    delete_user_email,
]
