"""The OpenAPI document, built from the route declarations and their Params models, so it
lists every endpoint with the parameters it really validates, spelled as kiln reads them:
a client or a fuzzer that follows it reaches the handlers, not only the parameter checks."""

from __future__ import annotations

import re
from typing import Any

from litestar import Litestar

from kiln import COMPATIBLE_GITLAB_VERSION, __version__
from kiln.schemas._types import Params

_PATH_PARAM = re.compile(r"\{(\w+):(\w+)\}")
_TYPES = {"int": "integer", "str": "string", "path": "string"}
_SECURITY = [{"private_token": []}, {"private_token_query": []}, {"bearer": []}, {"session": []}]
# Any authenticated route acts as another user for an administrator (GitLab's sudo); the
# query spelling is read too, but is one credential parameter among the security schemes.
_SUDO = {
    "name": "Sudo",
    "in": "header",
    "required": False,
    "description": "An administrator acts as this user (username or id).",
    "schema": {"type": "string"},
}


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
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {
                "private_token": {"type": "apiKey", "in": "header", "name": "PRIVATE-TOKEN"},
                "private_token_query": {"type": "apiKey", "in": "query", "name": "private_token"},
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
        if schemas.setdefault(name, sub) != sub:
            # Two models named alike would otherwise share one schema, and one would be wrong.
            raise ValueError(f"two request schemas are named {name}")
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    names = {n for n, _ in path_params}
    # A path parameter the model validates has the model's schema (a member's user_id is an
    # integer); the others are text, whatever the router's converter.
    parameters: list[dict[str, Any]] = [
        {
            "name": n,
            "in": "path",
            "required": True,
            "schema": _bare(props.get(n)) or {"type": _TYPES.get(t, "string")},
        }
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
        op["security"] = _SECURITY
    body_props = {k: v for k, v in props.items() if k not in names}
    if method in ("GET", "DELETE", "HEAD"):
        parameters += [_query(k, v, k in required) for k, v in body_props.items()]
    elif body_props:
        op["requestBody"] = _body(body_props, sorted(required & set(body_props)))
    if opt["auth"] != "none":
        parameters.append(_SUDO)
    op["parameters"] = parameters
    return op


def _bare(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A field's schema without its title and default, which say nothing of a path segment."""
    if schema is None:
        return None
    return {k: v for k, v in schema.items() if k not in ("title", "default")}


def _query(name: str, schema: dict[str, Any], required: bool) -> dict[str, Any]:
    """A list is read comma-separated (`user_ids=1,2`, as well as Rack's `user_ids[]=1`), a hash
    with Rack's brackets (`custom_attributes[key]=value`, OpenAPI's deepObject)."""
    param: dict[str, Any] = {"name": name, "in": "query", "required": required, "schema": schema}
    kind = _kind(schema)
    if kind == "array":
        param |= {"style": "form", "explode": False}
    elif kind == "object":
        param |= {"style": "deepObject", "explode": True}
    return param


def _body(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """JSON, a form or multipart alike, as Grape reads them (a file part only comes in
    multipart). In a form, lists and hashes take Rack's brackets (deepObject)."""
    body_schema = {"type": "object", "properties": props, "required": required}
    brackets = {k: {"style": "deepObject", "explode": True} for k, v in props.items() if _kind(v)}
    form: dict[str, Any] = {"schema": body_schema}
    if brackets:
        form["encoding"] = brackets
    return {
        "required": bool(required),
        "content": {
            "application/json": {"schema": body_schema},
            "application/x-www-form-urlencoded": form,
            "multipart/form-data": form,
        },
    }


def _kind(schema: dict[str, Any]) -> str | None:
    """Whether a value of the schema (null aside) is an array or an object; a reference
    always names a model, an object."""
    for option in schema.get("anyOf", [schema]):
        if option.get("type") == "array":
            return "array"
        if option.get("type") == "object" or "$ref" in option:
            return "object"
    return None
