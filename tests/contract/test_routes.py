"""Every route's declaration (api/_routes) is complete, published in the OpenAPI document,
and kept: what says it needs credentials answers 401 without them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from litestar.handlers import HTTPRouteHandler
from litestar.routes import HTTPRoute

from kiln.api import API_PREFIX
from kiln.schemas._types import Params

_PARAM = re.compile(r"\{(\w+):(\w+)\}")
AUTH_KINDS = {"required", "optional", "none"}


def handlers(app: Any) -> list[tuple[str, str, HTTPRouteHandler]]:
    """(method, Litestar path, handler) for every route kiln declared (not Litestar's OPTIONS)."""
    found = []
    for route in app.app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for handler in route.route_handlers:
            for method in handler.http_methods:
                if method != "OPTIONS" or "auth" in handler.opt:
                    found.append((method, route.path, handler))
    return sorted(found, key=lambda t: (t[1], t[0]))


def concrete(path: str) -> str:
    return _PARAM.sub("1", path)


def test_every_route_declares_auth_params_and_scopes(app):
    routes = handlers(app)
    assert len(routes) > 20
    for method, path, handler in routes:
        opt = handler.opt
        assert opt.get("auth") in AUTH_KINDS, (method, path)
        assert issubclass(opt.get("params"), Params), (method, path)
        assert isinstance(opt.get("scopes"), tuple), (method, path)
        assert opt["scopes"], (method, path)


def test_every_non_get_route_requires_auth_unless_none(app):
    for method, path, handler in handlers(app):
        if method != "GET":
            assert handler.opt["auth"] in ("required", "none"), (method, path)


def test_every_route_is_in_openapi_with_its_parameters(app, api):
    doc = api().get("/openapi.json").json()
    for method, path, handler in handlers(app):
        model: type[Params] = handler.opt["params"]
        path_names = [name for name, _ in _PARAM.findall(path)]
        op = doc["paths"].get(_PARAM.sub(r"{\1}", path), {}).get(method.lower())
        assert op is not None, (method, path)
        assert op["x-auth"] == handler.opt["auth"]
        params = op["parameters"]
        assert [p["name"] for p in params if p["in"] == "path"] == path_names, (method, path)
        fields = set(model.model_fields) - set(path_names)
        if method in ("GET", "DELETE"):
            assert {p["name"] for p in params if p["in"] == "query"} == fields, (method, path)
        elif fields:
            for content in op["requestBody"]["content"].values():
                assert set(content["schema"]["properties"]) == fields, (method, path)
        else:
            assert "requestBody" not in op, (method, path)
        required = {n for n, f in model.model_fields.items() if f.is_required()}
        if method not in ("GET", "DELETE") and fields:
            assert set(
                op["requestBody"]["content"]["application/json"]["schema"]["required"]
            ) == required - set(path_names), (method, path)


def test_every_api_route_is_under_the_prefix_or_declared_root(app):
    # "/" is the web root, "/users" sign-up (GitLab's web registration), "/-/users/" the terms;
    # "/{full:path}" is git over HTTP (<namespace>/<project>.git/...): project paths have slashes.
    roots = {"/", "/users", "/-/health", "/-/liveness", "/-/readiness", "/-/metrics", "/{full:path}"}
    for _, path, _ in handlers(app):
        assert (
            path.startswith(API_PREFIX + "/")
            or path.startswith(
                ("/oauth/", "/users/", "/-/users/", "/uploads/", "/-/project/", "/-/project-uploads/")
            )
            or path in roots
        )


@pytest.mark.parametrize("kind", ["non-GET", "GET"])
def test_required_routes_answer_401_anonymously(app, api, kind):
    anonymous = api()
    checked = 0
    for method, path, handler in handlers(app):
        if handler.opt["auth"] != "required" or (method == "GET") != (kind == "GET"):
            continue
        r = anonymous.request(method, concrete(path), json={})
        assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"}), (method, path, r.text)
        checked += 1
    assert checked > 3
