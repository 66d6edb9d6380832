"""Responses as orjson bytes: no response-model validation on the way out."""

from __future__ import annotations

from typing import Any

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


def no_content() -> Response[bytes]:
    return Response(content=b"", status_code=204, media_type=JSON)
