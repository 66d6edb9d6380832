"""Views of merge request diff versions (GitLab's MergeRequestDiff and MergeRequestDiffFull
entities): the version, and with its commits and diffs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.commits import commit_title
from kiln.entities.compare import diff_entry
from kiln.models.merge_requests import OVERFLOW

if TYPE_CHECKING:
    from kiln.models import MergeRequestDiff
    from kiln.queries.merge_request_diffs import Version, VersionCommit


def real_size(v: MergeRequestDiff) -> str:
    """GitLab's real_size: the files count, "<n>+" when the diff overflowed its limits."""
    return f"{v.files_count}+" if v.state == OVERFLOW else str(v.files_count)


def version_view(v: MergeRequestDiff) -> dict[str, Any]:
    return {
        "id": v.id,
        "head_commit_sha": v.head_commit_sha,
        "base_commit_sha": v.base_commit_sha,
        "start_commit_sha": v.start_commit_sha,
        "created_at": iso(v.created_at),
        "merge_request_id": v.merge_request_id,
        "state": v.state,
        "real_size": real_size(v),
        "patch_id_sha": None,
    }


def version_commit(c: VersionCommit, web_base: str) -> dict[str, Any]:
    r = c.row
    committed = iso(r.committed_date)
    return {
        "id": r.sha,
        "short_id": r.sha[:8],
        "created_at": committed,
        "parent_ids": c.parent_ids,
        "title": commit_title(r.message),
        "message": r.message,
        "author_name": r.author_name,
        "author_email": r.author_email,
        "authored_date": iso(r.authored_date),
        "committer_name": r.committer_name,
        "committer_email": r.committer_email,
        "committed_date": committed,
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"{web_base}/-/commit/{r.sha}",
    }


def version_full(found: Version, external_url: str) -> dict[str, Any]:
    web_base = f"{external_url.rstrip('/')}/{found.full_path}"
    return version_view(found.version) | {
        "commits": [version_commit(c, web_base) for c in found.commits],
        "diffs": [diff_entry(d) for d in found.diffs],
    }
