"""Projects (spec part 3 "Projects"): create, read, update, list, fork, star, archive,
delete and restore, share, uploads, languages; GitLab's transfer, groups, avatar,
housekeeping, storage and snapshot routes."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from litestar import Request, Response
from litestar.params import FromPath

from kiln import storage
from kiln.api import _user_content
from kiln.api._deps import Authenticated, Db, Viewer, base_url, in_thread, int_id, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, not_modified, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.groups import public_group_details
from kiln.entities.projects import (
    project_full,
    project_in_list_json,
    project_simple,
    project_with_access_json,
    repository_storage,
    share_link,
    starrer,
    upload_result,
)
from kiln.policy import Action
from kiln.schemas.groups import ProjectGroupList
from kiln.schemas.projects import (
    Housekeeping,
    ProjectCreate,
    ProjectCreateForUser,
    ProjectDelete,
    ProjectFork,
    ProjectGet,
    ProjectList,
    ProjectShare,
    ProjectTransfer,
    ProjectUpdate,
    SnapshotGet,
    StarrerList,
    TransferLocations,
    UploadCreate,
)
from kiln.services import (
    avatars,
    project_creation,
    project_forks,
    project_lifecycle,
    project_settings,
    project_shares,
    project_stars,
    project_transfers,
    uploads,
)
from kiln.services import housekeeping as housekeeping_service
from kiln.services import languages as language_service
from kiln.services import projects as service
from kiln.services import users as user_service

Req = Request[Any, Any, Any]


def _uploads(request: Req) -> storage.Storage:
    return storage.uploads(runtime(request).settings)


def _listing(
    request: Req, viewer: Any, listing: service.ProjectListing, q: ProjectList, page: Any
) -> Response[bytes]:
    base = base_url(request)
    authenticated = viewer is not None
    items = [
        project_in_list_json(r, base, authenticated=authenticated, simple=q.simple) for r in listing.records
    ]
    return paginated(request, items, page, listing.page)


@get("/projects", auth="optional", params=ProjectList)
async def list_projects(request: Req, db: Db, viewer: Viewer) -> Response[bytes]:
    q: ProjectList = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_projects(db, viewer, q, page, runtime(request).settings)
    return _listing(request, viewer, listing, q, page)


@get("/users/{user_id:str}/projects", auth="optional", params=ProjectList)
async def list_user_projects(request: Req, db: Db, viewer: Viewer, user_id: FromPath[str]) -> Response[bytes]:
    q: ProjectList = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_user_projects(db, viewer, user_id, q, page, runtime(request).settings)
    return _listing(request, viewer, listing, q, page)


@get("/users/{user_id:str}/starred_projects", auth="optional", params=ProjectList)
async def list_starred_projects(
    request: Req, db: Db, viewer: Viewer, user_id: FromPath[str]
) -> Response[bytes]:
    q: ProjectList = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_starred_by(db, viewer, user_id, q, page, runtime(request).settings)
    return _listing(request, viewer, listing, q, page)


@post("/projects", params=ProjectCreate)
async def create_project(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: ProjectCreate = await params(request)
    rec = await in_thread(project_creation.create_project, db, actor, p, runtime(request).settings)
    return render(project_full(rec, base_url(request)), status=201)


@post("/projects/user/{user_id:str}", params=ProjectCreateForUser, requires=Action.ADMIN_USERS)
async def create_project_for_user(
    request: Req, db: Db, actor: Authenticated, user_id: FromPath[str]
) -> Response[bytes]:
    p: ProjectCreateForUser = await params(request)
    owner = user_service.get_user(db, actor, int_id(user_id))
    rec = await in_thread(
        project_creation.create_project, db, actor, p, runtime(request).settings, for_user=owner
    )
    return render(project_full(rec, base_url(request)), status=201)


@get("/projects/{id:str}", auth="optional", params=ProjectGet)
async def get_project(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: ProjectGet = await params(request)
    rec = service.get(
        db,
        viewer,
        id,
        settings=runtime(request).settings,
        statistics=q.statistics and viewer is not None,
        custom_attributes=q.with_custom_attributes,
    )
    base = base_url(request)
    if viewer is None:
        view = project_simple(rec, base)
        if rec.forked_from is not None:
            view["forked_from_project"] = project_simple(rec.forked_from, base)
        return render(view)
    return render(project_with_access_json(rec, base, license=q.license))


@put("/projects/{id:str}", params=ProjectUpdate)
async def update_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: ProjectUpdate = await params(request)
    rec = await in_thread(project_settings.update_project, db, actor, id, p, runtime(request).settings)
    return render(project_full(rec, base_url(request)))


@delete("/projects/{id:str}", params=ProjectDelete, status=202)
async def delete_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    q: ProjectDelete = await params(request)
    await in_thread(
        project_lifecycle.delete_project,
        db,
        actor,
        id,
        permanently=q.permanently_remove,
        full_path=q.full_path,
    )
    return render({"message": "202 Accepted"}, status=202)


@post("/projects/{id:str}/restore")
async def restore_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec = await in_thread(project_lifecycle.restore_project, db, actor, id, runtime(request).settings)
    return render(project_full(rec, base_url(request)), status=201)


@post("/projects/{id:str}/archive")
async def archive_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec = await in_thread(project_lifecycle.set_archived, db, actor, id, True, runtime(request).settings)
    return render(project_full(rec, base_url(request)), status=201)


@post("/projects/{id:str}/unarchive")
async def unarchive_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec = await in_thread(project_lifecycle.set_archived, db, actor, id, False, runtime(request).settings)
    return render(project_full(rec, base_url(request)), status=201)


@post("/projects/{id:str}/fork", params=ProjectFork)
async def fork_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: ProjectFork = await params(request)
    rec = await in_thread(project_forks.fork_project, db, actor, id, p, runtime(request).settings)
    return render(project_full(rec, base_url(request)), status=201)


@get("/projects/{id:str}/forks", auth="optional", params=ProjectList)
async def list_forks(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: ProjectList = await params(request)
    page = page_of(q, keyset_allowed=True, order_by=q.order_by)
    listing = service.list_forks(db, viewer, id, q, page, runtime(request).settings)
    return _listing(request, viewer, listing, q, page)


@post("/projects/{id:str}/star")
async def star_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec, changed = await in_thread(project_stars.star, db, actor, id, True, runtime(request).settings)
    if not changed:
        return not_modified()
    return render(project_full(rec, base_url(request)), status=201)


@post("/projects/{id:str}/unstar")
async def unstar_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    rec, changed = await in_thread(project_stars.star, db, actor, id, False, runtime(request).settings)
    if not changed:
        return not_modified()
    return render(project_full(rec, base_url(request)), status=201)


@get("/projects/{id:str}/starrers", auth="optional", params=StarrerList)
async def list_starrers(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: StarrerList = await params(request)
    page = page_of(q)
    result = project_stars.starrers(db, viewer, id, q.search, page)
    base = base_url(request)
    items = [starrer(star.created_at, user, base) for star, user in result.items]
    return paginated(request, items, page, result)


@get("/projects/{id:str}/languages", auth="optional")
async def languages(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    return render(await in_thread(language_service.of_project, db, viewer, id, runtime(request).settings))


@post("/projects/{id:str}/share", params=ProjectShare)
async def share_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: ProjectShare = await params(request)
    link = await in_thread(project_shares.share, db, actor, id, p.group_id, p.group_access, p.expires_at)
    return render(share_link(link), status=201)


@delete("/projects/{id:str}/share/{group_id:str}")
async def unshare_project(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str], group_id: FromPath[str]
) -> Response[bytes]:
    await in_thread(project_shares.unshare, db, actor, id, int_id(group_id))
    return no_content()


@post("/projects/{id:str}/uploads", params=UploadCreate)
async def upload_file(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: UploadCreate = await params(request)
    up = p.file
    done = await in_thread(uploads.upload, db, actor, id, up.filename, up.file, up.size(), _uploads(request))
    return render(upload_result(done.upload, done.project, done.namespace, base_url(request)), status=201)


# Served at the root: /-/project/:id/uploads/:secret/:name, and the project-relative URL
# /<full path>/uploads/:secret/:name that the ASGI wrapper routes here.
@get("/-/project/{id:str}/uploads/{secret:str}/{filename:str}", auth="optional")
async def uploaded_file_by_id(
    request: Req, db: Db, viewer: Viewer, id: FromPath[str], secret: FromPath[str], filename: FromPath[str]
) -> Response[Any]:
    return _serve_upload(request, db, viewer, id, secret, filename)


@get("/-/project-uploads/{project:str}/{secret:str}/{filename:str}", auth="optional")
async def uploaded_file_by_path(
    request: Req,
    db: Db,
    viewer: Viewer,
    project: FromPath[str],
    secret: FromPath[str],
    filename: FromPath[str],
) -> Response[Any]:
    return _serve_upload(request, db, viewer, unquote(project), secret, filename)


def _serve_upload(
    request: Req, db: Db, viewer: Viewer, ident: str, secret: str, filename: str
) -> Response[Any]:
    files = _uploads(request)
    return _user_content.stored(files, uploads.project_upload(db, viewer, ident, secret, filename, files))


@put("/projects/{id:str}/transfer", params=ProjectTransfer)
async def transfer_project(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: ProjectTransfer = await params(request)
    rec = await in_thread(project_transfers.transfer, db, actor, id, p.namespace, runtime(request).settings)
    return render(project_full(rec, base_url(request)))


@get("/projects/{id:str}/transfer_locations", params=TransferLocations)
async def transfer_locations(
    request: Req, db: Db, actor: Authenticated, id: FromPath[str]
) -> Response[bytes]:
    q: TransferLocations = await params(request)
    page = page_of(q)
    result = project_transfers.transfer_locations(db, actor, id, q.search, page)
    base = base_url(request)
    items = [public_group_details(row, base) for row in result.items]
    return paginated(request, items, page, result)


@get("/projects/{id:str}/groups", auth="optional", params=ProjectGroupList)
async def list_project_groups(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[bytes]:
    q: ProjectGroupList = await params(request)
    page = page_of(q)
    result = service.groups_of(db, viewer, id, q, page)
    base = base_url(request)
    items = [public_group_details(row, base) for row in result.items]
    return paginated(request, items, page, result)


@get("/projects/{id:str}/avatar", auth="optional")
async def project_avatar(request: Req, db: Db, viewer: Viewer, id: FromPath[str]) -> Response[Any]:
    files = _uploads(request)
    return avatar_download(files, avatars.project_avatar_download(db, viewer, id, files))


@post("/projects/{id:str}/housekeeping", params=Housekeeping)
async def housekeeping(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    p: Housekeeping = await params(request)
    await in_thread(housekeeping_service.run, db, actor, id, p.task, runtime(request).settings)
    return render(None, status=201)


@get("/projects/{id:str}/storage", requires=Action.ADMIN_PROJECTS)
async def project_storage(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[bytes]:
    return render(repository_storage(housekeeping_service.storage_of(db, actor, id)))


@get("/projects/{id:str}/snapshot", params=SnapshotGet, requires=Action.ADMIN_PROJECTS)
async def project_snapshot(request: Req, db: Db, actor: Authenticated, id: FromPath[str]) -> Response[Any]:
    q: SnapshotGet = await params(request)
    body = housekeeping_service.snapshot(db, actor, id, wiki=q.wiki, settings=runtime(request).settings)
    return _user_content.stream(body, SNAPSHOT_NAME, _user_content.ServedAs.download(SNAPSHOT_TYPE))


# The name and type a snapshot goes out with (GitLab's).
SNAPSHOT_NAME = "snapshot.tar"
SNAPSHOT_TYPE = "application/x-tar"


def avatar_download(files: storage.Storage, found: uploads.StoredFile) -> Response[Any]:
    """An avatar as GET /projects/:id/avatar and /groups/:id/avatar send it: an attachment
    named as the file, of the image's type."""
    served = _user_content.ServedAs.download(_user_content.served_as(found.name).media_type)
    return _user_content.stream(files.iter_bytes(found.key), found.name, served)
