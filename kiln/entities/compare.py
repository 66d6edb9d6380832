"""Views of a comparison between two commits with its commits and diff entries, and of a
repository's contributors (GitLab's Compare, Diff and Contributor entities)."""

from __future__ import annotations

from typing import Any

from kiln.entities.commits import commit_basic
from kiln.git.diffs import Comparison, Contributor, FileDiff


def diff_entry(d: FileDiff, *, unidiff: bool = False) -> dict[str, Any]:
    return {
        "diff": d.unidiff() if unidiff else d.diff,
        "collapsed": d.collapsed,
        "too_large": d.too_large,
        "new_path": d.new_path,
        "old_path": d.old_path,
        "a_mode": d.a_mode,
        "b_mode": d.b_mode,
        "new_file": d.new_file,
        "renamed_file": d.renamed_file,
        "deleted_file": d.deleted_file,
        "generated_file": False,
    }


def compare_view(c: Comparison, project_web_url: str, *, unidiff: bool = False) -> dict[str, Any]:
    commits = [commit_basic(commit, project_web_url) for commit in c.commits]
    return {
        "commit": commits[-1] if commits else None,
        "commits": commits,
        "diffs": [diff_entry(d, unidiff=unidiff) for d in c.diffs],
        "compare_timeout": c.overflow,
        "compare_same_ref": c.same,
        "web_url": f"{project_web_url}/-/compare/{c.base_sha}...{c.head_sha}",
    }


def contributor(c: Contributor) -> dict[str, Any]:
    return {
        "name": c.name,
        "email": c.email,
        "commits": c.commits,
        "additions": c.additions,
        "deletions": c.deletions,
    }
