"""CI/CD variables (GitLab's Project-level, Group-level and Instance-level CI/CD variables
APIs): the same routes under /projects/:id, /groups/:id and /admin/ci."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.entities.ci_variables import variable
from kiln.policy import Action
from kiln.schemas.ci_variables import (
    InstanceVariableCreate,
    InstanceVariableGet,
    InstanceVariableList,
    InstanceVariableUpdate,
    VariableCreate,
    VariableFilter,
    VariableGet,
    VariableList,
    VariableUpdate,
)
from kiln.services import ci_variables as service
from kiln.services.ci_variables import Level

Req = Request[Any, Any, Any]


def _named(q: Any) -> tuple[str | None, str, VariableFilter | None]:
    """The owner (None for the instance), key and `filter` a read or removal names."""
    return getattr(q, "id", None), q.key, getattr(q, "filter", None)


def _routes(level: Level, singular: str) -> list[HTTPRouteHandler]:
    scoped = level != "instance"
    base = f"/{level}/{{id:str}}/variables" if scoped else "/admin/ci/variables"
    # The instance's are the administrators' alone: refused before any parameter is read.
    admin = None if scoped else Action.ADMIN_CI_VARIABLES
    listing, one, creating, updating = (
        (VariableList, VariableGet, VariableCreate, VariableUpdate)
        if scoped
        else (InstanceVariableList, InstanceVariableGet, InstanceVariableCreate, InstanceVariableUpdate)
    )

    async def list_variables(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q = await params(request)
        page = page_of(q)
        found = service.list_variables(
            db, actor, level, getattr(q, "id", None), page, runtime(request).settings
        )
        return paginated(
            request, [variable(v.row, v.value, scoped=scoped) for v in found.page.items], page, found.page
        )

    async def get_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q = await params(request)
        shown = service.get_variable(db, actor, level, *_named(q), runtime(request).settings)
        return render(variable(shown.row, shown.value, scoped=scoped))

    async def add_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p = await params(request)
        shown = await in_thread(service.create_variable, db, actor, level, p, runtime(request).settings)
        return render(variable(shown.row, shown.value, scoped=scoped), status=201)

    async def update_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        p = await params(request)
        shown = await in_thread(service.update_variable, db, actor, level, p, runtime(request).settings)
        return render(variable(shown.row, shown.value, scoped=scoped))

    async def remove_variable(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
        q = await params(request)
        await in_thread(service.delete_variable, db, actor, level, *_named(q))
        return no_content()

    # Distinct names keep the OpenAPI operation ids unique.
    for fn, doc in (
        (list_variables, f"CI/CD variables of {singular}."),
        (get_variable, f"A CI/CD variable of {singular}."),
        (add_variable, f"Add a CI/CD variable to {singular}."),
        (update_variable, f"Change a CI/CD variable of {singular}."),
        (remove_variable, f"Remove a CI/CD variable from {singular}."),
    ):
        fn.__name__ = fn.__qualname__ = f"{fn.__name__}_of_{singular.rsplit(maxsplit=1)[-1]}"
        fn.__doc__ = doc
    key = f"{base}/{{key:str}}"
    return [
        get(base, params=listing, requires=admin)(list_variables),
        get(key, params=one, requires=admin)(get_variable),
        post(base, params=creating, requires=admin)(add_variable),
        put(key, params=updating, requires=admin)(update_variable),
        delete(key, params=one, requires=admin)(remove_variable),
    ]


ROUTES: list[HTTPRouteHandler] = [
    *_routes("projects", "a project"),
    *_routes("groups", "a group"),
    *_routes("instance", "the instance"),
]
