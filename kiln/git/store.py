"""Bare repositories on disk, one per project under hashed storage, and a small cache of
open pygit2 handles (opening a repository costs more than most reads)."""

from __future__ import annotations

import shutil
import threading
from collections import OrderedDict
from pathlib import Path

import pygit2

from kiln.git import timed
from kiln.git.errors import RepositoryMissing
from kiln.git.layout import repository_path

CACHE_SIZE = 64
_PATHS_LIMIT = 65536
# libgit2 keeps recently read objects in memory across requests.
pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.BLOB, 256 * 1024)
pygit2.settings.cache_max_size(256 * 1024 * 1024)


class RepositoryStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._open: OrderedDict[int, pygit2.Repository] = OrderedDict()
        self._paths: dict[int, Path] = {}
        self._lock = threading.Lock()

    def path(self, project_id: int) -> Path:
        # Hashed from the id (a digest and a Path per call): every repository read asks.
        found = self._paths.get(project_id)
        if found is None:
            if len(self._paths) >= _PATHS_LIMIT:
                self._paths.clear()
            found = self._paths[project_id] = repository_path(self.root, project_id)
        return found

    def exists(self, project_id: int) -> bool:
        return (self.path(project_id) / "HEAD").is_file()

    def create(self, project_id: int, default_branch: str = "main") -> pygit2.Repository:
        """An empty bare repository whose HEAD names the default branch."""
        path = self.path(project_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        repo = pygit2.init_repository(str(path), bare=True, initial_head=f"refs/heads/{default_branch}")
        config = repo.config
        config["receive.denyNonFastForwards"] = "false"
        config["core.logAllRefUpdates"] = "true"
        config["gc.auto"] = "0"
        self._remember(project_id, repo)
        return repo

    def fork(self, source_id: int, project_id: int) -> None:
        """A copy of the source's refs and objects (hard-linked where the filesystem allows)."""
        src, dst = self.path(source_id), self.path(project_id)
        if not self.exists(source_id):
            self.create(project_id)
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        timed.run(
            ["git", "clone", "--bare", "--quiet", "--local", str(src), str(dst)],
            check=True,
            capture_output=True,
        )
        timed.run(["git", "-C", str(dst), "remote", "remove", "origin"], check=False, capture_output=True)

    def find(self, project_id: int) -> pygit2.Repository | None:
        """The repository, or None while the project has none on disk (an empty project)."""
        try:
            return self.open(project_id)
        except RepositoryMissing:
            return None

    def open(self, project_id: int) -> pygit2.Repository:
        with self._lock:
            repo = self._open.get(project_id)
            if repo is not None:
                self._open.move_to_end(project_id)
                return repo
        path = self.path(project_id)
        if not (path / "HEAD").is_file():
            raise RepositoryMissing(str(project_id))
        repo = pygit2.Repository(str(path))
        self._remember(project_id, repo)
        return repo

    def forget(self, project_id: int) -> None:
        with self._lock:
            self._open.pop(project_id, None)

    def remove(self, project_id: int) -> None:
        self.forget(project_id)
        shutil.rmtree(self.path(project_id), ignore_errors=True)

    def _remember(self, project_id: int, repo: pygit2.Repository) -> None:
        with self._lock:
            self._open[project_id] = repo
            self._open.move_to_end(project_id)
            while len(self._open) > CACHE_SIZE:
                self._open.popitem(last=False)


_stores: dict[Path, RepositoryStore] = {}
_stores_lock = threading.Lock()


def store_for(root: Path) -> RepositoryStore:
    """One store (and cache) per repositories root in this process; found without the lock
    (every repository read asks), made under it."""
    store = _stores.get(root)
    if store is not None:
        return store
    with _stores_lock:
        store = _stores.get(root)
        if store is None:
            store = _stores[root] = RepositoryStore(root)
        return store
