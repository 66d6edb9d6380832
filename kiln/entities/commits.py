"""Commit views built on the basic commit (kiln.entities.repository), composed like
GitLab's entities: commit ⊂ with stats ⊂ detail; the refs holding a commit; comments."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.repository import commit_basic
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    import pygit2

    from kiln.git.history import Stats
    from kiln.models import CommitNote, User


def commit_view(
    commit: pygit2.Commit, project_web_url: str, trailers: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    """With parsed `trailers` (the list's `trailers=true`): the last value per key, and
    every value per key."""
    view = commit_basic(commit, project_web_url)
    if trailers:
        view["trailers"] = {key: values[-1] for key, values in trailers.items()}
        view["extended_trailers"] = {key: list(values) for key, values in trailers.items()}
    return view


def stats_view(s: Stats) -> dict[str, int]:
    return {"additions": s.additions, "deletions": s.deletions, "total": s.total}


def commit_with_stats(
    commit: pygit2.Commit, project_web_url: str, s: Stats, trailers: dict[str, list[str]] | None = None
) -> dict[str, Any]:
    return commit_view(commit, project_web_url, trailers) | {"stats": stats_view(s)}


def commit_detail(
    commit: pygit2.Commit, project_web_url: str, project_id: int, s: Stats | None
) -> dict[str, Any]:
    """Single-commit and create responses: stats when asked for; no pipelines yet."""
    view = commit_basic(commit, project_web_url)
    if s is not None:
        view["stats"] = stats_view(s)
    view["status"] = None
    view["project_id"] = project_id
    view["last_pipeline"] = None
    return view


def commit_ref(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "name": name}


def commit_note(note: CommitNote, author: User, base: str) -> dict[str, Any]:
    return {
        "note": note.note,
        "path": note.path,
        "line": note.line,
        "line_type": note.line_type,
        "author": user_basic(author, base) | {"created_at": iso(author.created_at)},
        "created_at": iso(note.created_at),
    }
