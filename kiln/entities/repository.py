"""Views of repository objects: the basic commit (shared by every endpoint that shows one),
branches, tags and protected branches. Commit and tag times keep their own UTC offset, as
git records them and GitLab renders them (`2012-05-28T04:42:42.000-07:00`)."""

from __future__ import annotations

from typing import Any, Protocol
from urllib.parse import quote

import pygit2

from kiln.entities._format import git_time
from kiln.git.branches import TagRef
from kiln.models import ProtectedBranch
from kiln.models.repository import ADMIN_ACCESS, DEVELOPER_ACCESS, MAINTAINER_ACCESS, NO_ACCESS

ACCESS_DESCRIPTIONS = {
    NO_ACCESS: "No one",
    DEVELOPER_ACCESS: "Developers + Maintainers",
    MAINTAINER_ACCESS: "Maintainers",
    ADMIN_ACCESS: "Instance admins",
}
NO_MESSAGE = "No commit message"


def project_web_url(full_path: str, base: str) -> str:
    return f"{base}/{full_path}"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def commit_title(message: str) -> str:
    """The first line, whole (GitLab's full_title)."""
    if not message.strip():
        return NO_MESSAGE
    return message.replace("\r", "\n").split("\n", 1)[0]


def commit_basic(commit: pygit2.Commit, web_base: str) -> dict[str, Any]:
    """GitLab's Commit entity; `web_base` is the project's web URL."""
    sha = str(commit.id)
    message = _text(commit.raw_message)
    author, committer = commit.author, commit.committer
    committed = git_time(committer.time)
    return {
        "id": sha,
        "short_id": sha[:8],
        "created_at": committed,
        "parent_ids": [str(p) for p in commit.parent_ids],
        "title": commit_title(message),
        "message": message,
        "author_name": _text(author.raw_name),
        "author_email": _text(author.raw_email),
        "authored_date": git_time(author.time),
        "committer_name": _text(committer.raw_name),
        "committer_email": _text(committer.raw_email),
        "committed_date": committed,
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"{web_base}/-/commit/{sha}",
    }


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


def tag(t: TagRef, web_base: str) -> dict[str, Any]:
    annotation = t.annotation
    message = ""
    created_at = None
    if annotation is not None:
        message = _text(annotation.raw_message)
        # git ends a tag message with a newline; the API shows the message as it was given.
        message = message[:-1] if message.endswith("\n") else message
        tagger = annotation.tagger
        if tagger is not None:
            created_at = git_time(tagger.time)
    return {
        "name": t.name,
        "message": message,
        "target": t.target,
        "commit": commit_basic(t.commit, web_base) if t.commit is not None else None,
        "release": None,
        "protected": False,
        "created_at": created_at,
    }


def access_level(rule_id: int, level: int) -> dict[str, Any]:
    """One access level of a rule (kiln keeps one per kind, so it shares the rule's id)."""
    return {
        "id": rule_id,
        "access_level": level,
        "access_level_description": ACCESS_DESCRIPTIONS.get(level, str(level)),
        "deploy_key_id": None,
        "user_id": None,
        "group_id": None,
    }


def protected_branch(rule: ProtectedBranch) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "push_access_levels": [access_level(rule.id, rule.push_access_level)],
        "merge_access_levels": [access_level(rule.id, rule.merge_access_level)],
        "allow_force_push": rule.allow_force_push,
        "unprotect_access_levels": [access_level(rule.id, rule.unprotect_access_level)],
        "code_owner_approval_required": rule.code_owner_approval_required,
    }
