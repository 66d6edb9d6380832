"""What tests over repositories share: a project with its repository as the API answers it,
and the soundness check for repositories tests write (`git fsck` finds nothing wrong)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any


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
