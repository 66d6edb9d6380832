"""Approval rules: a project's (Maintainers write them; whoever reads the project's merge
requests reads them) and a merge request's own (whoever may update it, unless the project
keeps its rules). A rule names users (members of the project), groups (those the writer
sees) and, for a project's rule, protected branches of the project; its eligible approvers
are its users and its groups' members.

A merge request without rules of its own shows the project's rules that apply to it; its
first own rule write copies those into its own (each with its `source_rule`), so the rules
it had stay, as GitLab's merge requests keep copies of their project's rules."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import Forbidden, NotFound, ValidationFailed
from kiln.models import ApprovalRule, ApprovalRuleGroup, ApprovalRuleProtectedBranch, ApprovalRuleUser
from kiln.models.merge_requests import ANY_APPROVER, REGULAR
from kiln.pagination import Page, PageResult
from kiln.policy import Action, MergeRequestSubject
from kiln.queries import approval_rules as finder
from kiln.queries.approval_rules import RuleParts
from kiln.schemas.approval_rules import (
    MergeRequestRuleCreate,
    MergeRequestRuleUpdate,
    ProjectRuleCreate,
    ProjectRuleUpdate,
)
from kiln.services import approvals, subjects
from kiln.services.approvals import WrappedRule

RULE_NOT_FOUND = "404 Not found"
NAME_MAX = 255


@dataclass(slots=True)
class RuleView:
    """One rule to render: wrapped (eligible approvers, and on a merge request its approvals),
    and whether it is a merge request's."""

    wrapped: WrappedRule
    merge_request: bool = False


def _page(items: list[RuleView], page: Page) -> PageResult:
    chunk = items[page.offset : page.offset + page.per_page]
    return PageResult(items=chunk, total=len(items), has_next=page.offset + page.per_page < len(items))


# ----------------------------------------------------------------------------- project rules


def list_project_rules(db: Session, actor: Actor, ident: str, page: Page) -> PageResult:
    s = subjects.project(db, actor, ident, Action.READ_MERGE_REQUEST, rows=True)
    rules = finder.rules_of(db, s.project.id)
    parts = finder.parts_of(db, [r.id for r in rules], actor.user.id)
    return _page([RuleView(approvals.wrap(r, parts)) for r in rules], page)


def get_project_rule(db: Session, actor: Actor, ident: str, rule_id: int) -> RuleView:
    s = subjects.project(db, actor, ident, Action.READ_MERGE_REQUEST, rows=True)
    return _project_view(db, actor, s.project.id, rule_id)


def _project_view(db: Session, actor: Actor, project_id: int, rule_id: int) -> RuleView:
    found = [r for r in finder.rules_of(db, project_id) if r.id == rule_id]
    if not found:
        raise NotFound(message=RULE_NOT_FOUND)
    parts = finder.parts_of(db, [rule_id], actor.user.id)
    return RuleView(approvals.wrap(found[0], parts))


def _check(name: str, approvals_required: int) -> str:
    name = name.strip()
    errors: dict[str, list[str]] = {}
    if not name:
        errors["name"] = ["can't be blank"]
    elif len(name) > NAME_MAX:
        errors["name"] = [f"is too long (maximum is {NAME_MAX} characters)"]
    if approvals_required < 0:
        errors["approvals_required"] = ["must be greater than or equal to 0"]
    elif approvals_required > 100:
        errors["approvals_required"] = ["must be less than or equal to 100"]
    if errors:
        raise ValidationFailed(errors)
    return name


def _members(
    db: Session, actor: Actor, project_id: int, user_ids: list[int] | None, usernames: list[str] | None
) -> list[int] | None:
    """The users a rule names: `user_ids` and `usernames`, members of the project only."""
    if user_ids is None and usernames is None:
        return None
    wanted = list(user_ids or []) + finder.user_ids_by_usernames(db, usernames or [])
    return finder.member_user_ids(db, project_id, wanted)


def _groups(db: Session, actor: Actor, group_ids: list[int] | None) -> list[int] | None:
    if group_ids is None:
        return None
    return finder.visible_group_ids(
        db, group_ids, actor.user.id, policy.open_visibilities(actor), policy.is_admin(actor)
    )


def _set_links(
    db: Session,
    rule_id: int,
    users: list[int] | None,
    groups: list[int] | None,
    branches: list[int] | None = None,
) -> None:
    """Replace what the rule names, for each part given (None: left as it is)."""
    if users is not None:
        db.execute(delete(ApprovalRuleUser).where(ApprovalRuleUser.rule_id == rule_id))
        db.add_all([ApprovalRuleUser(rule_id=rule_id, user_id=u) for u in dict.fromkeys(users)])
    if groups is not None:
        db.execute(delete(ApprovalRuleGroup).where(ApprovalRuleGroup.rule_id == rule_id))
        db.add_all([ApprovalRuleGroup(rule_id=rule_id, group_id=g) for g in dict.fromkeys(groups)])
    if branches is not None:
        db.execute(delete(ApprovalRuleProtectedBranch).where(ApprovalRuleProtectedBranch.rule_id == rule_id))
        db.add_all(
            [
                ApprovalRuleProtectedBranch(rule_id=rule_id, protected_branch_id=b)
                for b in dict.fromkeys(branches)
            ]
        )
    db.flush()


def _unique(
    db: Session, project_id: int, mr_id: int | None, name: str, rule_type: str, except_id: int | None
) -> None:
    if finder.name_taken(db, project_id, mr_id, name, except_id):
        raise ValidationFailed({"name": ["has already been taken"]})
    if rule_type == ANY_APPROVER and finder.any_approver_exists(db, project_id, mr_id, except_id):
        raise ValidationFailed({"rule_type": ["any-approver for the project already exists"]})


def create_project_rule(db: Session, actor: Actor, ident: str, p: ProjectRuleCreate) -> RuleView:
    s = subjects.project(db, actor, ident, Action.ADMIN_APPROVALS)
    project_id = s.project.id
    name = _check(p.name, p.approvals_required)
    rule_type = p.rule_type or REGULAR
    with transaction(db):
        _unique(db, project_id, None, name, rule_type, None)
        users = _members(db, actor, project_id, p.user_ids, p.usernames)
        groups = _groups(db, actor, p.group_ids)
        branches = finder.project_branch_ids(db, project_id, p.protected_branch_ids or [])
        rule = ApprovalRule(
            project_id=project_id,
            name=name,
            rule_type=rule_type,
            approvals_required=p.approvals_required,
            applies_to_all_protected_branches=bool(p.applies_to_all_protected_branches),
        )
        db.add(rule)
        db.flush()
        if rule_type == ANY_APPROVER:
            users, groups = [], []  # an any-approver rule names no one
        _set_links(db, rule.id, users, groups, branches)
    return _project_view(db, actor, project_id, rule.id)


def update_project_rule(db: Session, actor: Actor, ident: str, p: ProjectRuleUpdate) -> RuleView:
    s = subjects.project(db, actor, ident, Action.ADMIN_APPROVALS)
    project_id = s.project.id
    with transaction(db):
        rule = finder.rule_for_update(db, project_id, p.approval_rule_id, None)
        if rule is None:
            raise NotFound(message=RULE_NOT_FOUND)
        required = rule.approvals_required if p.approvals_required is None else p.approvals_required
        name = _check(rule.name if p.name is None else p.name, required)
        rule_type = p.rule_type or rule.rule_type
        _unique(db, project_id, None, name, rule_type, rule.id)
        rule.name, rule.rule_type, rule.approvals_required = name, rule_type, required
        if p.applies_to_all_protected_branches is not None:
            rule.applies_to_all_protected_branches = p.applies_to_all_protected_branches
        users = _members(db, actor, project_id, p.user_ids, p.usernames)
        groups = _groups(db, actor, p.group_ids)
        branches = (
            None
            if p.protected_branch_ids is None
            else finder.project_branch_ids(db, project_id, p.protected_branch_ids)
        )
        # A PUT in the spec's shape (name and approvals_required) replaces the rule: users and
        # groups not listed go. A partial one (python-gitlab's save of what changed, as GitLab
        # allows) changes only the lists it sends.
        whole = p.name is not None and p.approvals_required is not None
        if whole:
            users, groups = users or [], groups or []
        _set_links(db, rule.id, users, groups, branches)
    return _project_view(db, actor, project_id, rule.id)


def delete_project_rule(db: Session, actor: Actor, ident: str, rule_id: int) -> None:
    s = subjects.project(db, actor, ident, Action.ADMIN_APPROVALS)
    with transaction(db):
        rule = finder.rule_for_update(db, s.project.id, rule_id, None)
        if rule is None:
            raise NotFound(message=RULE_NOT_FOUND)
        db.delete(rule)


# ----------------------------------------------------------------------------- merge request rules


def _mr_views(db: Session, actor: Actor, s: MergeRequestSubject) -> list[RuleView]:
    state = approvals.state_of(db, s.project.project, s.merge_request, actor, s.project, s.assignee_ids)
    return [RuleView(w, merge_request=True) for w in state.rules]


def list_mr_rules(db: Session, actor: Actor, ident: str, iid: int, page: Page) -> PageResult:
    s = subjects.merge_request(db, actor, ident, iid)
    return _page(_mr_views(db, actor, s), page)


def get_mr_rule(db: Session, actor: Actor, ident: str, iid: int, rule_id: int) -> RuleView:
    s = subjects.merge_request(db, actor, ident, iid)
    return _mr_view(db, actor, s, rule_id)


def _mr_view(db: Session, actor: Actor, s: MergeRequestSubject, rule_id: int) -> RuleView:
    found = [v for v in _mr_views(db, actor, s) if v.wrapped.rule.id == rule_id]
    if not found:
        raise NotFound(message=RULE_NOT_FOUND)
    return found[0]


def _writable(db: Session, actor: Actor, ident: str, iid: int) -> MergeRequestSubject:
    s = subjects.merge_request(db, actor, ident, iid, rows=False)
    if not policy.may_override_approvers(actor, s.project, s.merge_request.author_id, s.assignee_ids):
        raise Forbidden()
    return s


def _own_rules(db: Session, actor: Actor, s: MergeRequestSubject) -> dict[int, int]:
    """The merge request's own rules, made from the project's that govern it when it has none
    yet: {project rule id: own rule id} for those copies."""
    mr = s.merge_request
    project = s.project.project
    if any(r.merge_request_id == mr.id for r in finder.rules_of(db, project.id, mr.id)):
        return {}
    state = approvals.state_of(db, project, mr)
    copies: dict[int, int] = {}
    for w in state.rules:
        copy = ApprovalRule(
            project_id=project.id,
            merge_request_id=mr.id,
            source_rule_id=w.rule.id,
            name=w.rule.name,
            rule_type=w.rule.rule_type,
            approvals_required=w.rule.approvals_required,
        )
        db.add(copy)
        db.flush()
        _set_links(db, copy.id, [u.id for u in w.users], [g.id for g in w.groups])
        copies[w.rule.id] = copy.id
    return copies


def create_mr_rule(db: Session, actor: Actor, ident: str, iid: int, p: MergeRequestRuleCreate) -> RuleView:
    s = _writable(db, actor, ident, iid)
    project_id, mr_id = s.project.project.id, s.merge_request.id
    with transaction(db):
        _own_rules(db, actor, s)
        name = p.name
        users = _members(db, actor, project_id, p.user_ids, p.usernames)
        groups = _groups(db, actor, p.group_ids)
        source_id = None
        if p.approval_project_rule_id is not None:
            # The project rule's name, users and groups; the approvals asked for here.
            source = [r for r in finder.rules_of(db, project_id) if r.id == p.approval_project_rule_id]
            if not source:
                raise NotFound(message=RULE_NOT_FOUND)
            parts: RuleParts = finder.parts_of(db, [source[0].id], actor.user.id)
            name, source_id = source[0].name, source[0].id
            users = [u.id for u in parts.users.get(source_id, [])]
            groups = [g.id for g in parts.groups.get(source_id, [])]
        name = _check(name, p.approvals_required)
        _unique(db, project_id, mr_id, name, REGULAR, None)
        rule = ApprovalRule(
            project_id=project_id,
            merge_request_id=mr_id,
            source_rule_id=source_id,
            name=name,
            rule_type=REGULAR,
            approvals_required=p.approvals_required,
        )
        db.add(rule)
        db.flush()
        _set_links(db, rule.id, users or [], groups or [])
    db.expire_all()
    return _mr_view(db, actor, subjects.merge_request(db, actor, ident, iid), rule.id)


def _own_rule(db: Session, actor: Actor, s: MergeRequestSubject, rule_id: int) -> ApprovalRule:
    """The merge request's own rule `rule_id`; a project rule that governs it names its copy."""
    copies = _own_rules(db, actor, s)
    rule = finder.rule_for_update(db, s.project.project.id, copies.get(rule_id, rule_id), s.merge_request.id)
    if rule is None:
        raise NotFound(message=RULE_NOT_FOUND)
    return rule


def update_mr_rule(db: Session, actor: Actor, ident: str, iid: int, p: MergeRequestRuleUpdate) -> RuleView:
    s = _writable(db, actor, ident, iid)
    project_id, mr_id = s.project.project.id, s.merge_request.id
    with transaction(db):
        rule = _own_rule(db, actor, s, p.approval_rule_id)
        required = rule.approvals_required if p.approvals_required is None else p.approvals_required
        name = _check(rule.name if p.name is None else p.name, required)
        _unique(db, project_id, mr_id, name, rule.rule_type, rule.id)
        rule.name, rule.approvals_required = name, required
        users = _members(db, actor, project_id, p.user_ids, p.usernames)
        groups = _groups(db, actor, p.group_ids)
        _set_links(db, rule.id, users, groups)
        rule_id = rule.id
    db.expire_all()
    return _mr_view(db, actor, subjects.merge_request(db, actor, ident, iid), rule_id)


def delete_mr_rule(db: Session, actor: Actor, ident: str, iid: int, rule_id: int) -> None:
    s = _writable(db, actor, ident, iid)
    with transaction(db):
        rule = _own_rule(db, actor, s, rule_id)
        db.delete(rule)
