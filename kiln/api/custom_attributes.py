"""Custom attributes of users, groups and projects (admin only): the same four routes under
/users/:id, /groups/:id and /projects/:id."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, in_thread, int_id
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, put
from kiln.entities.custom_attributes import custom_attribute
from kiln.policy import Action
from kiln.schemas.custom_attributes import CustomAttributeSet
from kiln.services import custom_attributes as service
from kiln.services.custom_attributes import Kind

Req = Request[Any, Any, Any]
ADMIN = Action.ADMIN_CUSTOM_ATTRIBUTES


def _routes(kind: Kind, singular: str) -> list[HTTPRouteHandler]:
    base = f"/{kind}/{{id:str}}/custom_attributes"

    def ident(value: str) -> str:
        # User ids are numeric (anything else is no route); groups and projects also take paths.
        # Keys are unquoted by the routes: routing leaves `%2F` and `%25` escaped.
        return str(int_id(value)) if kind == "users" else value

    async def list_attributes(db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
        pairs = service.list_attributes(db, actor, kind, ident(id))
        return render([custom_attribute(k, v) for k, v in pairs])

    async def get_attribute(
        db: Db, actor: Authenticated, id: FromPath[str], key: FromPath[str]
    ) -> Response[bytes]:
        return render(custom_attribute(*service.get_attribute(db, actor, kind, ident(id), unquote(key))))

    async def set_attribute(
        request: Req, db: Db, actor: Authenticated, id: FromPath[str], key: FromPath[str]
    ) -> Response[bytes]:
        p: CustomAttributeSet = await params(request)
        pair = await in_thread(service.set_attribute, db, actor, kind, ident(id), unquote(key), p.value)
        return render(custom_attribute(*pair))

    async def delete_attribute(
        db: Db, actor: Authenticated, id: FromPath[str], key: FromPath[str]
    ) -> Response[bytes]:
        await in_thread(service.delete_attribute, db, actor, kind, ident(id), unquote(key))
        return no_content()

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, name, doc in (
        (list_attributes, f"list_{singular}_custom_attributes", f"Custom attributes of a {singular}."),
        (get_attribute, f"get_{singular}_custom_attribute", f"One custom attribute of a {singular}."),
        (
            set_attribute,
            f"set_{singular}_custom_attribute",
            f"Create or update a {singular}'s custom attribute.",
        ),
        (delete_attribute, f"delete_{singular}_custom_attribute", f"Delete a {singular}'s custom attribute."),
    ):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = doc
    return [
        get(base, requires=ADMIN)(list_attributes),
        get(f"{base}/{{key:str}}", requires=ADMIN)(get_attribute),
        put(f"{base}/{{key:str}}", params=CustomAttributeSet, requires=ADMIN)(set_attribute),
        delete(f"{base}/{{key:str}}", requires=ADMIN)(delete_attribute),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *_routes("users", "user"),
    *_routes("groups", "group"),
    *_routes("projects", "project"),
]
