"""Approval rule views (the spec's "Approval rule"; GitLab's ApprovalRule, ProjectApprovalRule
and MergeRequestApprovalRule entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities.protected_branches import ACCESS_DESCRIPTIONS
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.approval_rules import GroupRow, WrappedRule
    from kiln.queries.protected_branches import ProtectedBranchRow


def group_view(g: GroupRow, base: str) -> dict[str, Any]:
    avatar = (
        f"{base}/uploads/-/system/group/avatar/{g.id}/{g.avatar_path.rsplit('/', 1)[-1]}"
        if g.avatar_path
        else None
    )
    return {
        "id": g.id,
        "name": g.name,
        "path": g.path,
        "description": g.description or "",
        "visibility": g.visibility,
        "lfs_enabled": g.lfs_enabled,
        "avatar_url": avatar,
        "web_url": f"{base}/groups/{g.full_path}",
        "request_access_enabled": g.request_access_enabled,
        "full_name": g.full_name,
        "full_path": g.full_path,
        "parent_id": g.parent_id,
        "ldap_cn": None,
        "ldap_access": None,
    }


def _levels(level: int) -> list[dict[str, Any]]:
    return [{"access_level": level, "access_level_description": ACCESS_DESCRIPTIONS.get(level, str(level))}]


def branch_view(b: ProtectedBranchRow) -> dict[str, Any]:
    return {
        "id": b.id,
        "name": b.name,
        "push_access_levels": _levels(b.push_access_level),
        "merge_access_levels": _levels(b.merge_access_level),
        "unprotect_access_levels": _levels(b.unprotect_access_level),
        "code_owner_approval_required": b.code_owner_approval_required,
    }


def _visible(w: WrappedRule, admin: bool, visibilities: tuple[str, ...]) -> list[GroupRow]:
    return [g for g in w.groups if admin or g.visibility in visibilities or g.level is not None]


def rule_view(
    w: WrappedRule,
    base: str,
    *,
    merge_request: bool,
    admin: bool,
    visibilities: tuple[str, ...],
    state: bool = False,
) -> dict[str, Any]:
    """A project's rule (with its protected branches), or a merge request's (with its source
    rule; `state`: as the approval state shows it, with its approvals)."""
    r = w.rule
    groups = _visible(w, admin, visibilities)
    out: dict[str, Any] = {
        "id": r.id,
        "name": r.name,
        "rule_type": r.rule_type,
        "eligible_approvers": [user_basic(u, base) for u in w.approvers],
        "approvals_required": r.approvals_required,
        "users": [user_basic(u, base) for u in w.users],
        "groups": [group_view(g, base) for g in groups],
        "contains_hidden_groups": len(groups) < len(w.groups),
    }
    if not merge_request:
        out["protected_branches"] = [branch_view(b) for b in w.branches]
        out["applies_to_all_protected_branches"] = r.applies_to_all_protected_branches
        return out
    # A project rule shown on a merge request without rules of its own stands for its copy.
    source = w.source if r.merge_request_id is not None else r
    out["source_rule"] = None if source is None else {"approvals_required": source.approvals_required}
    out["overridden"] = w.overridden
    out["section"] = None
    out["report_type"] = None
    if state:
        out["approved_by"] = [user_basic(u, base) for u in w.approved_by]
        out["approved"] = w.approved
        out["code_owner"] = False
    return out
