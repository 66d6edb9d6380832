"""A project's languages: computed from its default branch once per commit and kept on the
project row with the primary language, which the `with_programming_language` filter reads."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.git.errors import RefNotFound
from kiln.git.languages import language_bytes, shares
from kiln.git.refs import resolve_commit
from kiln.models import Project
from kiln.policy import Action, ProjectSubject
from kiln.services import subjects
from kiln.services.repositories import store


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
    project = s.project
    st = store(settings)
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
