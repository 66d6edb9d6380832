"""Responses as orjson bytes: no response-model validation on the way out."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

import orjson
from litestar import Response

JSON = "application/json"


def render(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response[bytes]:
    return Response(
        content=orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS),
        status_code=status,
        media_type=JSON,
        headers=headers,
    )


def content_disposition(kind: Literal["inline", "attachment"], name: str) -> str:
    """A file name in a Content-Disposition header (RFC 6266): `filename` holds a printable
    ASCII fallback (quotes, backslashes, control and non-ASCII characters become `_`, so no
    name can end the header or add one), `filename*` the exact name, percent-encoded UTF-8."""
    fallback = "".join(c if " " <= c < "\x7f" and c not in '"\\' else "_" for c in name)
    exact = quote(name.encode("utf-8", "replace"), safe="")
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{exact}"


def no_content() -> Response[bytes]:
    return Response(content=b"", status_code=204, media_type=JSON)


def not_modified() -> Response[bytes]:
    """304 with no body: GitLab's answer to a subscription, star or to-do that changes nothing."""
    return Response(content=b"", status_code=304)
