"""Views of merge request diff versions (GitLab's MergeRequestDiff and MergeRequestDiffFull
entities): the version, and with its commits and diffs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.compare import diff_entry
from kiln.entities.merge_requests import diff_commit
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
    return diff_commit(c.row, web_base, c.parent_ids)


def version_full(found: Version, external_url: str) -> dict[str, Any]:
    web_base = f"{external_url.rstrip('/')}/{found.full_path}"
    return version_view(found.version) | {
        "commits": [version_commit(c, web_base) for c in found.commits],
        "diffs": [diff_entry(d) for d in found.diffs],
    }
