"""Feature flags (GitLab's Features API), for administrators only."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post
from kiln.entities.features import definition, feature
from kiln.policy import Action
from kiln.schemas.features import FeatureName, FeatureSet
from kiln.services import features as service

Req = Request[Any, Any, Any]


@get("/features", requires=Action.ADMIN_FEATURES)
async def list_features(db: Db, actor: Authenticated) -> Response[bytes]:
    return render([feature(f) for f in service.list_flags(db)])


@get("/features/definitions", requires=Action.ADMIN_FEATURES)
async def list_feature_definitions(actor: Authenticated) -> Response[bytes]:
    return render([definition(d) for d in service.definitions()])


@post("/features/{name:str}", params=FeatureSet, requires=Action.ADMIN_FEATURES)
async def set_feature(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: FeatureSet = await params(request)
    return render(feature(await in_thread(service.set_flag, db, p)), status=201)


@delete("/features/{name:str}", params=FeatureName, requires=Action.ADMIN_FEATURES)
async def delete_feature(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    p: FeatureName = await params(request)
    await in_thread(service.remove_flag, db, p.name)
    return no_content()


ROUTES: list[HTTPRouteHandler] = [list_features, list_feature_definitions, set_feature, delete_feature]
