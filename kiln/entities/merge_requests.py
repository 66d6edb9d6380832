"""Merge request views (GitLab's MergeRequestBasic and MergeRequest entities): the row with
its labels, milestone, people, links, references, time stats and task list progress; the
single view adds the caller's subscription, the head pipeline, the diff refs and counts.
Every resource that shows merge requests renders them here: `queries.merge_requests.rows_by_ids`
+ `related_of`, then `merge_request(...)` per row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.commits import commit_title
from kiln.entities.compare import diff_entry
from kiln.entities.issues import ANYWHERE, Context, issuable_head, references_of, task_counts, time_stats
from kiln.entities.labels import label_basic
from kiln.entities.milestones import milestone as milestone_view
from kiln.entities.pipelines import basic_fields
from kiln.entities.pipelines import web_url as pipeline_web_url
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    from kiln.queries.merge_requests import MergeRequestRow, Related


def references(row: MergeRequestRow, context: Context) -> dict[str, str]:
    return references_of("!", row, context)


def merge_request_url(base: str, row: MergeRequestRow) -> str:
    return f"{base}/{row.project_path}/-/merge_requests/{row.iid}"


def _flag(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "t")
    return bool(value)


def merge_request(
    row: MergeRequestRow,
    related: Related,
    base: str,
    *,
    context: Context = ANYWHERE,
    with_labels_details: bool = False,
    detailed_merge_status: str | None = None,
    shown: dict[Any, Any] | None = None,
) -> dict[str, Any]:
    """One merge request as lists show it (GitLab's MergeRequestBasic). `shown`: the views of
    people and milestones rendered for the page's other rows, reused (a page's author is
    mostly one person)."""
    users = related.users
    seen: dict[Any, Any] = {} if shown is None else shown

    def person(uid: int | None) -> dict[str, Any] | None:
        if uid is None:
            return None
        view = seen.get(uid)
        if view is None:
            user = users.get(uid)
            if user is None:
                return None
            view = seen[uid] = user_basic(user, base)
        return view  # type: ignore[no-any-return]

    assignees = [view for view in map(person, row.assignee_ids) if view is not None]
    reviewers = [view for view in map(person, row.reviewer_ids) if view is not None]
    labels = sorted(related.labels.get(row.id, ()), key=lambda label: label.title)
    milestone_view_of = None
    if row.milestone_id is not None:
        key = ("milestone", row.milestone_id)
        milestone_view_of = seen.get(key)
        if milestone_view_of is None:
            found = related.milestones.get(row.milestone_id)
            if found is not None:
                milestone_view_of = seen[key] = milestone_view(found, base)
    count, done = task_counts(row.description)
    params = row.merge_params or {}
    merged_by = person(row.merged_by_id)
    view: dict[str, Any] = {
        **issuable_head(row),
        "merged_by": merged_by,
        "merge_user": person(row.merge_user_id) or merged_by,
        "merged_at": iso(row.merged_at),
        "merge_after": None,
        "prepared_at": iso(row.created_at),
        "closed_by": person(row.closed_by_id),
        "closed_at": iso(row.closed_at),
        "target_branch": row.target_branch,
        "source_branch": row.source_branch,
        "user_notes_count": row.user_notes_count,
        "upvotes": row.upvotes,
        "downvotes": row.downvotes,
        "author": person(row.author_id),
        "assignees": assignees,
        "assignee": assignees[0] if assignees else None,
        "reviewers": reviewers,
        "source_project_id": row.source_project_id,
        "target_project_id": row.project_id,
        "labels": [label_basic(label) for label in labels]
        if with_labels_details
        else [label.title for label in labels],
        "draft": bool(row.draft),
        "imported": False,
        "imported_from": "none",
        "work_in_progress": bool(row.draft),
        "milestone": milestone_view_of,
        "merge_when_pipeline_succeeds": bool(row.merge_when_pipeline_succeeds),
        "merge_status": row.merge_status,
        "detailed_merge_status": detailed_merge_status or detailed_status_of(row),
        "sha": row.head_sha,
        "merge_commit_sha": row.merge_commit_sha,
        "squash_commit_sha": row.squash_commit_sha,
        # The commit the target branch holds the change as (GitLab's merged_commit_sha): the
        # merge commit, else the squash commit, else (a fast-forward) the head.
        "merged_commit_sha": (
            (row.merge_commit_sha or row.squash_commit_sha or row.head_sha) if row.state == "merged" else None
        ),
        "discussion_locked": row.discussion_locked,
        "should_remove_source_branch": _flag(params.get("should_remove_source_branch")),
        "force_remove_source_branch": row.force_remove_source_branch,
        "allow_collaboration": bool(row.allow_collaboration),
        "allow_maintainer_to_push": bool(row.allow_collaboration),
        "reference": f"!{row.iid}",
        "references": references(row, context),
        "web_url": merge_request_url(base, row),
        "time_stats": time_stats(row.time_estimate, row.total_time_spent),
        "squash": bool(row.squash),
        "squash_on_merge": bool(row.squash),
        "task_completion_status": {"count": count, "completed_count": done},
        "has_conflicts": row.merge_status == "cannot_be_merged",
        "blocking_discussions_resolved": not row.unresolved_count,
        "approvals_before_merge": row.approvals_before_merge,
    }
    return view


def detailed_status_of(
    row: Any,
    *,
    discussions_must_resolve: bool = False,
    pipeline_must_succeed: bool = False,
    pipeline_status: str | None = None,
    pipeline_passed: bool = False,
    approvals_left: int = 0,
    needs_rebase: bool = False,
) -> str:
    """GitLab's detailed_merge_status: the first mergeability check that fails, in its order.
    `pipeline_passed` and `needs_rebase` are the merge gate's rules
    (services.merge_requests.pipeline_passed, must_fast_forward)."""
    if row.state != "opened":
        return "not_open"
    if row.merge_status == "checking":
        return "checking"
    if row.merge_status == "unchecked":
        return "unchecked"
    if row.draft:
        return "draft_status"
    if row.head_sha is None:
        return "broken_status"
    if row.merge_status in ("cannot_be_merged", "cannot_be_merged_recheck"):
        return "conflict"
    if needs_rebase:
        return "need_rebase"
    if discussions_must_resolve and row.unresolved_count:
        return "discussions_not_resolved"
    if pipeline_must_succeed:
        if pipeline_status in (
            "created",
            "waiting_for_resource",
            "preparing",
            "pending",
            "running",
            "scheduled",
        ):
            return "ci_still_running"
        if not pipeline_passed:
            return "ci_must_pass"
    if approvals_left > 0:
        return "not_approved"
    return "mergeable"


def merge_requests(
    rows: list[MergeRequestRow],
    related: Related,
    base: str,
    *,
    context: Context = ANYWHERE,
    with_labels_details: bool = False,
    simple: bool = False,
) -> list[dict[str, Any]]:
    """A page of merge requests; `simple`: GitLab's view=simple (iid, URL, title, description,
    basic state)."""
    if simple:
        return [simple_view(row, base) for row in rows]
    shown: dict[Any, Any] = {}
    return [
        merge_request(
            row, related, base, context=context, with_labels_details=with_labels_details, shown=shown
        )
        for row in rows
    ]


def simple_view(row: MergeRequestRow, base: str) -> dict[str, Any]:
    """GitLab's MergeRequestSimple."""
    return {
        **issuable_head(row),
        "web_url": merge_request_url(base, row),
    }


@dataclass(slots=True)
class Single:
    """What only the single view shows, gathered by the service."""

    subscribed: bool
    pipeline: Any  # queries.pipelines.PipelineRow or None
    diff_refs: dict[str, Any] | None
    diverged_commits_count: int
    detailed_merge_status: str
    can_merge: bool


def single(
    row: MergeRequestRow, related: Related, base: str, extra: Single, *, context: Context = ANYWHERE
) -> dict[str, Any]:
    """One merge request (GitLab's MergeRequest entity)."""
    view = merge_request(
        row, related, base, context=context, detailed_merge_status=extra.detailed_merge_status
    )
    found = extra.pipeline
    pipeline = None
    if found is not None:
        pipeline = basic_fields(found, pipeline_web_url(found, base))
        pipeline.pop("name", None)
    view.update(
        {
            "subscribed": extra.subscribed,
            "changes_count": str(row.changes_count) if row.changes_count is not None else None,
            "latest_build_started_at": iso(found.started_at) if found is not None else None,
            "latest_build_finished_at": iso(found.finished_at) if found is not None else None,
            "first_deployed_to_production_at": None,
            "pipeline": pipeline,
            "head_pipeline": pipeline,
            "diff_refs": extra.diff_refs,
            "merge_error": row.merge_error,
            "first_contribution": False,
            "user": {"can_merge": extra.can_merge},
            "diverged_commits_count": extra.diverged_commits_count,
            "rebase_in_progress": False,
        }
    )
    return view


def with_changes(view: dict[str, Any], found: Any, *, unidiff: bool = False) -> dict[str, Any]:
    """The single view with the files the latest version changes (GitLab's
    MergeRequestChanges); `found`: the version's git DiffSet."""
    view["changes"] = [diff_entry(d, unidiff=unidiff) for d in found.files]
    view["overflow"] = found.overflow
    return view


def reviewer(user: Any, state: str, created_at: Any, base: str) -> dict[str, Any]:
    """A reviewer of a merge request and where their review stands."""
    return {"user": user_basic(user, base), "state": state, "created_at": iso(created_at)}


def diff_commit(c: Any, web_base: str, parent_ids: list[str] | None = None) -> dict[str, Any]:
    """A commit of a merge request version (GitLab's Commit entity read from the version's
    stored commit; no parents are kept there: `parent_ids` where the caller read them)."""
    message = c.message or ""
    return {
        "id": c.sha,
        "short_id": c.sha[:8],
        "created_at": iso(c.committed_date),
        "parent_ids": [] if parent_ids is None else parent_ids,
        "title": commit_title(message),
        "message": message,
        "author_name": c.author_name,
        "author_email": c.author_email,
        "authored_date": iso(c.authored_date),
        "committer_name": c.committer_name,
        "committer_email": c.committer_email,
        "committed_date": iso(c.committed_date),
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"{web_base}/-/commit/{c.sha}",
    }
