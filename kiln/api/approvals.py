"""Merge request approvals (GitLab's Merge request approvals API): a project's approval
configuration and deprecated approvers; a merge request's approval status, approval state,
approve and unapprove, and its deprecated approvals count and approvers."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln import policy
from kiln.api._deps import Authenticated, Db, base_url, in_thread, runtime
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import get, post, put
from kiln.auth.actor import Actor
from kiln.entities import approvals as views
from kiln.schemas.approvals import (
    ApprovalConfigUpdate,
    Approve,
    ApproversUpdate,
    MergeRequestApprovals,
    MergeRequestApprovalsUpdate,
    MergeRequestApprovers,
    ProjectApprovals,
)
from kiln.services import approvals as service
from kiln.services.approvals import ApprovalState, WrappedRule

Req = Request[Any, Any, Any]
PROJECT = "/projects/{id:str}"
MR = "/projects/{id:str}/merge_requests/{merge_request_iid:str}"


def _configuration(request: Req, found: tuple[Any, WrappedRule | None], status: int = 200) -> Response[bytes]:
    settings, default = found
    return render(views.configuration(settings, default, base_url(request)), status=status)


def _status(request: Req, state: ApprovalState, status: int = 200) -> Response[bytes]:
    return render(views.status(state, base_url(request)), status=status)


@get(f"{PROJECT}/approvals", params=ProjectApprovals)
async def get_approval_configuration(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A project's approval settings."""
    p: ProjectApprovals = await params(request)
    return _configuration(request, service.configuration(db, actor, p.id))


@post(f"{PROJECT}/approvals", params=ApprovalConfigUpdate, status=201)
async def update_approval_configuration(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a project's approval settings (Maintainers)."""
    p: ApprovalConfigUpdate = await params(request)
    return _configuration(request, await in_thread(service.update_configuration, db, actor, p.id, p), 201)


@put(f"{PROJECT}/approvers", params=ApproversUpdate)
async def set_project_approvers(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The project's approvers and approver groups (deprecated: a regular rule)."""
    p: ApproversUpdate = await params(request)
    return _configuration(request, await in_thread(service.set_project_approvers, db, actor, p.id, p))


@get(f"{MR}/approvals", params=MergeRequestApprovals)
async def get_approvals(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A merge request's approval status."""
    p: MergeRequestApprovals = await params(request)
    return _status(request, service.status(db, actor, p.id, p.merge_request_iid))


@post(f"{MR}/approvals", params=MergeRequestApprovalsUpdate, status=201)
async def set_approvals_required(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """How many approvals the merge request needs (deprecated)."""
    p: MergeRequestApprovalsUpdate = await params(request)
    state = await in_thread(service.set_approvals_required, db, actor, p.id, p.merge_request_iid, p)
    return _status(request, state, 201)


@put(f"{MR}/approvers", params=MergeRequestApprovers)
async def set_merge_request_approvers(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The merge request's approvers and approver groups (deprecated: its own regular rule)."""
    p: MergeRequestApprovers = await params(request)
    state = await in_thread(service.set_merge_request_approvers, db, actor, p.id, p.merge_request_iid, p)
    return _status(request, state)


@get(f"{MR}/approval_state", params=MergeRequestApprovals)
async def get_approval_state(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Whether the merge request's rules are its own, and each rule with its approvals."""
    p: MergeRequestApprovals = await params(request)
    state = service.status(db, actor, p.id, p.merge_request_iid)
    return render(_state_view(request, actor, state))


def _state_view(request: Req, actor: Actor, state: ApprovalState) -> dict[str, Any]:
    return views.approval_state(
        state,
        base_url(request),
        admin=policy.is_admin(actor),
        visibilities=policy.open_visibilities(actor),
    )


@post(f"{MR}/approve", params=Approve, status=201)
async def approve(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Approve the merge request (at `sha`, with the caller's password where asked)."""
    p: Approve = await params(request)
    settings = runtime(request).settings
    state = await in_thread(
        service.approve, db, settings, actor, p.id, p.merge_request_iid, p.sha, p.approval_password
    )
    return _status(request, state, 201)


@post(f"{MR}/unapprove", params=MergeRequestApprovals, status=201)
async def unapprove(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Take back the caller's approval."""
    p: MergeRequestApprovals = await params(request)
    state = await in_thread(service.unapprove, db, actor, p.id, p.merge_request_iid)
    return _status(request, state, 201)


ROUTES: list[HTTPRouteHandler] = [
    get_approval_configuration,
    update_approval_configuration,
    set_project_approvers,
    get_approvals,
    set_approvals_required,
    set_merge_request_approvers,
    get_approval_state,
    approve,
    unapprove,
]
