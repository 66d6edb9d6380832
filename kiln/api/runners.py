"""Runners (GitLab's Runners API and the runner-credential calls of the runner protocol).

A runner registers with a registration token (`POST /runners`: the instance's, a project's or
a group's) or is made by a signed-in user (`POST /user/runners`); either way it gets an
authentication token, which it later sends as `token` (or the RUNNER-TOKEN header) to verify
itself, reset it or remove itself. Users list, read, change and remove the runners they
manage, enable project runners on their other projects and reset registration tokens."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln.api._deps import Authenticated, Db, in_thread, runtime
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.auth.tokens import API, CREATE_RUNNER
from kiln.entities.runners import registered, runner, runner_detail, runner_job, token_result
from kiln.errors import ParamError
from kiln.policy import Action
from kiln.schemas.runners import (
    GroupRunnerList,
    ManagerDelete,
    OwnedRunnerList,
    ProjectRunnerDisable,
    ProjectRunnerEnable,
    ProjectRunnerList,
    Registration,
    RunnerGet,
    RunnerJobList,
    RunnerList,
    RunnerToken,
    RunnerUpdate,
    SubjectOnly,
    UserRunnerCreate,
)
from kiln.services import runners as service
from kiln.services.runners import RunnerPage, RunnerView

Req = Request[Any, Any, Any]


def _ip(request: Req) -> str | None:
    return request.client.host if request.client else None


def _runner_token(request: Req, p: RunnerToken) -> str:
    """The authentication token: the `token` parameter, else the RUNNER-TOKEN header."""
    token = p.token or request.headers.get("runner-token")
    if not token:
        raise ParamError("token is missing")
    return token


def _listed(request: Req, found: RunnerPage, page: Any) -> Response[bytes]:
    base = runtime(request).settings.external_url
    items = [
        runner(row, found.online_after, creator=found.creators.get(row.creator_id), base=base)
        for row in found.page.items
    ]
    return paginated(request, items, page, found.page)


def _detail(request: Req, view: RunnerView) -> dict[str, Any]:
    return runner_detail(
        view.row,
        view.online_after,
        tags=view.tags,
        projects=view.projects,
        groups=view.groups,
        base=runtime(request).settings.external_url,
        with_note=view.manages,
        creator=view.creator,
    )


# ----------------------------------------------------------------------------- runner credentials


@post("/runners", auth="none", params=Registration)
async def register_runner(request: Req, db: Db) -> Response[bytes]:
    """Register a runner with a registration token."""
    p: Registration = await params(request)
    done = await in_thread(service.register, db, p, runtime(request).settings, _ip(request))
    return render(registered(done.id, done.token, done.token_expires_at), status=201)


@post("/runners/verify", auth="none", params=RunnerToken, status=200)
async def verify_runner(request: Req, db: Db) -> Response[bytes]:
    """Check a runner's authentication token."""
    p: RunnerToken = await params(request)
    done = await in_thread(service.verify, db, _runner_token(request, p))
    return render(registered(done.id, done.token, done.token_expires_at))


@delete("/runners", auth="none", params=RunnerToken)
async def unregister_runner(request: Req, db: Db) -> Response[bytes]:
    """A runner removes itself with its authentication token."""
    p: RunnerToken = await params(request)
    await in_thread(service.unregister, db, _runner_token(request, p))
    return no_content()


@delete("/runners/managers", auth="none", params=ManagerDelete)
async def unregister_runner_manager(request: Req, db: Db) -> Response[bytes]:
    """One machine of a runner leaves."""
    p: ManagerDelete = await params(request)
    await in_thread(service.unregister_manager, db, _runner_token(request, p))
    return no_content()


@post("/runners/reset_authentication_token", auth="none", params=RunnerToken)
async def reset_own_runner_token(request: Req, db: Db) -> Response[bytes]:
    """A runner trades its authentication token for a new one."""
    p: RunnerToken = await params(request)
    done = await in_thread(service.reset_own_token, db, _runner_token(request, p))
    return render(token_result(done.token, done.token_expires_at), status=201)


@post("/user/runners", params=UserRunnerCreate, scopes=(API, CREATE_RUNNER))
async def create_user_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Make a runner for the instance, a group or a project; its token is shown this once."""
    p: UserRunnerCreate = await params(request)
    done = await in_thread(service.create_for_user, db, actor, p)
    return render(registered(done.id, done.token, done.token_expires_at), status=201)


# ----------------------------------------------------------------------------- management


@get("/runners", params=OwnedRunnerList)
async def list_runners(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The runners the caller manages."""
    q: OwnedRunnerList = await params(request)
    page = page_of(q)
    return _listed(request, service.list_owned(db, actor, q, page), page)


@get("/runners/all", params=RunnerList, requires=Action.ADMIN_INSTANCE_RUNNERS)
async def list_all_runners(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Every runner (administrators)."""
    q: RunnerList = await params(request)
    page = page_of(q)
    return _listed(request, service.list_all(db, actor, q, page), page)


@get("/runners/{id:str}", params=RunnerGet)
async def get_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A runner's detail."""
    q: RunnerGet = await params(request)
    return render(_detail(request, service.get_runner(db, actor, q.id)))


@put("/runners/{id:str}", params=RunnerUpdate)
async def update_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a runner; `tag_list` is its whole new set of tags."""
    p: RunnerUpdate = await params(request)
    return render(_detail(request, await in_thread(service.update_runner, db, actor, p)))


@delete("/runners/{id:str}", params=RunnerGet)
async def delete_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Remove a runner."""
    q: RunnerGet = await params(request)
    await in_thread(service.delete_runner, db, actor, q.id)
    return no_content()


@post("/runners/{id:str}/reset_authentication_token", params=RunnerGet)
async def reset_runner_token(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A new authentication token for a runner the caller manages."""
    q: RunnerGet = await params(request)
    done = await in_thread(service.reset_authentication_token, db, actor, q.id)
    return render(token_result(done.token, done.token_expires_at), status=201)


@get("/runners/{id:str}/jobs", params=RunnerJobList)
async def list_runner_jobs(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The jobs a runner ran."""
    q: RunnerJobList = await params(request)
    page = page_of(q)
    settings = runtime(request).settings
    found = service.list_jobs(db, actor, q, page, settings)
    items = [
        runner_job(
            job,
            found.at,
            user=found.users.get(job.user_id) if job.user_id is not None else None,
            commit=found.commits.get((job.project_id, job.sha)),
            ip_address=found.ip_address,
            base=settings.external_url,
        )
        for job in found.page.items
    ]
    return paginated(request, items, page, found.page)


@get("/projects/{id:str}/runners", params=ProjectRunnerList)
async def list_project_runners(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The runners a project may use."""
    q: ProjectRunnerList = await params(request)
    page = page_of(q)
    return _listed(request, service.list_for_project(db, actor, q, page), page)


@post("/projects/{id:str}/runners", params=ProjectRunnerEnable)
async def enable_project_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Let a project runner serve this project too."""
    p: ProjectRunnerEnable = await params(request)
    done = await in_thread(service.enable, db, actor, p.id, p.runner_id)
    return render(runner(done.row, done.online_after), status=201)


@delete("/projects/{id:str}/runners/{runner_id:str}", params=ProjectRunnerDisable)
async def disable_project_runner(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Stop a runner serving this project."""
    p: ProjectRunnerDisable = await params(request)
    await in_thread(service.disable, db, actor, p.id, p.runner_id)
    return no_content()


@get("/groups/{id:str}/runners", params=GroupRunnerList)
async def list_group_runners(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The runners of a group and its ancestors, and the instance's."""
    q: GroupRunnerList = await params(request)
    page = page_of(q)
    return _listed(request, service.list_for_group(db, actor, q, page), page)


# ----------------------------------------------------------------------------- registration tokens


@post("/runners/reset_registration_token", requires=Action.ADMIN_INSTANCE_RUNNERS)
async def reset_instance_registration_token(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A new registration token for instance runners (administrators)."""
    done = await in_thread(service.reset_instance_registration_token, db, actor, runtime(request).settings)
    return render(token_result(done.token, done.token_expires_at), status=201)


@post("/projects/{id:str}/runners/reset_registration_token", params=SubjectOnly)
async def reset_project_registration_token(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A new runner registration token for a project."""
    p: SubjectOnly = await params(request)
    done = await in_thread(
        service.reset_project_registration_token, db, actor, p.id, runtime(request).settings
    )
    return render(token_result(done.token, done.token_expires_at), status=201)


@post("/groups/{id:str}/runners/reset_registration_token", params=SubjectOnly)
async def reset_group_registration_token(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A new runner registration token for a group."""
    p: SubjectOnly = await params(request)
    done = await in_thread(service.reset_group_registration_token, db, actor, p.id, runtime(request).settings)
    return render(token_result(done.token, done.token_expires_at), status=201)


ROUTES: list[HTTPRouteHandler] = [
    register_runner,
    verify_runner,
    unregister_runner,
    unregister_runner_manager,
    reset_own_runner_token,
    create_user_runner,
    list_runners,
    list_all_runners,
    get_runner,
    update_runner,
    delete_runner,
    reset_runner_token,
    list_runner_jobs,
    list_project_runners,
    enable_project_runner,
    disable_project_runner,
    list_group_runners,
    reset_instance_registration_token,
    reset_project_registration_token,
    reset_group_registration_token,
]
