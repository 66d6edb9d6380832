"""The OpenAPI document, built from the route declarations and their Params models, so it
lists every endpoint with the parameters it really validates."""

from __future__ import annotations

import re
from typing import Any

from litestar import Litestar

from kiln import COMPATIBLE_GITLAB_VERSION, __version__
from kiln.schemas._types import Params

_PATH_PARAM = re.compile(r"\{(\w+):(\w+)\}")
_TYPES = {"int": "integer", "str": "string", "path": "string"}


def build(app: Litestar) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    for route in app.routes:
        for handler in getattr(route, "route_handlers", []):
            opt = handler.opt
            if "params" not in opt:
                continue
            for method in sorted(handler.http_methods):
                path, path_params = _path(route.path)
                paths.setdefault(path, {})[method.lower()] = _operation(
                    handler, method, path_params, opt, schemas
                )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kiln API",
            "version": __version__,
            "description": f"GitLab REST API v4 compatible (reports {COMPATIBLE_GITLAB_VERSION}).",
        },
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "private_token": {"type": "apiKey", "in": "header", "name": "PRIVATE-TOKEN"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "_service_session"},
            },
        },
    }


def _path(litestar_path: str) -> tuple[str, list[tuple[str, str]]]:
    found = _PATH_PARAM.findall(litestar_path)
    return _PATH_PARAM.sub(r"{\1}", litestar_path), found


def _operation(
    handler: Any,
    method: str,
    path_params: list[tuple[str, str]],
    opt: dict[str, Any],
    schemas: dict[str, Any],
) -> dict[str, Any]:
    model: type[Params] = opt["params"]
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, sub in schema.pop("$defs", {}).items():
        schemas[name] = sub
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    names = {n for n, _ in path_params}
    parameters: list[dict[str, Any]] = [
        {"name": n, "in": "path", "required": True, "schema": {"type": _TYPES.get(t, "string")}}
        for n, t in path_params
    ]
    op: dict[str, Any] = {
        "operationId": f"{method.lower()}_{handler.handler_name}",
        "summary": opt.get("summary") or (handler.fn.__doc__ or handler.handler_name).strip().split("\n")[0],
        "x-auth": opt["auth"],
        "x-scopes": list(opt["scopes"]),
        "responses": {"default": {"description": "GitLab-compatible JSON"}},
    }
    if opt["auth"] != "none":
        op["security"] = [{"private_token": []}, {"bearer": []}, {"session": []}]
    body_props = {k: v for k, v in props.items() if k not in names}
    if method in ("GET", "DELETE", "HEAD"):
        parameters += [
            {"name": k, "in": "query", "required": k in required, "schema": v} for k, v in body_props.items()
        ]
    elif body_props:
        body_schema = {
            "type": "object",
            "properties": body_props,
            "required": sorted(required & set(body_props)),
        }
        op["requestBody"] = {
            "content": {
                "application/json": {"schema": body_schema},
                "application/x-www-form-urlencoded": {"schema": body_schema},
                "multipart/form-data": {"schema": body_schema},
            }
        }
    op["parameters"] = parameters
    return op
