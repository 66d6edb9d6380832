"""Artifact and cache archives: choose files (paths with globs, exclude, untracked), write
a zip, extract one safely."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import stat
import subprocess
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

GLOB_CHARS = re.compile(r"[*?\[]")


class ArchiveError(Exception):
    """An archive that cannot be made or extracted (a name escaping its folder, a bad zip)."""


@cache
def _pattern(glob: str) -> re.Pattern[str]:
    """A glob as a regex over slash-separated relative paths: `**` crosses folders, `*` and
    `?` do not."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[":
            end = glob.find("]", i + 1)
            if end < 0:
                out.append(re.escape("["))
                i += 1
            else:
                body = glob[i + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + "/?")


def _clean(pattern: str) -> str:
    cleaned = pattern.strip().removeprefix("./").rstrip("/")
    return cleaned


def excluded(relative: str, patterns: Iterable[str]) -> bool:
    """Whether a file (or a folder holding it) matches an exclude pattern."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    for raw in patterns:
        pattern = _clean(raw)
        if not pattern:
            continue
        regex = _pattern(pattern)
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            return True
    return False


@dataclass
class Selection:
    """Files chosen for an archive (relative, slash-separated) and the patterns that found
    nothing (GitLab warns about those)."""

    files: list[str] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _walk(root: Path, start: Path) -> Iterable[Path]:
    if start.is_symlink() or start.is_file():
        yield start
        return
    for folder, dirs, files in os.walk(start):
        base = Path(folder)
        for name in sorted(dirs):
            if (base / name).is_symlink():
                yield base / name
        dirs[:] = sorted(d for d in dirs if not (base / d).is_symlink())
        for name in sorted(files):
            yield base / name


def untracked_files(root: Path) -> list[str]:
    """Files git does not track, .gitignore'd ones included (as GitLab's `untracked`)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--others", "-z"], cwd=root, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [name for name in listed.decode(errors="surrogateescape").split("\0") if name]


def select(
    root: Path, paths: Iterable[str], *, exclude: Iterable[str] = (), untracked: bool = False
) -> Selection:
    """The files under `root` the patterns name; nothing outside `root` is ever chosen."""
    exclude = list(exclude)
    chosen: dict[str, None] = {}
    selection = Selection()
    for raw in paths:
        pattern = _clean(raw)
        if not pattern:
            continue
        if GLOB_CHARS.search(pattern):
            matches = sorted(root.glob(pattern))
        else:
            candidate = root / pattern
            matches = [candidate] if candidate.exists() or candidate.is_symlink() else []
        matches = [m for m in matches if _inside(root, m.parent) and (m.is_symlink() or _inside(root, m))]
        if not matches:
            selection.unmatched.append(raw)
        for match in matches:
            for path in _walk(root, match):
                chosen[path.relative_to(root).as_posix()] = None
    if untracked:
        for name in untracked_files(root):
            chosen[name] = None
    selection.files = [name for name in chosen if not excluded(name, exclude)]
    return selection


def write_zip(root: Path, files: Iterable[str], target: Path) -> int:
    """Zip `files` (relative to `root`) into `target`, keeping modes and symlinks; the count."""
    count = 0
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in files:
            path = root / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                entry = zipfile.ZipInfo(name)
                entry.external_attr = (stat.S_IFLNK | 0o777) << 16
                archive.writestr(entry, os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                archive.write(path, name)
            else:
                continue
            count += 1
    return count


def write_gzip(root: Path, files: Iterable[str], target: Path) -> int:
    """Report artifacts: each file one gzip member, concatenated (GitLab's `gzip` format)."""
    count = 0
    with target.open("wb") as out:
        for name in files:
            path = root / name
            if path.is_symlink() or not path.is_file():
                continue
            with path.open("rb") as source, gzip.GzipFile(filename=name, mode="wb", fileobj=out) as member:
                shutil.copyfileobj(source, member)
            count += 1
    return count


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def extract(archive_path: Path, target: Path) -> int:
    """Extract a zip into `target`; names leaving `target` (absolute, `..`, links pointing
    out) are refused. The count of entries written."""
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    count = 0
    try:
        archive = zipfile.ZipFile(archive_path)
    except zipfile.BadZipFile as bad:
        raise ArchiveError(f"not a zip archive: {bad}") from None
    with archive:
        for entry in archive.infolist():
            name = entry.filename
            if name.startswith("/") or "\\" in name or ".." in Path(name).parts:
                raise ArchiveError(f"refusing the archive entry {name!r}")
            destination = target / name
            if not _inside(root, _existing_ancestor(destination.parent)):
                raise ArchiveError(f"refusing the archive entry {name!r}")
            mode = entry.external_attr >> 16
            if entry.is_dir():
                destination.mkdir(parents=True, exist_ok=True)
                continue
            destination.parent.mkdir(parents=True, exist_ok=True)
            if destination.is_symlink() or destination.is_file():
                destination.unlink()
            if stat.S_ISLNK(mode):
                link = archive.read(entry).decode()
                if os.path.isabs(link) or not _inside(root, destination.parent / link):
                    continue  # a link out of the build folder is dropped, not followed
                destination.symlink_to(link)
            else:
                with archive.open(entry) as source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out)
                if mode & 0o777:
                    destination.chmod(mode & 0o777)
            count += 1
    return count
