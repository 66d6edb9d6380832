"""Files served from the uploads storage: avatars are public, as GitLab serves them."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.params import FromPath

from kiln import storage
from kiln.api import _user_content
from kiln.api._deps import runtime
from kiln.api._routes import get
from kiln.services import uploads as service

Req = Request[Any, Any, Any]


@get("/uploads/-/system/user/avatar/{user_id:int}/{filename:str}", auth="none")
async def user_avatar(request: Req, user_id: FromPath[int], filename: FromPath[str]) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return _user_content.stored(files, service.user_avatar(files, user_id, filename))
