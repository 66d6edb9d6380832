"""The protected branch view (GitLab's ProtectedBranch and ProtectedRefAccess entities)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.models.repository import ADMIN_ACCESS, DEVELOPER_ACCESS, MAINTAINER_ACCESS, NO_ACCESS

if TYPE_CHECKING:
    from kiln.queries.protected_branches import ProtectedBranchRow

ACCESS_DESCRIPTIONS = {
    NO_ACCESS: "No one",
    DEVELOPER_ACCESS: "Developers + Maintainers",
    MAINTAINER_ACCESS: "Maintainers",
    ADMIN_ACCESS: "Instance admins",
}


def access_level(rule_id: int, level: int) -> dict[str, Any]:
    """One access level of a rule (kiln keeps one per kind, so it shares the rule's id)."""
    return {
        "id": rule_id,
        "access_level": level,
        "access_level_description": ACCESS_DESCRIPTIONS.get(level, str(level)),
        "deploy_key_id": None,
        "user_id": None,
        "group_id": None,
    }


def protected_branch(rule: ProtectedBranchRow) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "push_access_levels": [access_level(rule.id, rule.push_access_level)],
        "merge_access_levels": [access_level(rule.id, rule.merge_access_level)],
        "allow_force_push": rule.allow_force_push,
        "unprotect_access_levels": [access_level(rule.id, rule.unprotect_access_level)],
        "code_owner_approval_required": rule.code_owner_approval_required,
    }
