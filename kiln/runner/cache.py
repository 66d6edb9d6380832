"""The local cache: one zip per project and cache key, restored before the script and saved
after it according to the cache's policy (pull, push, pull-push) and `when`."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kiln.runner import artifacts

UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _safe(name: str) -> str:
    """A key as one file-name component: never a path, never `..`."""
    cleaned = UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", name)
    return cleaned if cleaned not in ("", ".", "..") else cleaned.replace(".", "%2E") or "default"


@dataclass
class CacheSpec:
    """One `cache:` entry of a job payload."""

    key: str = "default"
    paths: list[str] = field(default_factory=list)
    untracked: bool = False
    policy: str = "pull-push"
    when: str = "on_success"
    fallback_keys: list[str] = field(default_factory=list)

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> CacheSpec:
        return cls(
            key=str(data.get("key") or "default"),
            paths=[str(p) for p in data.get("paths") or []],
            untracked=bool(data.get("untracked")),
            policy=str(data.get("policy") or "pull-push"),
            when=str(data.get("when") or "on_success"),
            fallback_keys=[str(k) for k in data.get("fallback_keys") or []],
        )

    @property
    def pulls(self) -> bool:
        return self.policy in ("pull", "pull-push")

    @property
    def pushes(self) -> bool:
        return self.policy in ("push", "pull-push")

    def saved_when(self, succeeded: bool) -> bool:
        return self.when == "always" or (self.when == "on_failure") != succeeded


class LocalCache:
    """Cache archives under one folder: `<folder>/<project>/<key>/cache.zip`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def archive(self, project: str, key: str) -> Path:
        return self.folder / _safe(project) / _safe(key) / "cache.zip"

    def restore(self, project: str, spec: CacheSpec, target: Path) -> str | None:
        """Extract the first key (then fallback keys) found; the key used, if any."""
        for key in [spec.key, *spec.fallback_keys]:
            found = self.archive(project, key)
            if found.is_file():
                artifacts.extract(found, target)
                return key
        return None

    def save(self, project: str, spec: CacheSpec, root: Path) -> int | None:
        """Archive the cache's paths; the file count, or None when nothing matched (the old
        archive then stays)."""
        chosen = artifacts.select(root, spec.paths, untracked=spec.untracked)
        if not chosen.files:
            return None
        destination = self.archive(project, spec.key)
        destination.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=destination.parent, suffix=".zip.tmp")
        os.close(descriptor)
        try:
            count = artifacts.write_zip(root, chosen.files, Path(temporary))
            # Atomic: a job restoring at the same time sees the old archive or the new one.
            os.replace(temporary, destination)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        return count
