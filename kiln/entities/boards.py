"""Board views (GitLab's Board and List entities, with the scope fields of its paid
editions): the board, the project or group it belongs to, its scope and its shown lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kiln.entities.labels import label_basic
from kiln.entities.milestones import milestone as milestone_view
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.boards import BoardRow, ListRow, Named

# Text on a label: dark on a light colour, white on a dark one (GitLab's Color#contrast).
DARK_TEXT, LIGHT_TEXT = "#333333", "#FFFFFF"
_LIGHT_SUM = 500


def board_list(row: ListRow, named: Named, base: str) -> dict[str, Any]:
    """A list: a label's, an assignee's or a milestone's (the others' fields null)."""
    user = named.users.get(row.user_id) if row.user_id is not None else None
    milestone = named.milestones.get(row.milestone_id) if row.milestone_id is not None else None
    return {
        "id": row.id,
        "label": label_basic(row.label) if row.label is not None else None,
        "position": row.position,
        "max_issue_count": 0,
        "max_issue_weight": 0,
        "limit_metric": None,
        "assignee": user_basic(user, base) if user is not None else None,
        "milestone": milestone_view(milestone, base) if milestone is not None else None,
        "iteration": None,
    }


def board(
    row: BoardRow,
    lists: Sequence[ListRow],
    named: Named,
    base: str,
    *,
    project: dict[str, Any] | None,
    group: dict[str, Any] | None,
) -> dict[str, Any]:
    """A board; `project` or `group` is the view of what it belongs to (owner_view)."""
    assignee = named.users.get(row.assignee_id) if row.assignee_id is not None else None
    milestone = named.milestones.get(row.milestone_id) if row.milestone_id is not None else None
    return {
        "id": row.id,
        "name": row.name,
        "hide_backlog_list": bool(row.hide_backlog_list),
        "hide_closed_list": bool(row.hide_closed_list),
        "project": project,
        "group": group,
        "milestone": milestone_view(milestone, base) if milestone is not None else None,
        "assignee": user_basic(assignee, base) if assignee is not None else None,
        "labels": [label_basic(label) for label in named.labels.get(row.id, ())],
        "weight": row.weight,
        "lists": [board_list(item, named, base) for item in lists],
    }


def project_view(project: Any, namespace: Any, base: str) -> dict[str, Any]:
    """The project of a board (the fields GitLab's board examples show)."""
    full_path = f"{namespace.full_path}/{project.path}"
    web_url = f"{base}/{full_path}"
    return {
        "id": project.id,
        "name": project.name,
        "name_with_namespace": f"{namespace.full_name} / {project.name}",
        "path": project.path,
        "path_with_namespace": full_path,
        "http_url_to_repo": f"{web_url}.git",
        "web_url": web_url,
    }


def group_view(group: Any, base: str) -> dict[str, Any]:
    """GitLab's BasicGroupDetails."""
    return {"id": group.id, "web_url": f"{base}/groups/{group.full_path}", "name": group.name}
