"""What every repository endpoint shares: opening a project's repository for reading or
writing with the policy's checks, protected-branch rules, and the bookkeeping of a ref
update (push event in the outbox, activity time, statistics) in one transaction."""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2
from sqlalchemy import update
from sqlalchemy.orm import Session

from kiln import events, jobs, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden
from kiln.git import files as git_files
from kiln.git.diffs import DiffLimits
from kiln.git.maintenance import refresh_commit_graph
from kiln.git.refs import ZERO
from kiln.git.store import RepositoryStore, store_for
from kiln.models import Event, Project, ProjectStatistics, ProtectedBranch
from kiln.models.repository import DEVELOPER_ACCESS, MAINTAINER_ACCESS
from kiln.policy import Action, ProjectSubject
from kiln.services import (
    cross_references,
    instance_settings,
    languages,
    merge_request_diffs,
    pipeline_creation,
    subjects,
)
from kiln.services import protected_branches as protection

PUSH_REFUSED = "You are not allowed to push into this branch"
MAINTAIN = "repositories.maintain"
# Instance/project default_branch_protection → (push, merge) access levels of the default branch.
DEFAULT_PROTECTION = {
    1: (DEVELOPER_ACCESS, MAINTAINER_ACCESS),
    2: (MAINTAINER_ACCESS, MAINTAINER_ACCESS),
    3: (MAINTAINER_ACCESS, DEVELOPER_ACCESS),
    4: (MAINTAINER_ACCESS, MAINTAINER_ACCESS),
}


def store(settings: Settings) -> RepositoryStore:
    return store_for(settings.data_dir / "repositories")


def diff_limits(db: Session, settings: Settings, *, expanded: bool) -> DiffLimits:
    """The instance's diff limits, its application settings diff_max_files, diff_max_lines
    and diff_max_patch_bytes (administrators change them at run time, as in GitLab);
    `expanded` as the commit diff API shows files (compare collapses them)."""
    current = instance_settings.current(db)
    return DiffLimits(
        max_files=int(current["diff_max_files"]),
        max_lines=int(current["diff_max_lines"]),
        max_patch_bytes=int(current["diff_max_patch_bytes"]),
        big_file_bytes=settings.large_blob_bytes,
        expanded=expanded,
    )


@dataclass(slots=True)
class RepoContext:
    subject: ProjectSubject
    store: RepositoryStore
    # None while the project has no repository on disk yet (an empty project).
    repo: pygit2.Repository | None

    @property
    def project(self) -> Project:
        return self.subject.project

    @property
    def full_path(self) -> str:
        """The project's full path, as its web URLs name it."""
        return f"{self.subject.namespace.full_path}/{self.project.path}"

    @property
    def path(self) -> Path:
        return self.store.path(self.project.id)

    def ensure(self) -> pygit2.Repository:
        """The repository, created empty on first write if the project has none."""
        if self.repo is None:
            self.repo = self.store.create(self.project.id, self.project.default_branch or "main")
        return self.repo


def for_read(db: Session, actor: Actor | None, ident: str, settings: Settings) -> RepoContext:
    """404 for a project the actor can't see; 403 when they see it but not its code."""
    s = subjects.project(db, actor, ident, Action.READ_CODE, rows=True)
    st = store(settings)
    return RepoContext(subject=s, store=st, repo=st.find(s.project.id))


def for_write(db: Session, actor: Actor, ident: str, settings: Settings) -> RepoContext:
    s = subjects.project(db, actor, ident, Action.PUSH_CODE)
    st = store(settings)
    return RepoContext(subject=s, store=st, repo=st.find(s.project.id))


def protection_for(db: Session, project_id: int, branch: str) -> ProtectedBranch | None:
    """The rule that protects `branch`, as protected_branches.governing picks it."""
    return protection.governing(protection.rules_of(db, project_id), branch)


def may_push(
    db: Session, actor: Actor | None, s: ProjectSubject, branch: str, *, force: bool = False
) -> bool:
    rule = protection_for(db, s.project.id, branch)
    if rule is None:
        return policy.may_push_to(actor, s, None)
    return policy.may_push_to(
        actor, s, rule.push_access_level, force=force, allow_force=rule.allow_force_push
    )


def require_push(db: Session, actor: Actor, s: ProjectSubject, branch: str, *, force: bool = False) -> None:
    if not may_push(db, actor, s, branch, force=force):
        raise Forbidden(message=f"403 Forbidden - {PUSH_REFUSED}")


def protect_default_branch(db: Session, project: Project, level: int) -> None:
    """New projects' default branch gets the instance's default protection."""
    levels = DEFAULT_PROTECTION.get(level)
    if levels is None or not project.default_branch:
        return
    db.add(
        ProtectedBranch(
            project_id=project.id,
            name=project.default_branch,
            push_access_level=levels[0],
            merge_access_level=levels[1],
        )
    )


def adopt_first_branch(db: Session, project: Project, repo: pygit2.Repository, branch: str) -> None:
    """The first branch of an empty repository becomes the project's default branch
    (clients.md 16): HEAD names it, and it is protected as the instance protects default
    branches. Runs before record_push, which reads the README through HEAD."""
    repo.set_head(f"refs/heads/{branch}")
    project = model_of(db, project)
    project.default_branch = branch
    if protection_for(db, project.id, branch) is None:
        protect_default_branch(db, project, int(instance_settings.current(db)["default_branch_protection"]))


def model_of(db: Session, project: Any) -> Project:
    """The model behind a subject's project, for a change: reads load row records instead."""
    if isinstance(project, Project):
        return project
    found = db.get(Project, project.id)
    assert found is not None
    return found


def _commit_of(repo: pygit2.Repository, oid: str) -> pygit2.Oid | None:
    """The commit a ref points at, through annotated tags; None for no commit (a deleted ref,
    or a tag naming a tree or blob, which git allows)."""
    if oid == ZERO:
        return None
    try:
        return repo[oid].peel(pygit2.Commit).id
    except (KeyError, ValueError, pygit2.GitError):
        return None


def new_commits(
    repo: pygit2.Repository, ref: str, before: str, after: str, limit: int
) -> list[pygit2.Commit]:
    """The commits a ref update brings, newest first, at most `limit`: those after `before`,
    or for a new ref those no other branch already has."""
    tip = _commit_of(repo, after)
    if tip is None:
        return []
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL)
    if before != ZERO:
        with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
            walker.hide(pygit2.Oid(hex=before))
    else:
        for name in repo.branches.local:
            other = repo.references.get(f"refs/heads/{name}")
            if other is not None and f"refs/heads/{name}" != ref:
                with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
                    walker.hide(other.resolve().target)
    out = []
    for commit in walker:
        if len(out) >= limit:
            break
        out.append(commit)
    return out


def record_push(
    db: Session,
    project: Project,
    actor: Actor | None,
    ref: str,
    before: str | None,
    after: str | None,
    repo: pygit2.Repository,
    push_options: list[str] | None = None,
) -> Event:
    """The bookkeeping of one ref update, inside the caller's transaction: a push event for
    hooks and CI (with the `git push -o` options, for CI and merge requests to act on), the
    project's activity time, its repository statistics, and its languages when the default
    branch moved (by git push or by a commit through the API alike)."""
    before = before or ZERO
    after = after or ZERO
    ref_type = "tag" if ref.startswith("refs/tags/") else "branch"
    walked = new_commits(repo, ref, before, after, 21)
    commits = [
        {"id": str(commit.id), "message": commit.message, "title": commit.message.split("\n", 1)[0]}
        for commit in walked[:20]
    ]
    event = events.record(
        db,
        "pushed",
        project_id=project.id,
        actor=actor,
        target_type=ref_type,
        data={
            "ref": ref,
            "ref_type": ref_type,
            "before": before,
            "after": after,
            "commit_count": len(commits),
            "commits": commits,
            "action": "created" if before == ZERO else ("removed" if after == ZERO else "pushed"),
            "push_options": list(push_options or []),
        },
    )
    jobs.enqueue(db, MAINTAIN, {"project_id": project.id})
    pipeline_creation.enqueue_for_push(db, project.id, actor, ref, before, after, push_options or [])
    merge_request_diffs.enqueue_refresh(db, project.id, actor, ref, before, after, push_options or [])
    if len(walked) > 20 or any(cross_references.names_anything(commit.message) for commit in walked):
        cross_references.enqueue_for_push(db, project.id, actor, ref, before, after)
    languages.after_push(db, project, ref, after)
    project = model_of(db, project)
    project.last_activity_at = datetime.now(UTC)
    project.readme_path = git_files.readme_name(repo)
    _refresh_statistics(db, project, repo)
    return event


@jobs.handler(MAINTAIN)
def _maintain(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """After ref updates: refresh the commit-graph (idempotent; a removed project is skipped)."""
    st = store(ctx.settings)
    project_id = int(payload["project_id"])
    if st.exists(project_id):
        refresh_commit_graph(st.path(project_id))


def _refresh_statistics(db: Session, project: Project, repo: pygit2.Repository) -> None:
    count = 0
    if not repo.head_is_unborn:
        result = subprocess.run(
            ["git", "rev-list", "--count", "HEAD"], cwd=repo.path, capture_output=True, text=True, check=False
        )
        count = int(result.stdout.strip() or 0)
    size = sum(f.stat().st_size for f in Path(repo.path).rglob("*") if f.is_file())
    db.execute(
        update(ProjectStatistics)
        .where(ProjectStatistics.project_id == project.id)
        .values(commit_count=count, repository_size=size)
    )


def bookkeeping(
    db: Session, ctx: RepoContext, actor: Actor | None, ref: str, before: str | None, after: str | None
) -> None:
    """record_push in a transaction of its own (for callers that changed only the repository)."""
    with transaction(db):
        record_push(db, ctx.project, actor, ref, before, after, ctx.ensure())
