"""Epic views (GitLab's Epic entity, its LinkedEpic for a child epic made under a parent, and
the Todo a caller marks on an epic). Dates are composite: `start_date` / `due_date` are the
fixed ones when fixed, else those inherited from milestones and child epics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kiln.entities._format import day, iso
from kiln.entities.labels import label_basic
from kiln.entities.users import user_basic
from kiln.models.todos import ACTION_NAMES

if TYPE_CHECKING:
    from kiln.queries.epics import EpicRow, LabelRow
    from kiln.queries.users import UserRow

# Epics carry GitLab's default epic color (Epic::DEFAULT_COLOR) and its contrasting text color.
COLOR, TEXT_COLOR = "#1068bf", "#FFFFFF"


@dataclass(slots=True)
class Related:
    """What the views of some epics show besides their rows."""

    labels: dict[int, list[LabelRow]] = field(default_factory=dict)  # by epic id
    users: dict[int, UserRow] = field(default_factory=dict)  # by user id


@dataclass(frozen=True, slots=True)
class Seen:
    """The group an epic is shown from (its `references.relative`)."""

    group_id: int
    group_path: str


def references(row: EpicRow, seen: Seen | None) -> dict[str, str]:
    """`&iid` in its own group, the path below the group it is seen from, else the full path."""
    short = f"&{row.iid}"
    full = f"{row.group_path}{short}"
    if seen is None:
        relative = full
    elif seen.group_id == row.group_id:
        relative = short
    elif row.group_path.startswith(seen.group_path + "/"):
        relative = row.group_path[len(seen.group_path) + 1 :] + short
    else:
        relative = full
    return {"short": short, "relative": relative, "full": full}


def web_url(base: str, row: EpicRow) -> str:
    return f"{base}/groups/{row.group_path}/-/epics/{row.iid}"


def _inherited(row: EpicRow, which: str) -> str | None:
    """The date the epic would inherit: what it holds when not fixed, else its sourcing
    milestone's (GitLab's *_from_milestones)."""
    if getattr(row, f"{which}_date_is_fixed"):
        return day(getattr(row, f"{which}_milestone_date"))
    return day(getattr(row, f"{which}_date"))


def epic(
    row: EpicRow,
    related: Related,
    base: str,
    *,
    seen: Seen | None = None,
    with_labels_details: bool = False,
    subscribed: bool | None = None,
) -> dict[str, Any]:
    """One epic; `subscribed` only in single-epic answers (None: left out)."""
    author = related.users.get(row.author_id) if row.author_id is not None else None
    labels = related.labels.get(row.id, [])
    api = f"{base}/api/v4/groups"
    refs = references(row, seen)
    start_inherited, due_inherited = _inherited(row, "start"), _inherited(row, "due")
    view: dict[str, Any] = {
        "id": row.id,
        "iid": row.iid,
        "color": COLOR,
        "text_color": TEXT_COLOR,
        "group_id": row.group_id,
        "parent_id": row.parent_id,
        "parent_iid": row.parent_iid,
        "imported": False,
        "imported_from": "none",
        "title": row.title,
        "description": row.description,
        "confidential": bool(row.confidential),
        "author": user_basic(author, base) if author is not None else None,
        "start_date": day(row.start_date),
        "start_date_is_fixed": bool(row.start_date_is_fixed),
        "start_date_fixed": day(row.start_date_fixed),
        "start_date_from_inherited_source": start_inherited,
        "start_date_from_milestones": start_inherited,
        "end_date": day(row.due_date),
        "due_date": day(row.due_date),
        "due_date_is_fixed": bool(row.due_date_is_fixed),
        "due_date_fixed": day(row.due_date_fixed),
        "due_date_from_inherited_source": due_inherited,
        "due_date_from_milestones": due_inherited,
        "state": row.state,
        "web_edit_url": f"/groups/{row.group_path}/-/epics/{row.iid}",
        "web_url": web_url(base, row),
        "references": refs,
        "reference": refs["full"],
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "closed_at": iso(row.closed_at),
        "labels": [label_basic(label) for label in labels]
        if with_labels_details
        else [label.title for label in labels],
        "upvotes": row.upvotes,
        "downvotes": row.downvotes,
    }
    if subscribed is not None:
        view["subscribed"] = subscribed
    view["_links"] = {
        "self": f"{api}/{row.group_id}/epics/{row.iid}",
        "epic_issues": f"{api}/{row.group_id}/epics/{row.iid}/issues",
        "group": f"{api}/{row.group_id}",
        "parent": f"{api}/{row.parent_group_id}/epics/{row.parent_iid}"
        if row.parent_id is not None
        else None,
    }
    return view


def epics(
    rows: list[EpicRow],
    related: Related,
    base: str,
    *,
    seen: Seen | None = None,
    with_labels_details: bool = False,
) -> list[dict[str, Any]]:
    return [epic(row, related, base, seen=seen, with_labels_details=with_labels_details) for row in rows]


def linked_epic(
    row: EpicRow, parent: EpicRow, base: str, *, has_children: bool, has_issues: bool
) -> dict[str, Any]:
    """A child epic made under `parent` (GitLab's LinkedEpic)."""
    own = parent.group_id == row.group_id
    return {
        "id": row.id,
        "iid": row.iid,
        "title": row.title,
        "group_id": row.group_id,
        "parent_id": row.parent_id,
        "has_children": has_children,
        "has_issues": has_issues,
        "reference": f"&{row.iid}" if own else f"{row.group_path}&{row.iid}",
        "url": web_url(base, row),
        "relation_url": f"{web_url(base, parent)}/links/{row.id}",
    }


def todo(
    todo_id: int,
    action: int,
    state: str,
    created_at: Any,
    updated_at: Any,
    group: Any,
    author: Any,
    target: dict[str, Any],
    base: str,
) -> dict[str, Any]:
    """A to-do on an epic (GitLab's Todo entity: the group it is in, the epic as its target)."""
    return {
        "id": todo_id,
        "group": {
            "id": group.id,
            "name": group.name,
            "path": group.path,
            "kind": "group",
            "full_path": group.full_path,
            "parent_id": group.parent_id,
        },
        "author": user_basic(author, base) if author is not None else None,
        "action_name": ACTION_NAMES.get(action, "marked"),
        "target_type": "epic",
        "target": target,
        "target_url": target["web_url"],
        "body": target["title"],
        "state": state,
        "created_at": iso(created_at),
        "updated_at": iso(updated_at),
    }
