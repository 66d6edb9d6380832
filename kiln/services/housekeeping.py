"""A project's repository as the people who keep it see it: housekeeping on request
(Maintainers), where it is stored and a snapshot of it (administrators)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import Conflict, KilnError, NotFound
from kiln.git import maintenance
from kiln.git.layout import repository_relpath, wiki_path
from kiln.policy import Action
from kiln.services import repositories, subjects

BUSY = "Somebody already triggered housekeeping for this resource"


class HousekeepingError(KilnError):
    """git could not finish housekeeping: the repository is as git left it, still sound."""

    status = 500


def run(db: Session, actor: Actor, ident: str, task: str, settings: Settings) -> None:
    """POST /projects/:id/housekeeping: `eager` repacks, `prune` also drops unreachable
    objects; done before the answer, one run per repository at a time (409 for another)."""
    s = subjects.project(db, actor, ident, Action.MAINTAIN_REPOSITORY, rows=True)
    store = repositories.store(settings)
    if not store.exists(s.project.id):
        return
    try:
        maintenance.housekeep(store.path(s.project.id), prune=task == "prune")
    except maintenance.HousekeepingBusy:
        raise Conflict(BUSY) from None
    except maintenance.HousekeepingFailed as e:
        raise HousekeepingError(f"500 Housekeeping failed: {e}") from None
    finally:
        # Open handles know the packs that were there before.
        store.forget(s.project.id)


@dataclass(frozen=True, slots=True)
class StorageInfo:
    project_id: int
    disk_path: str
    created_at: datetime
    repository_storage: str


def storage_of(db: Session, actor: Actor, ident: str) -> StorageInfo:
    """GET /projects/:id/storage (administrators): where the repository lives, relative to
    its storage, as GitLab's hashed storage names it."""
    s = subjects.project(db, actor, ident, rows=True)
    p = s.project
    return StorageInfo(
        p.id, repository_relpath(p.id).removesuffix(".git"), p.created_at, p.repository_storage
    )


def snapshot(db: Session, actor: Actor, ident: str, *, wiki: bool, settings: Settings) -> Iterator[bytes]:
    """GET /projects/:id/snapshot (administrators): the tar of the project's bare repository,
    or of its wiki's; a repository that is not on disk is a 404."""
    s = subjects.project(db, actor, ident, rows=True)
    store = repositories.store(settings)
    path: Path = wiki_path(store.root, s.project.id) if wiki else store.path(s.project.id)
    if not (path / "HEAD").is_file():
        raise NotFound("Repository")
    return maintenance.snapshot(path)
