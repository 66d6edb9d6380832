"""A project's languages: computed from its default branch once per commit and kept on the
project row with the primary language, which the `with_programming_language` filter reads.

A push that moves the default branch enqueues their computation (a job in the push's
transaction, as GitLab's post-receive enqueues DetectRepositoryLanguagesWorker), so the
filter finds a project without anyone having asked for its languages first."""

from __future__ import annotations

from typing import Any, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kiln import jobs, policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.git.errors import RefNotFound
from kiln.git.languages import language_bytes, shares
from kiln.git.refs import ZERO, resolve_commit
from kiln.models import Project
from kiln.policy import Action, ProjectSubject
from kiln.services import repositories, subjects

DETECT = "languages.detect"


class _Cached(Protocol):
    """What the computation reads of a project (a row record or the model)."""

    @property
    def id(self) -> int: ...
    @property
    def default_branch(self) -> str | None: ...
    @property
    def languages(self) -> Any: ...
    @property
    def languages_sha(self) -> str | None: ...


def of_project(db: Session, actor: Actor | None, ident: str, settings: Settings) -> dict[str, float]:
    """A project's languages; a project whose code the actor may not read has none to show
    (GitLab answers its 404)."""
    s = subjects.project(db, actor, ident, rows=True)
    policy.require_visible(actor, Action.READ_CODE, s, "Project")
    return for_project(db, s, settings)


def for_project(db: Session, s: ProjectSubject, settings: Settings) -> dict[str, float]:
    """The caller has checked that the actor may read the code. `{}` for an empty repository.
    Past settings.max_tree_entries entries, the shares of the files counted until then.
    The subject is row records: the cache is written by one UPDATE, not through a model."""
    return _computed(db, s.project, settings)


def after_push(db: Session, project: Any, ref: str, after: str | None) -> None:
    """Inside the push's transaction: when `ref` is the project's default branch and now
    names a commit, compute the languages in the background."""
    if after and after != ZERO and project.default_branch and ref == f"refs/heads/{project.default_branch}":
        jobs.enqueue(db, DETECT, {"project_id": project.id})


@jobs.handler(DETECT)
def _detect(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Idempotent: a project already computed for its branch's commit is left as it is, and
    a removed project is skipped."""
    row = ctx.db.execute(
        select(Project.id, Project.default_branch, Project.languages, Project.languages_sha).where(
            Project.id == int(payload["project_id"])
        )
    ).first()
    if row is not None:
        _computed(ctx.db, row, ctx.settings)


def _computed(db: Session, project: _Cached, settings: Settings) -> dict[str, float]:
    st = repositories.store(settings)
    repo = st.find(project.id)
    if repo is None or repo.head_is_unborn:
        return {}
    try:
        commit = resolve_commit(repo, project.default_branch or None)
    except RefNotFound:
        return {}
    sha = str(commit.id)
    if project.languages_sha == sha and project.languages is not None:
        return dict(project.languages)
    sizes = language_bytes(
        repo,
        commit.tree,
        large_blob_bytes=settings.large_blob_bytes,
        max_entries=settings.max_tree_entries,
    )
    found = shares(sizes)
    primary = next(iter(found), None)
    # A short write of the cache alone; updated_at keeps its value (nothing the owner changed).
    with transaction(db):
        db.execute(
            update(Project)
            .where(Project.id == project.id)
            .values(
                languages=found,
                languages_sha=sha,
                primary_language=primary,
                updated_at=Project.updated_at,
            )
        )
    return found
