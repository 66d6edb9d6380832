"""Approval views: a project's approval configuration, a merge request's approval status and
its approval state (the spec's "Project approval configuration", "Merge request approval
status"; GitLab's ApprovalSettings, ApprovalState and MergeRequestApprovalState entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities.approval_rules import group_view, rule_view
from kiln.entities.issues import issuable_head
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.approval_rules import WrappedRule
    from kiln.queries.approvals import ApprovalState


def configuration(settings: dict[str, Any], default: WrappedRule | None, base: str) -> dict[str, Any]:
    """The settings, with the deprecated approvers and approver groups (the Default rule's)."""
    out = {
        "approvers": [{"user": user_basic(u, base)} for u in (default.users if default else [])],
        "approver_groups": [{"group": group_view(g, base)} for g in (default.groups if default else [])],
    }
    out.update(settings)
    return out


def status(state: ApprovalState, base: str) -> dict[str, Any]:
    mr = state.mr
    groups: dict[int, Any] = {}
    for w in state.rules:
        if not w.approved:
            for g in w.groups:
                groups.setdefault(g.id, g)
    return {
        **issuable_head(mr),
        "merge_status": mr.merge_status,
        "approved": state.approved,
        "approvals_required": state.approvals_required,
        "approvals_left": state.approvals_left,
        "require_password_to_approve": bool(state.project.require_password_to_approve),
        "approved_by": [{"user": user_basic(a.user, base)} for a in state.approvals],
        "suggested_approvers": [user_basic(u, base) for u in state.suggested_approvers],
        "approvers": [{"user": user_basic(u, base)} for u in state.unactioned],
        "approver_groups": [{"group": group_view(groups[k], base)} for k in sorted(groups)],
        "approval_rules_left": [
            {"id": w.rule.id, "name": w.rule.name, "rule_type": w.rule.rule_type}
            for w in state.rules
            if not w.approved
        ],
        "has_approval_rules": bool(state.rules),
        "user_has_approved": state.user_has_approved,
        "user_can_approve": state.user_can_approve,
        "multiple_approval_rules_available": True,
        "merge_request_approvers_available": True,
        "invalid_approvers_rules": [],
    }


def approval_state(
    state: ApprovalState, base: str, *, admin: bool, visibilities: tuple[str, ...]
) -> dict[str, Any]:
    return {
        "approval_rules_overwritten": state.overwritten,
        "rules": [
            rule_view(w, base, merge_request=True, admin=admin, visibilities=visibilities, state=True)
            for w in state.rules
        ],
    }
