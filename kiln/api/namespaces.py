"""Namespaces (GitLab's Namespaces API): the user's own namespace and the groups they
belong to, one namespace by id or path, and whether a path is free."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln.api._deps import Authenticated, Db, base_url
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get
from kiln.entities.groups import exists_view, namespace_view
from kiln.schemas.groups import NamespaceExists, NamespaceList
from kiln.services import namespaces as service

Req = Request[Any, Any, Any]


@get("/namespaces", params=NamespaceList)
async def list_namespaces(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    q: NamespaceList = await params(request)
    page = page_of(q)
    listing = service.list_for_api(db, actor, q, page)
    base = base_url(request)
    return paginated(request, [namespace_view(r, base) for r in listing.records], page, listing.page)


@get("/namespaces/{id:str}")
async def get_namespace(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(namespace_view(service.get_for_api(db, actor, id), base_url(request)))


@get("/namespaces/{id:str}/exists", params=NamespaceExists)
async def namespace_exists(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: NamespaceExists = await params(request)
    return render(exists_view(*service.path_exists(db, id, q.parent_id)))


ROUTES: list[HTTPRouteHandler] = [list_namespaces, get_namespace, namespace_exists]
