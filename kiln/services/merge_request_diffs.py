"""Diff versions of merge requests: one recorded when a merge request is opened and after each
push that moves its source branch (or its target branch's merge base), with the commits it
held; the versions routes read them back.

The source head is brought into the target project's repository (a fork's commits are
fetched) and kept there under `refs/merge-requests/<iid>/head`, and every version's head
under `refs/keep-around/<sha>`, so versions, diffs and merges read one repository and stay
readable after a force-push or a deleted source branch, as GitLab keeps them."""

from __future__ import annotations

import contextlib
import html
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln import jobs
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import NotFound
from kiln.git import diffs as git_diffs
from kiln.git import picks
from kiln.git.refs import ZERO, branch_tip
from kiln.models import MergeRequest, MergeRequestDiff, MergeRequestDiffCommit
from kiln.models.merge_requests import COLLECTED, EMPTY, MERGED, OPENED, OVERFLOW, UNCHECKED
from kiln.models.notes import MERGE_REQUEST as MERGE_REQUEST_NOTEABLE
from kiln.pagination import Page, PageResult
from kiln.queries import merge_request_diffs as reads
from kiln.queries import merge_requests as mr_finder
from kiln.queries.merge_request_diffs import Version, VersionCommit
from kiln.services import (
    issuables,
    merge_request_events,
    pipeline_creation,
    repositories,
    subjects,
)


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
    unchecked merge status. A version after the first changes the row under whoever read it
    (a merge checking the older head): its lock_version moves on. The caller holds the row
    (it is new, or locked). The flush gives the version its id."""
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
    # Past the instance's file limit GitLab's collection stops: the version overflows and
    # its real_size reads "<limit>+".
    max_files = repositories.diff_limits(db, settings, expanded=True).max_files
    state = COLLECTED if commits else EMPTY
    if files > max_files:
        state, files = OVERFLOW, max_files
    version = MergeRequestDiff(
        merge_request_id=mr.id,
        head_commit_sha=now.head,
        base_commit_sha=now.base,
        start_commit_sha=now.start,
        state=state,
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
    if mr.latest_diff_id is not None:
        mr.lock_version = MergeRequest.lock_version + 1  # type: ignore[assignment]
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


# ---------------------------------------------------------------------------- versions API


def list_versions(db: Session, actor: Actor | None, ident: str, iid: int, page: Page) -> PageResult:
    """The merge request's versions, newest first."""
    s = subjects.merge_request(db, actor, ident, iid)
    return reads.versions(db, s.merge_request.id, page)


def get_version(
    db: Session, settings: Settings, actor: Actor | None, ident: str, iid: int, version_id: int
) -> Version:
    """One version with its commits (newest first) and its diff, base to head, read from the
    target repository (where every version's head is kept) within the instance's limits.
    Another merge request's version is not found."""
    s = subjects.merge_request(db, actor, ident, iid)
    version = reads.version(db, s.merge_request.id, version_id)
    if version is None:
        raise NotFound(message="404 Not found")
    rows = reads.commits(db, version.id)
    full_path = f"{s.project.namespace.full_path}/{s.project.project.path}"
    repo = repositories.store(settings).find(s.project.project.id)
    if repo is None:
        return Version(version, [VersionCommit(r, []) for r in rows], [], full_path)
    commits = [VersionCommit(r, _parents(repo, r.sha)) for r in rows]
    head = _commit(repo, version.head_commit_sha)
    old = _commit(repo, version.base_commit_sha or version.start_commit_sha)
    if head is None:
        return Version(version, commits, [], full_path)
    found = git_diffs.tree_diff(repo, old, head, repositories.diff_limits(db, settings, expanded=True))
    return Version(version, commits, found.files, full_path)


def _commit(repo: pygit2.Repository, sha: str | None) -> pygit2.Commit | None:
    if not sha:
        return None
    try:
        return repo[sha].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def _parents(repo: pygit2.Repository, sha: str) -> list[str]:
    commit = _commit(repo, sha)
    return [str(p) for p in commit.parent_ids] if commit is not None else []


# ---------------------------------------------------------------------------- pushes
# A push to a branch, after it is recorded (kiln.services.repositories.record_push): the open
# merge requests whose source it is get a new version, a system note listing the commits it
# added, their approvals reset (when the project says so), automatic merge cancelled and an
# update event; those targeting it are checked again, and marked merged when the push brought
# their head into the branch. `git push -o merge_request.*` options act afterwards.

REFRESH = "merge_requests.refresh"
AFTER_CHANGE = "merge_requests.after_change"
_HEADS = "refs/heads/"


def enqueue_refresh(
    db: Session,
    project_id: int,
    actor: Actor | None,
    ref: str,
    before: str,
    after: str,
    push_options: list[str],
) -> None:
    """Queue the merge request work of one branch update (tags move no merge request)."""
    if not ref.startswith(_HEADS):
        return
    pipeline_creation.enqueue_push_job(db, REFRESH, project_id, actor, ref, before, after, push_options)


def after_change(db: Session, actor: Actor | None, mr: MergeRequest) -> None:
    """After a merge request is opened (or its branches change): its merge request pipeline,
    queued in the caller's transaction (the merge request services queue the mergeability
    check themselves). The one entry point they call."""
    jobs.enqueue(db, AFTER_CHANGE, {"merge_request_id": mr.id, "user_id": actor.id if actor else None})


@jobs.handler(AFTER_CHANGE)
def _after_change(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    mr = mr_finder.locked(ctx.db, int(payload["merge_request_id"]))
    if mr is None or mr.state != OPENED:
        return
    from kiln.services import merge_request_pipelines

    merge_request_pipelines.create_quietly(
        ctx.db, ctx.settings, pipeline_creation.job_actor(ctx.db, payload.get("user_id")), mr
    )


@jobs.handler(REFRESH)
def _refresh(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    db, settings = ctx.db, ctx.settings
    project_id = int(payload["project_id"])
    branch = str(payload["ref"])[len(_HEADS) :]
    before, after = str(payload.get("before") or ZERO), str(payload.get("after") or ZERO)
    actor = pipeline_creation.job_actor(db, payload.get("user_id"))
    options = [str(o) for o in payload.get("push_options") or []]
    # Each merge request is locked as it is read (a merge or close committed meanwhile is
    # seen, not overwritten) and checked still open before anything is written to it.
    for mr in reads.open_from_source(db, project_id, branch):
        if mr.state == OPENED:
            _source_moved(db, settings, actor, mr, before, after, options)
    if after != ZERO:
        _target_moved(db, settings, actor, project_id, branch, before, after)
    if after != ZERO and options:
        from kiln.services import merge_request_pushes

        merge_request_pushes.apply(db, settings, actor, project_id, branch, options)


def _note(db: Session, actor: Actor | None, mr: MergeRequest, body: str) -> None:
    issuables.note(db, actor, MERGE_REQUEST_NOTEABLE, mr, body)


def _branch_note(db: Session, actor: Actor | None, mr: MergeRequest, verb: str) -> None:
    """GitLab's note of a source branch deleted or pushed again."""
    _note(db, actor, mr, f"{verb} source branch `{mr.source_branch}`")


def _source_moved(
    db: Session,
    settings: Settings,
    actor: Actor | None,
    mr: MergeRequest,
    before: str,
    after: str,
    options: list[str],
) -> None:
    if after == ZERO:
        # The versions stay (their heads are kept around); the thread says the branch went.
        _branch_note(db, actor, mr, "deleted")
        return
    if before == ZERO:
        _branch_note(db, actor, mr, "restored")
    previous_id, oldrev = mr.latest_diff_id, mr.head_sha
    known = set(reads.commit_shas(db, previous_id))
    version = record_version(db, settings, mr)
    if version is None:
        return
    added = [c for c in reversed(reads.commits(db, version.id)) if c.sha not in known]
    if added:
        _note(db, actor, mr, commits_note(db, mr, version.id, added, oldrev))
    # Imported here: merges and approvals import this module.
    from kiln.services import approvals, merge_request_pipelines, merges

    # The project's reset_approvals_on_push is read by the approvals service.
    approvals.reset_on_push(db, actor, mr)
    if mr.merge_when_pipeline_succeeds:
        merges.cancel_auto_merge(db, mr, "source branch was updated", actor)
    merges.enqueue_check(db, mr)
    merge_request_events.record(db, actor, mr, merge_request_events.UPDATE)
    # `-o ci.skip` (a rebase with skip_ci) skips the merge request pipeline as the branch's.
    if not pipeline_creation.skip_requested("", options):
        merge_request_pipelines.create_quietly(db, settings, actor, mr)


def commits_note(
    db: Session, mr: MergeRequest, version_id: int, added: list[MergeRequestDiffCommit], oldrev: str | None
) -> str:
    """GitLab's "added N commits" note: the count, each commit's short id and title, and a
    link comparing the new version with the previous head."""
    n = len(added)
    items = "".join(f"<li>{c.sha[:8]} - {html.escape(_title(c.message))}</li>" for c in added)
    path = reads.project_path(db, mr.project_id)
    link = f"/{path}/-/merge_requests/{mr.iid}/diffs?diff_id={version_id}"
    if oldrev:
        link += f"&start_sha={oldrev}"
    return f"added {n} commit{'s' if n != 1 else ''}\n\n<ul>{items}</ul>\n\n[Compare with previous version]({link})"


def _title(message: str) -> str:
    return message.replace("\r", "\n").split("\n", 1)[0] if message.strip() else "No commit message"


def _target_moved(
    db: Session,
    settings: Settings,
    actor: Actor | None,
    project_id: int,
    branch: str,
    before: str,
    after: str,
) -> None:
    """Merge requests into the branch: checked again; one whose head the push brought into
    the branch is merged (GitLab's manual merge: no merge commit of its own)."""
    targeting = reads.open_into(db, project_id, branch)
    if not targeting:
        return
    from kiln.services import merges

    merges.recheck_target(db, project_id, branch)
    repo = repositories.store(settings).find(project_id)
    if repo is None:
        return
    for mr in targeting:
        if mr.state != OPENED:
            continue
        latest = db.get(MergeRequestDiff, mr.latest_diff_id) if mr.latest_diff_id is not None else None
        # An empty merge request (no commits of its own) is not merged by a push.
        if latest is None or latest.state == EMPTY or not mr.head_sha:
            continue
        if _brought_in(repo, mr.head_sha, before, after):
            _merged_by_push(db, actor, mr)


def _brought_in(repo: pygit2.Repository, head: str, before: str, after: str) -> bool:
    """`head` is in the branch now and was not before."""
    try:
        tip, sha = pygit2.Oid(hex=after), pygit2.Oid(hex=head)
        if tip != sha and not repo.descendant_of(tip, sha):
            return False
        if before == ZERO:
            return True
        old = pygit2.Oid(hex=before)
        return old != sha and not repo.descendant_of(old, sha)
    except (KeyError, ValueError, pygit2.GitError):
        return False


def _merged_by_push(db: Session, actor: Actor | None, mr: MergeRequest) -> None:
    mr.state = MERGED
    mr.merged_at = datetime.now(UTC)
    mr.merged_by_id = actor.id if actor is not None else None
    mr.merge_commit_sha = None
    mr.merge_when_pipeline_succeeds = False
    mr.lock_version = MergeRequest.lock_version + 1  # type: ignore[assignment]
    _note(db, actor, mr, "merged")
    merge_request_events.record(db, actor, mr, merge_request_events.MERGE)
