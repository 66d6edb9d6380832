"""What kiln accepts as a path in a tree and as a ref name: one rule for each, used by every
write, through the API and by push alike.

Paths follow git's own fsck (`hasDot`, `hasDotdot`, `hasDotgit` with its HFS and NTFS
spellings, `fullPathname`, `emptyName`); ref names follow GitLab's rule for a new branch or
tag on top of git's ref format."""

from __future__ import annotations

import re
import unicodedata

import pygit2

BRANCH_PREFIX = "refs/heads/"
TAG_PREFIX = "refs/tags/"

# A path deeper than this is refused: no real tree needs it, and readers walk it part by part.
MAX_PATH_DEPTH = 256
MAX_PATH_BYTES = 4096
# A longer ref name can't be stored as a loose ref on any common filesystem.
MAX_REF_BYTES = 1024
MAX_REF_PART_BYTES = 255

# Code points HFS+ ignores in file names, so `.g\u200cit` names `.git` there (git's is_hfs_dotgit).
_HFS_IGNORED = frozenset([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])
# GitLab refuses these as the start of a branch or tag name given to the API.
_REFUSED_PREFIXES = ("refs/heads/", "refs/remotes/", "-")
# A full object id: SHA-1, or SHA-256 in a repository that uses it.
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_NTFS_SHORT_DOTGIT = re.compile(r"\Agit~[0-9]+\Z", re.IGNORECASE)

INVALID_PATH = "invalid path"


def _control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ch == "\x7f" for ch in text)


def is_dotgit(name: str) -> bool:
    """A tree entry name that some filesystem would open as `.git`: any case, HFS's ignored
    code points, NTFS's trailing dots and spaces, alternate streams (`.git::$INDEX_ALLOCATION`),
    backslash as a separator, and the 8.3 short name `git~1`."""
    for piece in name.split("\\"):
        folded = "".join(ch for ch in piece if ord(ch) not in _HFS_IGNORED)
        folded = unicodedata.normalize("NFC", folded).casefold()
        if folded == ".git":
            return True
        stream = folded.split(":", 1)[0]
        if stream.rstrip(". ") == ".git":
            return True
        if _NTFS_SHORT_DOTGIT.match(stream.rstrip(". ")):
            return True
    return False


def path_problem(path: str) -> str | None:
    """Why `path` can't name an entry of a tree kiln writes, or None: absolute, `.`/`..`,
    empty parts (`a//b`), NUL and control characters, any spelling of `.git`, too deep."""
    if not path or path.startswith("/") or path.endswith("/") or _control(path):
        return INVALID_PATH
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return INVALID_PATH
    parts = path.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        return INVALID_PATH
    for part in parts:
        if part in ("", ".", "..") or is_dotgit(part):
            return INVALID_PATH
    return None


def valid_ref_name(name: str) -> bool:
    """GitLab's rule for a new branch or tag name: git's ref format, and none of the names
    that would read as something else (`HEAD`, `-x`, `refs/heads/x`)."""
    if not readable_ref(name) or name == "HEAD" or name.startswith(_REFUSED_PREFIXES):
        return False
    try:
        return pygit2.reference_is_valid_name(f"{BRANCH_PREFIX}{name}")
    except (ValueError, TypeError):
        return False


def is_object_id(name: str) -> bool:
    """A full lowercase object id, as git writes one (answers keyed by one never go stale)."""
    return bool(_OBJECT_ID.fullmatch(name))


def object_name_like(name: str) -> bool:
    """A full SHA-1 or SHA-256 object id: as a branch or tag name it would shadow commits."""
    return is_object_id(name.lower())


def valid_new_branch(name: str) -> bool:
    """A branch name any write may create: GitLab's rule, and not an object id."""
    return valid_ref_name(name) and not object_name_like(name)


def valid_new_tag(name: str) -> bool:
    """A tag name any write may create: GitLab's rule, not `refs/tags/…` (it would read as a
    second prefix), and not an object id."""
    return valid_ref_name(name) and not name.startswith(TAG_PREFIX) and not object_name_like(name)


def readable_ref(name: str) -> bool:
    """Whether `name` could name a ref or revision at all; one that can't is not found
    without asking git (a NUL or a 10,000-byte name would otherwise reach the filesystem)."""
    if not name or _control(name):
        return False
    encoded = name.encode("utf-8", "surrogatepass")
    if len(encoded) > MAX_REF_BYTES:
        return False
    return all(len(part) <= MAX_REF_PART_BYTES for part in encoded.split(b"/"))
