"""Commit views composed like GitLab's entities: the basic commit (shared by every endpoint
that shows one: branches, tags, compare) ⊂ with stats ⊂ detail; the refs holding a commit;
comments. Commit times keep their own UTC offset, as git records them and GitLab renders them
(`2012-05-28T04:42:42.000-07:00`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kiln.entities._format import git_text, git_time, iso
from kiln.entities.pipelines import pipeline_basic_at
from kiln.entities.users import user_basic

if TYPE_CHECKING:
    import pygit2

    from kiln.git.history import Stats
    from kiln.queries.commits import CommitNoteRow
    from kiln.queries.pipelines import PipelineRow
    from kiln.queries.users import UserRow


NO_MESSAGE = "No commit message"


def commit_title(message: str) -> str:
    """The first line, whole (GitLab's full_title)."""
    if not message.strip():
        return NO_MESSAGE
    return message.replace("\r", "\n").split("\n", 1)[0]


def commit_basic(commit: pygit2.Commit, web_base: str) -> dict[str, Any]:
    """GitLab's Commit entity; `web_base` is the project's web URL."""
    sha = str(commit.id)
    message = git_text(commit.raw_message)
    author, committer = commit.author, commit.committer
    committed = git_time(committer.time)
    return {
        "id": sha,
        "short_id": sha[:8],
        "created_at": committed,
        "parent_ids": [str(p) for p in commit.parent_ids],
        "title": commit_title(message),
        "message": message,
        "author_name": git_text(author.raw_name),
        "author_email": git_text(author.raw_email),
        "authored_date": git_time(author.time),
        "committer_name": git_text(committer.raw_name),
        "committer_email": git_text(committer.raw_email),
        "committed_date": committed,
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"{web_base}/-/commit/{sha}",
    }


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
    commit: pygit2.Commit,
    project_web_url: str,
    project_id: int,
    s: Stats | None,
    pipeline: PipelineRow | None = None,
) -> dict[str, Any]:
    """Single-commit and create responses: stats when asked for; the newest pipeline's
    status and record (null when there is none, or the caller may not see pipelines)."""
    view = commit_basic(commit, project_web_url)
    if s is not None:
        view["stats"] = stats_view(s)
    view["status"] = pipeline.status if pipeline is not None else None
    view["project_id"] = project_id
    view["last_pipeline"] = pipeline_basic_at(pipeline, project_web_url) if pipeline is not None else None
    return view


def commit_ref(kind: str, name: str) -> dict[str, str]:
    return {"type": kind, "name": name}


def commit_note(note: CommitNoteRow, author: UserRow, base: str) -> dict[str, Any]:
    return {
        "note": note.note,
        "path": note.path,
        "line": note.line,
        "line_type": note.line_type,
        "author": user_basic(author, base) | {"created_at": iso(author.created_at)},
        "created_at": iso(note.created_at),
    }
