"""Files served from the uploads storage (avatars are public, as GitLab serves them);
`serve_stored` sends any stored upload as user content."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.params import FromPath
from litestar.response import Stream

from kiln import storage
from kiln.api import _user_content
from kiln.api._deps import runtime
from kiln.api._routes import get
from kiln.services import uploads as service
from kiln.services.uploads import StoredFile
from kiln.storage import Storage

Req = Request[Any, Any, Any]


@get("/uploads/-/system/user/avatar/{user_id:int}/{filename:str}", auth="none")
async def user_avatar(request: Req, user_id: FromPath[int], filename: FromPath[str]) -> Response[Any]:
    files = storage.uploads(runtime(request).settings)
    return serve_stored(files, service.user_avatar(files, user_id, filename))


def serve_stored(files: Storage, stored: StoredFile) -> Stream:
    """An uploaded file's bytes, unchanged, as user content: an uploaded SVG or HTML page is
    an attachment that never runs on kiln's origin; images, audio and video show inline."""
    extra = {} if stored.size is None else {"Content-Length": str(stored.size)}
    served = _user_content.served_as(stored.name)
    return _user_content.stream(files.iter_bytes(stored.key), stored.name, served, extra)
