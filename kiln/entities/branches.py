"""The branch view: git's data with what the branches service decided (protection, push
rights, merged into the default branch)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from kiln.entities.commits import commit_basic
from kiln.records import BranchRecord


def branch(b: BranchRecord, web_base: str) -> dict[str, Any]:
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
