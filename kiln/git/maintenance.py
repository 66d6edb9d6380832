"""Keeping repositories fast to read: a commit-graph with changed-path Bloom filters turns
path-limited history and blame from a walk of every commit into a walk of the few that
touched the path."""

from __future__ import annotations

from pathlib import Path

from kiln.git import timed


def refresh_commit_graph(repo_path: Path) -> None:
    """Idempotent; cheap when nothing changed (git rewrites only what is new)."""
    timed.run(
        ["git", "commit-graph", "write", "--reachable", "--changed-paths", "--split"],
        cwd=repo_path,
        capture_output=True,
        check=False,
    )
