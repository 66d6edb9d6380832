"""Issue views (GitLab's Issue entity): the row with its labels, milestone, people, epic,
task list progress, time stats, links and references. Every resource that shows issues
(lists, issue links, milestones' and epics' issues, boards) renders them here:
`queries.issues.rows_by_ids` + `queries.issues.related_of`, then `issue(...)` per row."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from kiln import durations
from kiln.entities._format import day, iso
from kiln.entities.labels import label_basic
from kiln.entities.milestones import milestone as milestone_view
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.issues import IssueRow, Related


@dataclass(frozen=True, slots=True)
class Context:
    """Where issues (and merge requests) are shown, for their `references.relative`: a project's list (the
    project and its namespace: `#1` there, `project#1` from a sibling), a group's list (the
    group: `project#1` for its own projects), or nowhere in particular (the full reference)."""

    project_id: int | None = None
    namespace_id: int | None = None


ANYWHERE = Context()

# GitLab's task list items: a list marker, a checkbox, then the item's text.
_TASK = re.compile(r"^(?:>\s{0,4})*\s*(?:[-+*]|\d+[.)])\s+\[([ xX])\]\s+\S", re.MULTILINE)


def task_counts(text: str | None) -> tuple[int, int]:
    """(items, completed items) of the Markdown task lists in `text`."""
    if not text or "[" not in text:  # no checkbox: no scan (most descriptions)
        return 0, 0
    marks = _TASK.findall(text)
    return len(marks), sum(1 for m in marks if m in "xX")


def task_status(text: str | None) -> str:
    """GitLab's wording: "2 of 5 checklist items completed" ("" without a description)."""
    if not text:
        return ""
    count, done = task_counts(text)
    noun = "checklist item" if count == 1 else "checklist items"
    return f"{done} of {count} {noun} completed"


# GitLab's time tracking units: a day is 8 hours, a week 5 days, a month 4 weeks.
def human_duration(seconds: int | None) -> str | None:
    """Seconds as time tracking shows them ("1w 2d 3h 30m"); None for none."""
    return durations.human(seconds) if seconds else None


def time_stats(time_estimate: int | None, total_time_spent: int | None) -> dict[str, Any]:
    return {
        "time_estimate": time_estimate or 0,
        "total_time_spent": total_time_spent or 0,
        "human_time_estimate": human_duration(time_estimate),
        "human_total_time_spent": human_duration(total_time_spent),
    }


def _epic_view(e: Any) -> dict[str, Any]:
    due = e.due_date
    remaining: str | None = None
    if due is not None:
        left = (due - date.today()).days
        remaining = "Past due" if left < 0 else f"{left} day{'s' if left != 1 else ''} remaining"
    return {
        "id": e.id,
        "iid": e.iid,
        "title": e.title,
        "url": f"/groups/{e.group_path}/-/epics/{e.iid}",
        "group_id": e.group_id,
        "human_readable_end_date": due.strftime("%b %d, %Y") if due is not None else None,
        "human_readable_timestamp": remaining,
    }


def references(row: IssueRow, context: Context) -> dict[str, str]:
    return references_of("#", row, context)


def references_of(mark: str, row: Any, context: Context) -> dict[str, str]:
    """GitLab's short, relative and full references of an issue (`mark` "#") or merge request
    ("!") shown in `context`; `row` has iid, project_id, project_path and namespace_id."""
    short = f"{mark}{row.iid}"
    full = f"{row.project_path}{short}"
    if context.project_id == row.project_id:
        relative = short
    elif context.namespace_id is not None and context.namespace_id == row.namespace_id:
        relative = f"{row.project_path.rsplit('/', 1)[-1]}{short}"
    else:
        relative = full
    return {"short": short, "relative": relative, "full": full}


def issuable_head(row: Any) -> dict[str, Any]:
    """The fields every view of an issue or merge request opens with, in GitLab's order."""
    return {
        "id": row.id,
        "iid": row.iid,
        "project_id": row.project_id,
        "title": row.title,
        "description": row.description,
        "state": row.state,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


def issue_url(base: str, row: IssueRow) -> str:
    return f"{base}/{row.project_path}/-/issues/{row.iid}"


def issue(
    row: IssueRow,
    related: Related,
    base: str,
    *,
    context: Context = ANYWHERE,
    with_labels_details: bool = False,
    subscribed: bool | None = None,
) -> dict[str, Any]:
    """One issue. `context`: where it is shown (references.relative); `subscribed`: the
    caller's subscription, which only single-issue answers carry (None: left out)."""
    users = related.users
    author = users.get(row.author_id) if row.author_id is not None else None
    assignees = [user_basic(users[uid], base) for uid in row.assignee_ids if uid in users]
    closer = users.get(row.closed_by_id) if row.closed_by_id is not None else None
    labels = sorted(related.labels.get(row.id, ()), key=lambda label: label.title)
    milestone = related.milestones.get(row.milestone_id) if row.milestone_id is not None else None
    epic = related.epics.get(row.id)
    count, done = task_counts(row.description)
    api = f"{base}/api/v4/projects/{row.project_id}"
    duplicate = None
    if row.duplicate_ref:
        dup_project, dup_iid = row.duplicate_ref.split("/")
        duplicate = f"{base}/api/v4/projects/{dup_project}/issues/{dup_iid}"
    view: dict[str, Any] = {
        **issuable_head(row),
        "closed_at": iso(row.closed_at),
        "closed_by": user_basic(closer, base) if closer is not None else None,
        "labels": [label_basic(label) for label in labels]
        if with_labels_details
        else [label.title for label in labels],
        "milestone": milestone_view(milestone, base) if milestone is not None else None,
        "assignees": assignees,
        "author": user_basic(author, base) if author is not None else None,
        "type": "ISSUE" if row.issue_type == "issue" else row.issue_type.upper(),
        "assignee": assignees[0] if assignees else None,
        "user_notes_count": row.user_notes_count,
        "merge_requests_count": related.merge_requests_count.get(row.id, 0),
        "upvotes": row.upvotes,
        "downvotes": row.downvotes,
        "due_date": day(row.due_date),
        "confidential": bool(row.confidential),
        "discussion_locked": row.discussion_locked,
        "issue_type": row.issue_type,
        "web_url": issue_url(base, row),
        "time_stats": time_stats(row.time_estimate, row.total_time_spent),
        "task_completion_status": {"count": count, "completed_count": done},
        "weight": row.weight,
        "blocking_issues_count": row.blocking_issues_count or 0,
        "has_tasks": count > 0,
        "task_status": task_status(row.description),
        "_links": {
            "self": f"{api}/issues/{row.iid}",
            "notes": f"{api}/issues/{row.iid}/notes",
            "award_emoji": f"{api}/issues/{row.iid}/award_emoji",
            "project": api,
            "closed_as_duplicate_of": duplicate,
        },
        "references": references(row, context),
        "severity": "UNKNOWN",
        "moved_to_id": row.moved_to_id,
        "imported": False,
        "imported_from": "none",
        "service_desk_reply_to": None,
        "epic_iid": epic.iid if epic is not None else None,
        "epic": _epic_view(epic) if epic is not None else None,
        "iteration": None,
        "health_status": None,
    }
    if subscribed is not None:
        view["subscribed"] = subscribed
    return view


def issues(
    rows: list[IssueRow],
    related: Related,
    base: str,
    *,
    context: Context = ANYWHERE,
    with_labels_details: bool = False,
) -> list[dict[str, Any]]:
    """A page of issues (no `subscribed`, as GitLab's lists)."""
    return [
        issue(row, related, base, context=context, with_labels_details=with_labels_details) for row in rows
    ]
