"""Merge request approvals (GitLab's Merge request approvals API): a project's approval
settings, a merge request's approval status and state, approving and unapproving, and the
deprecated approvers endpoints.

Which rules govern a merge request: its own rules once it has some (and the project lets
merge requests override their approvers), else the project's rules that apply to its target
branch (a rule without protected branches applies to every branch; one with protected
branches, or `applies_to_all_protected_branches`, to the branches they protect). With no
rule at all, GitLab's fallback: the greater of the merge request's and the project's
`approvals_before_merge`, counted over every approval.

For the other parts of kiln: `approvals_left` (the merge gate), `is_approved`,
`reset_on_push` (a push to the source branch)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.auth.passwords import verify_password
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Conflict, Forbidden, NotFound, Unauthorized, ValidationFailed
from kiln.models import (
    Approval,
    ApprovalRule,
    ApprovalRuleGroup,
    ApprovalRuleUser,
    MergeRequest,
    MergeRequestReviewer,
    Project,
)
from kiln.models.merge_requests import ANY_APPROVER, REGULAR
from kiln.policy import Action, MergeRequestSubject, ProjectSubject
from kiln.queries import approval_rules as rule_finder
from kiln.queries import approvals as finder
from kiln.queries import protected_branches as branch_finder
from kiln.queries.approval_rules import GroupRow, RuleParts, RuleRow, WrappedRule
from kiln.queries.approvals import ApprovalState
from kiln.queries.protected_branches import ProtectedBranchRow
from kiln.queries.users import UserRow
from kiln.schemas.approvals import ApprovalConfigUpdate, ApproversUpdate, MergeRequestApprovalsUpdate
from kiln.services import instance_settings, merge_request_events, subjects
from kiln.services.protected_branches import matching

# The rule the deprecated approvers endpoints keep (GitLab's legacy approvers became it).
DEFAULT_RULE = "Default"

# ----------------------------------------------------------------------------- the state


def eligible(users: list[UserRow], groups: list[GroupRow], parts: RuleParts) -> list[UserRow]:
    """A rule's users and its groups' members, each once, by id."""
    seen: dict[int, UserRow] = {u.id: u for u in users}
    for g in groups:
        for u in parts.members.get(g.id, []):
            seen.setdefault(u.id, u)
    return [seen[k] for k in sorted(seen)]


def wrap(rule: RuleRow, parts: RuleParts) -> WrappedRule:
    users = parts.users.get(rule.id, [])
    groups = parts.groups.get(rule.id, [])
    return WrappedRule(
        rule=rule,
        users=users,
        groups=groups,
        branches=parts.branches.get(rule.id, []),
        approvers=eligible(users, groups, parts),
    )


def _applies(
    rule: RuleRow, parts: RuleParts, target: str, project_branches: list[ProtectedBranchRow] | None
) -> bool:
    """A project rule governs merge requests into `target`: every branch without protected
    branches; else the branches its protected branches (or all the project's) match."""
    if rule.applies_to_all_protected_branches:
        return bool(matching(project_branches or [], target))
    linked = parts.branches.get(rule.id, [])
    return not linked or bool(matching(linked, target))


def _author_may(db: Session, project: Any) -> bool:
    return policy.authors_may_approve(
        project, instance_settings.current(db)["prevent_merge_requests_author_approval"]
    )


def _committers_may(db: Session, project: Any) -> bool:
    return policy.committers_may_approve(
        project, instance_settings.current(db)["prevent_merge_requests_committers_approval"]
    )


def _same(a: list[Any], b: list[Any]) -> bool:
    return sorted(x.id for x in a) == sorted(x.id for x in b)


def state_of(
    db: Session,
    project: Any,
    mr: MergeRequest,
    viewer: Actor | None = None,
    s: ProjectSubject | None = None,
    assignee_ids: tuple[int, ...] = (),
) -> ApprovalState:
    """The merge request's approval state; with `viewer` (and its project subject `s`) also
    what the viewer has done and may do."""
    rules = rule_finder.rules_of(db, project.id, mr.id)
    project_rules = [r for r in rules if r.merge_request_id is None]
    own = [r for r in rules if r.merge_request_id is not None]
    parts = rule_finder.parts_of(db, [r.id for r in rules], viewer.user.id if viewer else None)
    overriding = not project.disable_overriding_approvers_per_merge_request
    branches = None
    if any(r.applies_to_all_protected_branches for r in project_rules):
        branches = branch_finder.rules_of(db, project.id)
    author_may, committers_may = _author_may(db, project), _committers_may(db, project)
    committers = set() if committers_may else finder.committer_ids(db, mr.id)
    approvals = finder.approvals_of(db, mr.id)
    approver_ids = [a.user.id for a in approvals]

    def allowed(u: UserRow) -> bool:
        if not author_may and u.id == mr.author_id:
            return False
        return committers_may or u.id not in committers

    overwritten = bool(own) and overriding
    chosen = (
        own if overwritten else [r for r in project_rules if _applies(r, parts, mr.target_branch, branches)]
    )
    by_id = {r.id: r for r in project_rules}
    wrapped: list[WrappedRule] = []
    for rule in chosen:
        w = wrap(rule, parts)
        w.approvers = [u for u in w.approvers if allowed(u)]
        if rule.rule_type == ANY_APPROVER:
            w.approved_by = [a.user for a in approvals]
        else:
            ids = {u.id for u in w.approvers}
            w.approved_by = [a.user for a in approvals if a.user.id in ids]
        w.approvals_left = max(rule.approvals_required - len(w.approved_by), 0)
        unactioned = [u for u in w.approvers if u.id not in approver_ids]
        w.approved = w.approvals_left == 0 or (rule.rule_type != ANY_APPROVER and not unactioned)
        if rule.source_rule_id is not None and rule.source_rule_id in by_id:
            w.source = by_id[rule.source_rule_id]
            src = wrap(w.source, parts)
            w.overridden = (
                rule.name != w.source.name
                or rule.approvals_required != w.source.approvals_required
                or not _same(w.users, src.users)
                or not _same(w.groups, src.groups)
            )
        wrapped.append(w)
    if wrapped:
        required = sum(w.rule.approvals_required for w in wrapped)
        approved = all(w.approved for w in wrapped)
        left = 0 if approved else sum(w.approvals_left for w in wrapped if not w.approved)
    else:
        required = max(mr.approvals_before_merge or 0, project.approvals_before_merge or 0)
        left = max(required - len(approvals), 0)
        approved = left == 0
    state = ApprovalState(project, mr, wrapped, overwritten, approvals, required, left, approved)
    seen: dict[int, UserRow] = {}
    for w in wrapped:
        if w.rule.rule_type == REGULAR:
            for u in w.approvers:
                if u.id not in approver_ids:
                    seen.setdefault(u.id, u)
    state.unactioned = [seen[k] for k in sorted(seen)]
    if viewer is not None:
        me = viewer.user.id
        state.user_has_approved = me in approver_ids
        state.suggested_approvers = [u for u in state.unactioned if u.id != me]
        state.user_can_approve = _can_approve(viewer, s, assignee_ids, state, allowed)
    return state


def _can_approve(
    viewer: Actor, s: ProjectSubject | None, assignee_ids: tuple[int, ...], state: ApprovalState, allowed: Any
) -> bool:
    """GitLab's can_approve?: allowed to approve the merge request at all, not yet approved,
    not refused as its author or a committer; then an approver of a rule still waiting, or
    anyone when no regular rule waits (or all are met)."""
    mr = state.mr
    if s is None or not policy.may_approve(viewer, s, mr.author_id, assignee_ids):
        return False
    me = viewer.user
    if state.user_has_approved:
        return False
    if not allowed(me):
        return False
    if any(u.id == me.id for u in state.unactioned):
        return True
    regular_waiting = any(w.rule.rule_type == REGULAR and not w.approved for w in state.rules)
    return not regular_waiting or state.approved


# ----------------------------------------------------------------------------- for other parts


def _project_of(db: Session, project: Any, mr: MergeRequest) -> Any:
    """The merge request's project as given (a model, a row record or a project subject),
    else loaded."""
    if isinstance(project, ProjectSubject):
        return project.project
    if project is not None and not isinstance(project, int):
        return project
    found = db.get(Project, mr.project_id)
    assert found is not None
    return found


def approvals_left(db: Session, project: Any, mr: MergeRequest) -> int:
    """How many approvals the merge request still lacks: 0 once it is approved (the merge gate).
    `project`: its project (model, row record, ProjectSubject) or None to load it."""
    return state_of(db, _project_of(db, project, mr), mr).approvals_left


def is_approved(db: Session, project: Any, mr: MergeRequest) -> bool:
    return state_of(db, _project_of(db, project, mr), mr).approved


def reset_on_push(db: Session, actor: Actor | None, mr: MergeRequest) -> int:
    """After a push to the source branch: the project's reset_approvals_on_push removes every
    approval, in the caller's transaction (which commits it). Returns how many went."""
    project = _project_of(db, None, mr)
    if not project.reset_approvals_on_push:
        return 0
    gone = db.execute(delete(Approval).where(Approval.merge_request_id == mr.id)).rowcount
    if gone:
        db.execute(
            update(MergeRequestReviewer)
            .where(MergeRequestReviewer.merge_request_id == mr.id, MergeRequestReviewer.state == "approved")
            .values(state="unapproved")
        )
    return int(gone or 0)


# ----------------------------------------------------------------------------- configuration


def configuration(db: Session, actor: Actor, ident: str) -> tuple[Any, WrappedRule | None]:
    """The project's approval settings, and the regular rule its deprecated approvers are."""
    s = subjects.project(db, actor, ident, Action.READ_MERGE_REQUEST, rows=True)
    return _configuration(db, actor, s.project)


def _configuration(db: Session, actor: Actor, project: Any) -> tuple[Any, WrappedRule | None]:
    rules = [r for r in rule_finder.rules_of(db, project.id) if r.rule_type == REGULAR]
    if not rules:
        return _settings(db, project), None
    parts = rule_finder.parts_of(db, [rules[0].id], actor.user.id)
    return _settings(db, project), wrap(rules[0], parts)


def _settings(db: Session, project: Any) -> dict[str, Any]:
    """The settings as they act: the instance's prevent settings win over the project's."""
    return {
        "approvals_before_merge": project.approvals_before_merge,
        "reset_approvals_on_push": project.reset_approvals_on_push,
        "disable_overriding_approvers_per_merge_request": project.disable_overriding_approvers_per_merge_request,
        "merge_requests_author_approval": not _author_may(db, project),
        "merge_requests_disable_committers_approval": not _committers_may(db, project),
        "require_password_to_approve": project.require_password_to_approve,
    }


_SETTINGS = (
    "approvals_before_merge",
    "reset_approvals_on_push",
    "disable_overriding_approvers_per_merge_request",
    "merge_requests_author_approval",
    "merge_requests_disable_committers_approval",
    "require_password_to_approve",
)


def update_configuration(
    db: Session, actor: Actor, ident: str, p: ApprovalConfigUpdate
) -> tuple[Any, WrappedRule | None]:
    s = subjects.project(db, actor, ident, Action.ADMIN_APPROVALS)
    if p.approvals_before_merge is not None and p.approvals_before_merge < 0:
        raise ValidationFailed({"approvals_before_merge": ["must be greater than or equal to 0"]})
    with transaction(db):
        project = s.project
        for name in _SETTINGS:
            value = getattr(p, name)
            if value is not None:
                setattr(project, name, value)
        db.flush()
    return _configuration(db, actor, s.project)


def set_project_approvers(
    db: Session, actor: Actor, ident: str, p: ApproversUpdate
) -> tuple[Any, WrappedRule | None]:
    """PUT /projects/:id/approvers (deprecated): the project's Default rule names exactly
    these users and groups (none: the rule goes)."""
    s = subjects.project(db, actor, ident, Action.ADMIN_APPROVALS)
    project = s.project
    with transaction(db):
        _keep_default_rule(db, actor, project.id, None, p, project.approvals_before_merge)
    return _configuration(db, actor, project)


def _keep_default_rule(
    db: Session, actor: Actor, project_id: int, mr_id: int | None, p: ApproversUpdate, required: int
) -> None:
    users = rule_finder.member_user_ids(db, project_id, p.approver_ids)
    groups = rule_finder.visible_group_ids(
        db, p.approver_group_ids, actor.user.id, policy.open_visibilities(actor), policy.is_admin(actor)
    )
    rules = [
        r
        for r in rule_finder.rules_of(db, project_id, mr_id)
        if r.rule_type == REGULAR and r.merge_request_id == mr_id
    ]
    rule = rule_finder.rule_for_update(db, project_id, rules[0].id, mr_id) if rules else None
    if not users and not groups:
        if rule is not None:
            db.delete(rule)
        return
    if rule is None:
        rule = ApprovalRule(
            project_id=project_id,
            merge_request_id=mr_id,
            name=DEFAULT_RULE,
            rule_type=REGULAR,
            approvals_required=required,
        )
        db.add(rule)
        db.flush()
    db.execute(delete(ApprovalRuleUser).where(ApprovalRuleUser.rule_id == rule.id))
    db.execute(delete(ApprovalRuleGroup).where(ApprovalRuleGroup.rule_id == rule.id))
    db.add_all([ApprovalRuleUser(rule_id=rule.id, user_id=u) for u in dict.fromkeys(users)])
    db.add_all([ApprovalRuleGroup(rule_id=rule.id, group_id=g) for g in dict.fromkeys(groups)])
    db.flush()


# ----------------------------------------------------------------------------- merge requests


def status(db: Session, actor: Actor, ident: str, iid: int) -> ApprovalState:
    """GET …/merge_requests/:iid/approvals and …/approval_state."""
    s = subjects.merge_request(db, actor, ident, iid)
    return state_of(db, s.project.project, s.merge_request, actor, s.project, s.assignee_ids)


def _refresh(db: Session, actor: Actor, ident: str, iid: int) -> ApprovalState:
    """The state after a write, read afresh."""
    db.expire_all()
    return status(db, actor, ident, iid)


def _overriding(actor: Actor, s: MergeRequestSubject) -> None:
    """Writes to a merge request's approvers: who may update it, where the project lets
    merge requests override their approvers (GitLab's update_approvers)."""
    if not policy.may_override_approvers(actor, s.project, s.merge_request.author_id, s.assignee_ids):
        raise Forbidden()


def set_approvals_required(
    db: Session, actor: Actor, ident: str, iid: int, p: MergeRequestApprovalsUpdate
) -> ApprovalState:
    """POST …/approvals (deprecated): the merge request's approvals_before_merge, which the
    fallback counts (never below the project's)."""
    s = subjects.merge_request(db, actor, ident, iid)
    _overriding(actor, s)
    if p.approvals_required < 0:
        raise ValidationFailed({"approvals_before_merge": ["must be greater than or equal to 0"]})
    floor = s.project.project.approvals_before_merge or 0
    if p.approvals_required < floor:
        raise ValidationFailed({"approvals_before_merge": ["must not be less than the project settings"]})
    with transaction(db):
        mr = s.merge_request
        mr.approvals_before_merge = p.approvals_required
        db.flush()
    return _refresh(db, actor, ident, iid)


def set_merge_request_approvers(
    db: Session, actor: Actor, ident: str, iid: int, p: ApproversUpdate
) -> ApprovalState:
    """PUT …/merge_requests/:iid/approvers (deprecated): the merge request's own Default rule."""
    s = subjects.merge_request(db, actor, ident, iid)
    _overriding(actor, s)
    mr = s.merge_request
    required = max(mr.approvals_before_merge or 0, s.project.project.approvals_before_merge or 0)
    with transaction(db):
        _keep_default_rule(db, actor, s.project.project.id, mr.id, p, required)
    return _refresh(db, actor, ident, iid)


def approve(
    db: Session,
    settings: Settings,
    actor: Actor,
    ident: str,
    iid: int,
    sha: str | None,
    password: str | None,
) -> ApprovalState:
    """POST …/approve: 409 when `sha` is not the source head, 401 for a wrong password (where
    the project asks for one), an approval given already, or a refused approver (the author
    or a committer where the settings refuse them, no approver of a waiting rule)."""
    s = subjects.merge_request(db, actor, ident, iid)
    mr = s.merge_request
    if not policy.may_approve(actor, s.project, mr.author_id, s.assignee_ids):
        raise Forbidden()
    if sha is not None and sha != mr.head_sha:
        raise Conflict(f"SHA does not match HEAD of source branch: {mr.head_sha}")
    project = s.project.project
    if project.require_password_to_approve and not _password_ok(db, settings, actor, password):
        raise Unauthorized()
    before = state_of(db, project, mr, actor, s.project, s.assignee_ids)
    if not before.user_can_approve:
        raise Unauthorized()
    with transaction(db):
        db.add(Approval(merge_request_id=mr.id, user_id=actor.user.id))
        try:
            db.flush()
        except IntegrityError:  # a twin request approved first
            raise Unauthorized() from None
        _reviewer_state(db, mr.id, actor.user.id, "approved")
        merge_request_events.record(db, actor, mr, merge_request_events.APPROVAL)
        after = state_of(db, project, mr)
        if after.approved and not before.approved:
            merge_request_events.record(db, actor, mr, merge_request_events.APPROVED)
    return _refresh(db, actor, ident, iid)


def unapprove(db: Session, actor: Actor, ident: str, iid: int) -> ApprovalState:
    """POST …/unapprove: 404 when the caller has not approved."""
    s = subjects.merge_request(db, actor, ident, iid)
    mr = s.merge_request
    if not policy.may_approve(actor, s.project, mr.author_id, s.assignee_ids):
        raise Forbidden()
    project = s.project.project
    with transaction(db):
        approval = finder.approval_for_update(db, mr.id, actor.user.id)
        if approval is None:
            raise NotFound()
        before = state_of(db, project, mr)
        db.delete(approval)
        db.flush()
        _reviewer_state(db, mr.id, actor.user.id, "unapproved")
        merge_request_events.record(db, actor, mr, merge_request_events.UNAPPROVAL)
        after = state_of(db, project, mr)
        if before.approved and not after.approved:
            merge_request_events.record(db, actor, mr, merge_request_events.UNAPPROVED)
    return _refresh(db, actor, ident, iid)


def _reviewer_state(db: Session, mr_id: int, user_id: int, state: str) -> None:
    """A reviewer who approves (or takes it back) is shown so among the reviewers, as GitLab does."""
    db.execute(
        update(MergeRequestReviewer)
        .where(MergeRequestReviewer.merge_request_id == mr_id, MergeRequestReviewer.user_id == user_id)
        .values(state=state)
    )


def _password_ok(db: Session, settings: Settings, actor: Actor, password: str | None) -> bool:
    """The approver's own password (one verification whatever the answer)."""
    return verify_password(
        actor.user.password_hash,
        password or "",
        time_cost=settings.password_time_cost,
        memory_cost=settings.password_memory_cost,
    )
