"""Board views (GitLab's Board and List entities, with the scope fields of its paid
editions): the board, the project or group it belongs to, its scope and its shown lists."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import day, iso
from kiln.entities.users import user_basic
from kiln.markdown import render

if TYPE_CHECKING:
    from kiln.queries.boards import BoardRow, LabelRow, ListRow, MilestoneRow, Named

# Text on a label: dark on a light colour, white on a dark one (GitLab's Color#contrast).
DARK_TEXT, LIGHT_TEXT = "#333333", "#FFFFFF"
_LIGHT_SUM = 500


def text_color(color: str) -> str:
    hex_digits = color[1:] if color.startswith("#") else ""
    if len(hex_digits) == 3:
        hex_digits = "".join(ch * 2 for ch in hex_digits)
    try:
        rgb = [int(hex_digits[i : i + 2], 16) for i in (0, 2, 4)] if len(hex_digits) == 6 else []
    except ValueError:
        rgb = []
    return DARK_TEXT if rgb and sum(rgb) > _LIGHT_SUM else LIGHT_TEXT


def label_basic(label: LabelRow) -> dict[str, Any]:
    return {
        "id": label.id,
        "name": label.title,
        "color": label.color,
        "description": label.description,
        "description_html": render(label.description),
        "text_color": text_color(label.color),
    }


def milestone_view(m: MilestoneRow, base: str) -> dict[str, Any]:
    """GitLab's Milestone entity; `project_id` or `group_id` as the milestone is one's."""
    view: dict[str, Any] = {"id": m.id, "iid": m.iid}
    if m.project_id is not None:
        view["project_id"] = m.project_id
        web_url = f"{base}/{m.owner_path}/-/milestones/{m.iid}"
    else:
        view["group_id"] = m.group_id
        web_url = f"{base}/groups/{m.owner_path}/-/milestones/{m.iid}"
    view.update(
        title=m.title,
        description=m.description,
        state=m.state,
        created_at=iso(m.created_at),
        updated_at=iso(m.updated_at),
        due_date=day(m.due_date),
        start_date=day(m.start_date),
        expired=m.due_date is not None and m.due_date < datetime.now(UTC).date(),
        web_url=web_url,
    )
    return view


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
