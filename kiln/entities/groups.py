"""Group and namespace views, composed like GitLab's entities: group ⊂ group detail;
namespace basic ⊂ namespace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import day, iso
from kiln.entities.projects import namespace_avatar_url, namespace_basic, project_full
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.groups import GroupRecord
    from kiln.queries.namespaces import NamespaceRecord

# GitLab's default branch protection levels and the rules each one stands for.
_PROTECTION: dict[int, tuple[int, bool, int]] = {
    0: (30, True, 30),  # not protected: developers push and force-push
    1: (30, False, 40),  # developers push, maintainers merge
    2: (40, False, 40),  # fully protected
    3: (40, False, 30),  # developers merge
    4: (40, False, 40),  # fully protected, developers may push the first commit
}


def branch_protection_defaults(level: int) -> dict[str, Any]:
    push, force, merge = _PROTECTION.get(level, _PROTECTION[2])
    view: dict[str, Any] = {
        "allowed_to_push": [{"access_level": push}],
        "allow_force_push": force,
        "allowed_to_merge": [{"access_level": merge}],
    }
    if level == 4:
        view["developer_can_initial_push"] = True
    return view


def group_web_url(full_path: str, base: str) -> str:
    return f"{base}/groups/{full_path}"


def group_view(rec: GroupRecord, base: str) -> dict[str, Any]:
    """The list view (GitLab's Entities::Group)."""
    g = rec.group
    view: dict[str, Any] = {
        "id": g.id,
        "web_url": group_web_url(g.full_path, base),
        "name": g.name,
        "path": g.path,
        "description": g.description or "",
        "visibility": g.visibility,
        "share_with_group_lock": g.share_with_group_lock,
        "require_two_factor_authentication": g.require_two_factor_authentication,
        "two_factor_grace_period": g.two_factor_grace_period,
        "project_creation_level": g.project_creation_level,
        "auto_devops_enabled": g.auto_devops_enabled,
        "subgroup_creation_level": g.subgroup_creation_level,
        "emails_disabled": not g.emails_enabled,
        "emails_enabled": g.emails_enabled,
        "show_diff_preview_in_email": True,
        "mentions_disabled": g.mentions_disabled,
        "lfs_enabled": g.lfs_enabled,
        "archived": False,
        "math_rendering_limits_enabled": True,
        "lock_math_rendering_limits_enabled": False,
        "default_branch": g.default_branch,
        "default_branch_protection": rec.default_branch_protection,
        "default_branch_protection_defaults": branch_protection_defaults(rec.default_branch_protection),
        "avatar_url": namespace_avatar_url(g, base),
        "request_access_enabled": g.request_access_enabled,
        "full_name": g.full_name,
        "full_path": g.full_path,
        "created_at": iso(g.created_at),
        "parent_id": g.parent_id,
        "organization_id": 1,
        "shared_runners_setting": "enabled",
        "max_artifacts_size": None,
    }
    if rec.custom_attributes is not None:
        view["custom_attributes"] = [{"key": k, "value": v} for k, v in rec.custom_attributes]
    if rec.statistics is not None:
        view["statistics"] = dict(rec.statistics)
    view["marked_for_deletion_on"] = day(g.marked_for_deletion_on)
    return view


def group_detail(rec: GroupRecord, base: str) -> dict[str, Any]:
    """GroupDetail: the group, the groups it is shared with, and (when loaded) its projects
    and the projects shared with it, in the full project view without permissions."""
    view = group_view(rec, base)
    view["shared_with_groups"] = []
    if rec.group.parent_id is None:
        view["prevent_sharing_groups_outside_hierarchy"] = False
    if rec.projects is not None:
        view["projects"] = [project_full(p, base) for p in rec.projects]
    if rec.shared_projects is not None:
        view["shared_projects"] = [project_full(p, base) for p in rec.shared_projects]
    return view


def namespace_view(rec: NamespaceRecord, base: str) -> dict[str, Any]:
    """GitLab's Entities::Namespace; the counts only for those who administer the group."""
    ns = rec.namespace
    view = namespace_basic(ns, base)
    if rec.owner is not None:
        view["avatar_url"] = user_basic(rec.owner, base)["avatar_url"]
    if ns.is_group and rec.can_admin:
        view["members_count_with_descendants"] = rec.members_count
    if rec.can_admin:
        view.update(
            {
                "billable_members_count": rec.billable_members_count,
                "plan": "default",
                "end_date": None,
                "trial_ends_on": None,
                "trial": False,
            }
        )
    if rec.admin_view:
        view["root_repository_size"] = rec.root_repository_size
        view["projects_count"] = rec.projects_count
    return view


def exists_view(exists: bool, suggests: list[str]) -> dict[str, Any]:
    return {"exists": exists, "suggests": suggests}


def public_group_details(g: Any, base: str) -> dict[str, Any]:
    """GitLab's PublicGroupDetails: a project's groups, the groups a project may move to."""
    return {
        "id": g.id,
        "web_url": group_web_url(g.full_path, base),
        "name": g.name,
        "avatar_url": namespace_avatar_url(g, base),
        "full_name": g.full_name,
        "full_path": g.full_path,
    }
