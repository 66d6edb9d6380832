"""Files served from the uploads storage: user avatars are public, as GitLab serves them;
project and group avatars go to whoever may see their project or group."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.params import FromPath

from kiln import storage
from kiln.api import _user_content
from kiln.api._deps import Db, Viewer, runtime
from kiln.api._routes import get
from kiln.services import avatars
from kiln.services import uploads as service

Req = Request[Any, Any, Any]


@get("/uploads/-/system/user/avatar/{user_id:int}/{filename:str}", auth="none")
async def user_avatar(request: Req, user_id: FromPath[int], filename: FromPath[str]) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return _user_content.stored(files, service.user_avatar(files, user_id, filename))


@get("/uploads/-/system/project/avatar/{project_id:int}/{filename:str}", auth="optional")
async def project_avatar(
    request: Req, db: Db, viewer: Viewer, project_id: FromPath[int], filename: FromPath[str]
) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return _user_content.stored(files, avatars.project_avatar(db, viewer, project_id, filename, files))


@get("/uploads/-/system/group/avatar/{group_id:int}/{filename:str}", auth="optional")
async def group_avatar(
    request: Req, db: Db, viewer: Viewer, group_id: FromPath[int], filename: FromPath[str]
) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return _user_content.stored(files, avatars.group_avatar(db, viewer, group_id, filename, files))
