"""What tests over repositories share: a project with its repository as the API answers it,
real git pushes into it, and the soundness check for repositories tests write (`git fsck`
finds nothing wrong)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from kiln.config import Settings
from kiln.services import repositories

_PUSHER = {
    "GIT_AUTHOR_NAME": "Pusher",
    "GIT_AUTHOR_EMAIL": "pusher@example.com",
    "GIT_COMMITTER_NAME": "Pusher",
    "GIT_COMMITTER_EMAIL": "pusher@example.com",
}


def new_project(api: Any, make: Any, owner: Any, *, readme: bool = True, **fields: Any) -> dict[str, Any]:
    """A project with its repository (a README.md commit on the default branch unless
    readme=False), written by the factories; its record as the API answers it to `owner`."""
    project = make.project_with_repository(owner=owner, readme=readme, **fields)
    return api(owner).get(f"/projects/{project.id}").json()


def fsck_errors(path: Path) -> str:
    """What `git fsck --strict` reports against the repository at `path`; "" when sound.
    Notices (an empty repository's unborn HEAD) are not faults."""
    result = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=path, capture_output=True, text=True, check=False
    )
    lines = (result.stdout + result.stderr).splitlines()
    report = "\n".join(line for line in lines if line.strip() and not line.startswith("notice:"))
    return report or (f"git fsck exited {result.returncode}" if result.returncode else "")


def unsound_repositories(root: Path) -> dict[str, str]:
    """Every bare repository under `root` that fsck faults, with what it reported."""
    found = sorted(root.glob("**/*.git")) if root.is_dir() else []
    return {str(path.relative_to(root)): errors for path in found if (errors := fsck_errors(path))}


def git(path: Path, *args: str | bytes, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """`git -C path args`, as the pusher."""
    env = {**os.environ, **_PUSHER}
    return subprocess.run(["git", "-C", str(path), *args], capture_output=True, check=check, env=env)


def clone(settings: Settings, project: dict[str, Any], tmp_path: Path, *, branch: str = "main") -> Path:
    """A work tree of the project's repository on `branch`, under `tmp_path`."""
    bare = repositories.store(settings).path(project["id"])
    work = tmp_path / f"clone-{os.urandom(3).hex()}"
    subprocess.run(
        ["git", "clone", "-q", "-b", branch, str(bare), str(work)], check=True, capture_output=True
    )
    return work


def push(work: Path, *, branch: str = "main", message: str = "pushed") -> str:
    """A commit of what is staged in `work`, pushed onto `branch` with `git push`; its id."""
    git(work, "commit", "-q", "-m", message)
    git(work, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
    return git(work, "rev-parse", "HEAD").stdout.decode().strip()


def push_with_git(
    settings: Settings,
    project: dict[str, Any],
    tmp_path: Path,
    files: dict[bytes, bytes],
    *,
    branch: str = "main",
) -> str:
    """A real `git push` of one commit adding `files` (names as raw bytes) onto `branch`."""
    work = clone(settings, project, tmp_path, branch=branch)
    for name, data in files.items():
        target = os.path.join(os.fsencode(work), name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    git(work, "add", "-A")
    return push(work, branch=branch)
