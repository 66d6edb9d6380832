"""To-do views (GitLab's Todo entity): the project (or group) it is in, who caused it, what
it asks, and its target rendered as the target's own view (an issue, an epic, a merge
request); a target the user may no longer read shows as null."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities import epics as epic_views
from kiln.entities import merge_requests as merge_request_views
from kiln.entities._format import iso
from kiln.entities.issues import issue, issue_url
from kiln.entities.projects import namespace_basic
from kiln.entities.users import user_basic
from kiln.models.notes import EPIC, ISSUE, MERGE_REQUEST
from kiln.models.todos import ACTION_NAMES

if TYPE_CHECKING:
    from kiln.queries.projects import ProjectAccess
    from kiln.queries.todos import TodoRow, TodoSet


def _project_identity(p: ProjectAccess) -> dict[str, Any]:
    """GitLab's ProjectIdentity."""
    return {
        "id": p.project.id,
        "description": p.project.description,
        "name": p.project.name,
        "name_with_namespace": f"{p.namespace.full_name} / {p.project.name}",
        "path": p.project.path,
        "path_with_namespace": f"{p.namespace.full_path}/{p.project.path}",
        "created_at": iso(p.project.created_at),
    }


def _target(row: TodoRow, found: TodoSet, base: str) -> tuple[dict[str, Any] | None, str | None]:
    """The target's view and its web address (with the note's anchor when a note caused it)."""
    anchor = f"#note_{row.note_id}" if row.note_id is not None else ""
    if row.target_type == ISSUE and row.target_id in found.issues:
        target = found.issues[row.target_id]
        return issue(target, found.issue_related, base), issue_url(base, target) + anchor
    if row.target_type == EPIC and row.target_id in found.epics:
        epic = found.epics[row.target_id]
        related = epic_views.Related(labels=found.epic_labels, users=found.users)
        return epic_views.epic(epic, related, base), epic_views.web_url(base, epic) + anchor
    if row.target_type == MERGE_REQUEST and row.target_id in found.merge_requests:
        mr = found.merge_requests[row.target_id]
        view = merge_request_views.merge_request(mr, found.merge_request_related, base)
        return view, merge_request_views.merge_request_url(base, mr) + anchor
    return None, None


def todo(row: TodoRow, found: TodoSet, base: str) -> dict[str, Any]:
    target, target_url = _target(row, found, base)
    author = found.users.get(row.author_id) if row.author_id is not None else None
    view: dict[str, Any] = {"id": row.id}
    if row.project_id is not None and row.project_id in found.projects:
        view["project"] = _project_identity(found.projects[row.project_id])
    if row.group_id is not None and row.group_id in found.groups:
        view["group"] = namespace_basic(found.groups[row.group_id].group, base)
    body = row.body if row.body is not None else (target or {}).get("title")
    view.update(
        author=user_basic(author, base) if author is not None else None,
        action_name=ACTION_NAMES.get(row.action, "marked"),
        target_type=row.target_type,
        target=target,
        target_url=target_url,
        body=body,
        state=row.state,
        created_at=iso(row.created_at),
        updated_at=iso(row.updated_at),
    )
    return view


def todos(found: TodoSet, base: str) -> list[dict[str, Any]]:
    return [todo(row, found, base) for row in found.todos]
