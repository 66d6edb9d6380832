"""Approval rules (GitLab's project and merge request approval rules APIs): a project's rules
and a merge request's own, listed, read, created, changed and deleted."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response
from litestar.handlers import HTTPRouteHandler

from kiln import policy
from kiln.api._deps import Authenticated, Db, base_url, in_thread
from kiln.api._pagination import page_of, paginated
from kiln.api._params import params
from kiln.api._render import no_content, render
from kiln.api._routes import delete, get, post, put
from kiln.auth.actor import Actor
from kiln.entities.approval_rules import rule_view
from kiln.schemas.approval_rules import (
    MergeRequestRule,
    MergeRequestRuleCreate,
    MergeRequestRules,
    MergeRequestRuleUpdate,
    ProjectRule,
    ProjectRuleCreate,
    ProjectRules,
    ProjectRuleUpdate,
)
from kiln.services import approval_rules as service
from kiln.services.approval_rules import RuleView

Req = Request[Any, Any, Any]
PROJECT_RULES = "/projects/{id:str}/approval_rules"
PROJECT_RULE = f"{PROJECT_RULES}/{{approval_rule_id:str}}"
MR_RULES = "/projects/{id:str}/merge_requests/{merge_request_iid:str}/approval_rules"
MR_RULE = f"{MR_RULES}/{{approval_rule_id:str}}"


def _view(request: Req, actor: Actor, view: RuleView) -> dict[str, Any]:
    return rule_view(
        view.wrapped,
        base_url(request),
        merge_request=view.merge_request,
        admin=policy.is_admin(actor),
        visibilities=policy.open_visibilities(actor),
    )


@get(PROJECT_RULES, params=ProjectRules)
async def list_project_rules(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """A project's approval rules."""
    q: ProjectRules = await params(request)
    page = page_of(q)
    found = service.list_project_rules(db, actor, q.id, page)
    return paginated(request, [_view(request, actor, v) for v in found.items], page, found)


@get(PROJECT_RULE, params=ProjectRule)
async def get_project_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """One approval rule of a project."""
    p: ProjectRule = await params(request)
    return render(_view(request, actor, service.get_project_rule(db, actor, p.id, p.approval_rule_id)))


@post(PROJECT_RULES, params=ProjectRuleCreate, status=201)
async def create_project_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add an approval rule to a project (Maintainers)."""
    p: ProjectRuleCreate = await params(request)
    view = await in_thread(service.create_project_rule, db, actor, p.id, p)
    return render(_view(request, actor, view), status=201)


@put(PROJECT_RULE, params=ProjectRuleUpdate)
async def update_project_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a project's approval rule; users and groups not listed are removed."""
    p: ProjectRuleUpdate = await params(request)
    view = await in_thread(service.update_project_rule, db, actor, p.id, p)
    return render(_view(request, actor, view))


@delete(PROJECT_RULE, params=ProjectRule, status=204)
async def delete_project_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Remove a project's approval rule."""
    p: ProjectRule = await params(request)
    await in_thread(service.delete_project_rule, db, actor, p.id, p.approval_rule_id)
    return no_content()


@get(MR_RULES, params=MergeRequestRules)
async def list_mr_rules(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """The rules that govern a merge request: its own, or its project's that apply to it."""
    q: MergeRequestRules = await params(request)
    page = page_of(q)
    found = service.list_mr_rules(db, actor, q.id, q.merge_request_iid, page)
    return paginated(request, [_view(request, actor, v) for v in found.items], page, found)


@get(MR_RULE, params=MergeRequestRule)
async def get_mr_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """One rule of a merge request."""
    p: MergeRequestRule = await params(request)
    view = service.get_mr_rule(db, actor, p.id, p.merge_request_iid, p.approval_rule_id)
    return render(_view(request, actor, view))


@post(MR_RULES, params=MergeRequestRuleCreate, status=201)
async def create_mr_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Add a rule of the merge request's own (from a project rule with approval_project_rule_id)."""
    p: MergeRequestRuleCreate = await params(request)
    view = await in_thread(service.create_mr_rule, db, actor, p.id, p.merge_request_iid, p)
    return render(_view(request, actor, view), status=201)


@put(MR_RULE, params=MergeRequestRuleUpdate)
async def update_mr_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Change a rule of the merge request."""
    p: MergeRequestRuleUpdate = await params(request)
    view = await in_thread(service.update_mr_rule, db, actor, p.id, p.merge_request_iid, p)
    return render(_view(request, actor, view))


@delete(MR_RULE, params=MergeRequestRule, status=204)
async def delete_mr_rule(request: Req, db: Db, actor: Authenticated) -> Response[bytes]:
    """Remove a rule of the merge request."""
    p: MergeRequestRule = await params(request)
    await in_thread(service.delete_mr_rule, db, actor, p.id, p.merge_request_iid, p.approval_rule_id)
    return no_content()


ROUTES: list[HTTPRouteHandler] = [
    list_project_rules,
    get_project_rule,
    create_project_rule,
    update_project_rule,
    delete_project_rule,
    list_mr_rules,
    get_mr_rule,
    create_mr_rule,
    update_mr_rule,
    delete_mr_rule,
]
