"""Groups and subgroups (GitLab's Groups API): list, read, create, update, delete, restore,
transfer, subgroups, descendant groups and the group's projects."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from kiln import storage
from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import delete, get, post, put
from kiln.api.projects import avatar_download
from kiln.entities.groups import group_detail, group_view
from kiln.entities.projects import project_full, project_simple
from kiln.policy import Action
from kiln.schemas.groups import (
    GroupCreate,
    GroupDelete,
    GroupGet,
    GroupList,
    GroupProjects,
    GroupTransfer,
    GroupUpdate,
)
from kiln.services import avatars
from kiln.services import groups as service

Req = Request[Any, Any, Any]


def _groups(request: Req, listing: service.GroupListing, page: Any) -> Response[bytes]:
    base = base_url(request)
    return paginated(request, [group_view(r, base) for r in listing.records], page, listing.page)


@get("/groups", auth="optional", params=GroupList)
async def list_groups(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: GroupList = await params(request)
    page = page_of(q)
    return _groups(request, service.list_groups(db, viewer, q, page), page)


@post("/groups", params=GroupCreate)
async def create_group(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: GroupCreate = await params(request)
    rec = await in_thread(service.create_group, db, actor, p, storage.uploads(runtime(request).settings))
    return render(group_detail(rec, base_url(request)), status=201)


@get("/groups/{id:str}", auth="optional", params=GroupGet)
async def get_group(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: GroupGet = await params(request)
    rec = service.get_group(
        db,
        viewer,
        id,
        runtime(request).settings,
        with_projects=q.with_projects,
        custom_attributes=q.with_custom_attributes,
    )
    return render(group_detail(rec, base_url(request)))


@put("/groups/{id:str}", params=GroupUpdate)
async def update_group(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: GroupUpdate = await params(request)
    rec = await in_thread(service.update_group, db, actor, id, p, runtime(request).settings)
    return render(group_detail(rec, base_url(request)))


@delete("/groups/{id:str}", params=GroupDelete, status=202)
async def delete_group(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: GroupDelete = await params(request)
    await in_thread(
        service.delete_group, db, actor, id, permanently=q.permanently_remove, full_path=q.full_path
    )
    return render({"message": "202 Accepted"}, status=202)


@post("/groups/{id:str}/restore")
async def restore_group(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec = await in_thread(service.restore_group, db, actor, id, runtime(request).settings)
    return render(group_detail(rec, base_url(request)), status=201)


@post("/groups/{id:str}/transfer", params=GroupTransfer)
async def transfer_group(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: GroupTransfer = await params(request)
    rec = await in_thread(service.transfer_group, db, actor, id, p.group_id, runtime(request).settings)
    return render(group_detail(rec, base_url(request)), status=201)


@get("/groups/{id:str}/avatar", auth="optional")
async def group_avatar(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return avatar_download(files, avatars.group_avatar_download(db, viewer, id, files))


@post("/groups/{id:str}/projects/{project_id:str}", requires=Action.ADMIN_PROJECTS)
async def transfer_project_to_group(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], project_id: FromPath[str]
) -> Response[bytes]:
    rec = await in_thread(
        service.transfer_project_to_group, db, actor, id, unquote(project_id), runtime(request).settings
    )
    return render(group_detail(rec, base_url(request)), status=201)


@get("/groups/{id:str}/subgroups", auth="optional", params=GroupList)
async def list_subgroups(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: GroupList = await params(request)
    page = page_of(q)
    return _groups(request, service.list_subgroups(db, viewer, id, q, page), page)


@get("/groups/{id:str}/descendant_groups", auth="optional", params=GroupList)
async def list_descendant_groups(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: GroupList = await params(request)
    page = page_of(q)
    return _groups(request, service.list_subgroups(db, viewer, id, q, page, descendants=True), page)


@get("/groups/{id:str}/projects", auth="optional", params=GroupProjects)
async def list_group_projects(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: GroupProjects = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_projects(db, viewer, id, q, page, runtime(request).settings)
    base = base_url(request)
    view = project_simple if q.simple else project_full
    return paginated(request, [view(r, base) for r in listing.records], page, listing.page)


ROUTES: list[HTTPRouteHandler] = [
    list_groups,
    create_group,
    get_group,
    update_group,
    delete_group,
    restore_group,
    transfer_group,
    group_avatar,
    transfer_project_to_group,
    list_subgroups,
    list_descendant_groups,
    list_group_projects,
]
