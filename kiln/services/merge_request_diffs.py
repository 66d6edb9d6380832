"""Diff versions of merge requests: one recorded when a merge request is opened and after each
push that moves its source branch (or its target branch's merge base), with the commits it
held; the versions routes read them back.

The source head is brought into the target project's repository (a fork's commits are
fetched) and kept there under `refs/merge-requests/<iid>/head`, and every version's head
under `refs/keep-around/<sha>`, so versions, diffs and merges read one repository and stay
readable after a force-push or a deleted source branch, as GitLab keeps them."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime

import pygit2
from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.git import diffs as git_diffs
from kiln.git import picks
from kiln.git.refs import branch_tip
from kiln.models import MergeRequest, MergeRequestDiff, MergeRequestDiffCommit
from kiln.models.merge_requests import COLLECTED, EMPTY, UNCHECKED
from kiln.services import repositories


@dataclass(frozen=True, slots=True)
class Heads:
    """Where a merge request stands in its target repository: the source head (None when the
    source branch is gone), the target branch's tip and their merge base."""

    head: str | None
    start: str | None
    base: str | None


def head_ref(iid: int) -> str:
    return f"refs/merge-requests/{iid}/head"


def keep_around_ref(sha: str) -> str:
    return f"refs/keep-around/{sha}"


def target_repository(settings: Settings, mr: MergeRequest) -> pygit2.Repository:
    return repositories.store(settings).open(mr.project_id)


def heads(settings: Settings, mr: MergeRequest, repo: pygit2.Repository | None = None) -> Heads:
    """The source branch's head (brought into the target repository and its head ref moved
    there), the target branch's tip and their merge base, as they are now."""
    repo = repo or target_repository(settings, mr)
    head = _bring_source_head(settings, mr, repo)
    target = branch_tip(repo, mr.target_branch)
    base = None
    if head is not None and target is not None:
        found = git_diffs.merge_base(repo, pygit2.Oid(hex=head), target)
        base = str(found) if found is not None else None
    return Heads(head=head, start=str(target) if target is not None else None, base=base)


def _bring_source_head(settings: Settings, mr: MergeRequest, repo: pygit2.Repository) -> str | None:
    """The source branch's tip, copied into the target repository when it lives in a fork."""
    if mr.source_project_id is None:
        return None
    if mr.source_project_id == mr.project_id:
        tip = branch_tip(repo, mr.source_branch)
        return str(tip) if tip is not None else None
    store = repositories.store(settings)
    try:
        source = store.open(mr.source_project_id)
    except (KeyError, OSError, pygit2.GitError):
        return None
    tip = branch_tip(source, mr.source_branch)
    if tip is None:
        return None
    picks.fetch_commit(repo, store.path(mr.source_project_id), str(tip))
    return str(tip)


def _point(repo: pygit2.Repository, ref: str, sha: str) -> None:
    repo.references.create(ref, pygit2.Oid(hex=sha), force=True)


def record_version(db: Session, settings: Settings, mr: MergeRequest) -> MergeRequestDiff | None:
    """A new version when the source head or the merge base moved since the latest one (None
    otherwise, or when the source branch is gone), in the caller's transaction: its commits,
    the refs that keep it, and the merge request's `head_sha`, `latest_diff_id` and an
    unchecked merge status. The flush gives the version its id."""
    repo = target_repository(settings, mr)
    now = heads(settings, mr, repo)
    if now.head is None or now.start is None:
        return None
    if mr.latest_diff_id is not None:
        latest = db.get(MergeRequestDiff, mr.latest_diff_id)
        if latest is not None and (latest.head_commit_sha, latest.base_commit_sha) == (now.head, now.base):
            return None
    _point(repo, head_ref(mr.iid), now.head)
    _point(repo, keep_around_ref(now.head), now.head)
    head_oid = pygit2.Oid(hex=now.head)
    if now.base is not None:
        commits = git_diffs.commits_between(repo, pygit2.Oid(hex=now.base), head_oid)
        old_tree: pygit2.Tree = repo[now.base].peel(pygit2.Commit).tree
    else:
        commits = git_diffs.commits_between(repo, pygit2.Oid(hex=now.start), head_oid)
        old_tree = repo[now.start].peel(pygit2.Commit).tree
    files = len(old_tree.diff_to_tree(repo[now.head].peel(pygit2.Commit).tree))
    version = MergeRequestDiff(
        merge_request_id=mr.id,
        head_commit_sha=now.head,
        base_commit_sha=now.base,
        start_commit_sha=now.start,
        state=COLLECTED if commits else EMPTY,
        commits_count=len(commits),
        files_count=files,
    )
    db.add(version)
    db.flush()
    for order, commit in enumerate(reversed(commits)):
        db.add(
            MergeRequestDiffCommit(
                merge_request_diff_id=version.id,
                relative_order=order,
                sha=str(commit.id),
                message=commit.message,
                author_name=commit.author.name,
                author_email=commit.author.email,
                authored_date=datetime.fromtimestamp(commit.author.time, UTC),
                committer_name=commit.committer.name,
                committer_email=commit.committer.email,
                committed_date=datetime.fromtimestamp(commit.committer.time, UTC),
            )
        )
    mr.head_sha = now.head
    mr.latest_diff_id = version.id
    mr.merge_status = UNCHECKED
    db.flush()
    return version


def forget_refs(settings: Settings, mr: MergeRequest) -> None:
    """After a merge request is deleted (and committed): its head ref goes; keep-around refs
    stay, as commits may still be shown elsewhere."""
    with contextlib.suppress(KeyError, OSError, pygit2.GitError):
        repo = target_repository(settings, mr)
        ref = repo.references.get(head_ref(mr.iid))
        if ref is not None:
            ref.delete()
