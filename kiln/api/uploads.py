"""Files served from storage: avatars are public, as GitLab serves them."""

from __future__ import annotations

import mimetypes
from typing import Any

from litestar import Request, Response
from litestar.params import FromPath
from litestar.response import Stream

from kiln import storage
from kiln.api._deps import runtime
from kiln.api._routes import get
from kiln.errors import NotFound

Req = Request[Any, Any, Any]


@get("/uploads/-/system/user/avatar/{user_id:int}/{filename:str}", auth="none")
async def user_avatar(request: Req, user_id: FromPath[int], filename: FromPath[str]) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    key = f"-/system/user/avatar/{user_id}/{filename}"
    if "/" in filename or filename.startswith(".") or not files.exists(key):
        raise NotFound()
    media = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    return Stream(files.iter_bytes(key), media_type=media, headers={"X-Content-Type-Options": "nosniff"})
