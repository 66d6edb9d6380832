"""Issue link views: a linked issue (GitLab's RelatedIssue entity: the issue view with its
link's id, type and times) and a link with both its ends (GitLab's IssueLink entity)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.issues import Context, issue

if TYPE_CHECKING:
    from kiln.queries.issue_links import LinkedIssues, OneLink


def _context(project_id: int, namespace_id: int) -> Context:
    return Context(project_id=project_id, namespace_id=namespace_id)


def linked_issues(found: LinkedIssues, base: str) -> list[dict[str, Any]]:
    project = found.subject.project.project
    context = _context(project.id, project.namespace_id)
    views = []
    for item in found.items:
        view = issue(item.issue, found.related, base, context=context)
        view.update(
            issue_link_id=item.link.id,
            link_type=item.link_type,
            link_created_at=iso(item.link.created_at),
            link_updated_at=iso(item.link.updated_at),
        )
        views.append(view)
    return views


def issue_link(found: OneLink, base: str) -> dict[str, Any]:
    project = found.subject.project.project
    context = _context(project.id, project.namespace_id)
    return {
        "source_issue": issue(found.source, found.related, base, context=context),
        "target_issue": issue(found.target, found.related, base, context=context),
        "link_type": found.link_type,
    }
