"""Repositories with files and history, written straight into a project's bare repository at
its layout path with pygit2 (blobs, trees, commits, refs): no request, no git process. A
project's first commit is adopted as the first push into it is (the branch becomes HEAD and
the default branch, protected as the instance protects default branches, and the push is
recorded), so the project looks as if it had been created with a README through the API."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.db import transaction
from kiln.git.store import RepositoryStore
from kiln.models import Namespace, Project
from kiln.services import instance_settings, repositories
from tests.factories.users import MadeUser

BLOB = pygit2.enums.FileMode.BLOB
EXECUTABLE = pygit2.enums.FileMode.BLOB_EXECUTABLE
# What a file becomes: its content (bytes or text), or None to delete it.
Files = dict[str, bytes | str | None]
# An empty repository per default branch name, as kiln's store creates it.
_templates: dict[str, Path] = {}


class RepositoryFactory:
    db: Session
    settings: Settings
    project: Callable[..., Project]  # ProjectFactory's

    def project_with_repository(
        self, *, owner: MadeUser | None = None, readme: bool = True, **fields: Any
    ) -> Project:
        """A project (see `project`) and its repository: a README.md commit by the owner on the
        default branch as GitLab's `initialize_with_readme` writes it, or, with readme=False,
        an empty repository whose HEAD names the default branch."""
        project = self.project(owner=owner, **fields)
        branch = project.default_branch or self._default_branch(project)
        repo = self._create(project.id, branch)
        if not readme:
            with transaction(self.db):
                project.default_branch = branch
            return project
        who = owner.row if owner is not None else None
        name, email = (who.name, who.email) if who is not None else ("Administrator", "admin@example.com")
        content = (
            f"# {project.name}\n\n{project.description}\n" if project.description else f"# {project.name}\n"
        )
        self.commit(
            project,
            {"README.md": content},
            branch=branch,
            message="Initial commit",
            author=(name, email),
            repo=repo,
        )
        return project

    def commit(
        self,
        project: Project | dict[str, Any] | int,
        files: Files,
        *,
        branch: str = "main",
        repo: pygit2.Repository | None = None,
        **options: Any,
    ) -> str:
        """`write_commit`, and the first commit of an empty repository is adopted as its first
        push would be (default branch, its protection, the push event)."""
        pid = _id_of(project)
        repo = repo or repositories.store(self.settings).open(pid)
        first = not list(repo.references)  # pygit2's is_empty only knows a HEAD named master
        sha = write_commit(repo, files, branch=branch, **options)
        if first:
            self._adopt(pid, repo, branch, sha)
        return sha

    def branch(self, project: Project | dict[str, Any] | int, name: str, target: str) -> None:
        repositories.store(self.settings).open(_id_of(project)).references.create(
            f"refs/heads/{name}", pygit2.Oid(hex=target), force=True
        )

    def tag(self, project: Project | dict[str, Any] | int, name: str, target: str) -> None:
        """A lightweight tag."""
        repositories.store(self.settings).open(_id_of(project)).references.create(
            f"refs/tags/{name}", pygit2.Oid(hex=target), force=True
        )

    def _create(self, project_id: int, branch: str) -> pygit2.Repository:
        """The empty repository kiln's store creates for a project, copied from one it made
        once per process: initialising and configuring a repository costs several copies."""
        template = _templates.get(branch)
        if template is None:
            templates = RepositoryStore(Path(tempfile.mkdtemp(prefix="kiln-test-templates-")))
            atexit.register(shutil.rmtree, templates.root, True)
            templates.create(0, branch)
            template = _templates[branch] = templates.path(0)
        store = repositories.store(self.settings)
        path = store.path(project_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(template, path)
        return store.open(project_id)

    def _adopt(self, project_id: int, repo: pygit2.Repository, branch: str, after: str) -> None:
        with transaction(self.db):
            project = self.db.get(Project, project_id)
            assert project is not None
            repositories.adopt_first_branch(self.db, project, repo, branch)
            repositories.record_push(self.db, project, None, f"refs/heads/{branch}", None, after, repo)

    def _default_branch(self, project: Project) -> str:
        namespace = self.db.get(Namespace, project.namespace_id)
        if namespace is not None and namespace.default_branch:
            return namespace.default_branch
        return str(instance_settings.current(self.db)["default_branch_name"])


def _id_of(project: Project | dict[str, Any] | int) -> int:
    if isinstance(project, int):
        return project
    if isinstance(project, dict):
        return int(project["id"])
    return project.id


def open_repository(settings: Settings, project: Project | dict[str, Any] | int) -> pygit2.Repository:
    return repositories.store(settings).open(_id_of(project))


def write_commit(
    repo: pygit2.Repository,
    files: Files,
    *,
    branch: str = "main",
    message: str = "change",
    author: tuple[str, str] = ("Setup Bot", "bot@example.com"),
    when: datetime | None = None,
    start: str | None = None,
    parents: list[str] | None = None,
    executable: tuple[str, ...] = (),
) -> str:
    """One commit changing `files` on top of `branch`'s tip (or of `start` while the branch
    does not exist, or of exactly `parents`), which `branch` then points at; returns its id.
    Author and committer are `author` at `when` (now by default; its UTC offset is kept)."""
    ref = f"refs/heads/{branch}"
    if parents is None:
        tip = repo.references.get(ref)
        base = str(tip.target) if tip is not None else start
        parents = [base] if base is not None else []
    index = pygit2.Index()
    if parents:
        index.read_tree(repo.revparse_single(parents[0]).peel(pygit2.Commit).tree)
    for path, content in files.items():
        if content is None:
            index.remove(path)
            continue
        data = content.encode() if isinstance(content, str) else content
        index.add(pygit2.IndexEntry(path, repo.create_blob(data), EXECUTABLE if path in executable else BLOB))
    moment = when or datetime.now(UTC)
    offset = moment.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    sig = pygit2.Signature(author[0], author[1], int(moment.timestamp()), minutes)
    parent_ids = [repo.revparse_single(p).peel(pygit2.Commit).id for p in parents]
    oid = repo.create_commit(None, sig, sig, message, index.write_tree(repo), parent_ids)
    repo.references.create(ref, oid, force=True)
    return str(oid)
