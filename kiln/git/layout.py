"""Where a project's repository lives: hashed by project id, so renames and transfers never
move files (DESIGN.md "Process and data layout")."""

from __future__ import annotations

import hashlib
from pathlib import Path


def repository_relpath(project_id: int) -> str:
    digest = hashlib.sha256(str(project_id).encode()).hexdigest()
    return f"@hashed/{digest[:2]}/{digest[2:4]}/{digest}.git"


def repository_path(repositories_root: Path, project_id: int) -> Path:
    return repositories_root / repository_relpath(project_id)


def wiki_path(repositories_root: Path, project_id: int) -> Path:
    return repositories_root / repository_relpath(project_id).replace(".git", ".wiki.git")
