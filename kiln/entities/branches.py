"""The branch view: git's data with what the branches service decided (protection, push
rights, merged into the default branch)."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

import pygit2

from kiln.entities.commits import commit_basic


class BranchFacts(Protocol):
    """What a branch view shows besides git's data (filled by the branches service)."""

    name: str
    commit: pygit2.Commit
    merged: bool
    protected: bool
    developers_can_push: bool
    developers_can_merge: bool
    can_push: bool
    default: bool


def branch(b: BranchFacts, web_base: str) -> dict[str, Any]:
    return {
        "name": b.name,
        "commit": commit_basic(b.commit, web_base),
        "merged": b.merged,
        "protected": b.protected,
        "developers_can_push": b.developers_can_push,
        "developers_can_merge": b.developers_can_merge,
        "can_push": b.can_push,
        "default": b.default,
        "web_url": f"{web_base}/-/tree/{quote(b.name, safe='/')}",
    }
