"""Which languages a tree is written in, by bytes per file extension (or well-known file
name), leaving out vendored code, binaries and data files as Linguist does."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import pygit2

from kiln.git.files import open_blob

# Linguist's names for the languages a forge meets most often.
EXTENSIONS = {
    ".py": "Python",
    ".pyi": "Python",
    ".pyx": "Cython",
    ".rb": "Ruby",
    ".rake": "Ruby",
    ".gemspec": "Ruby",
    ".js": "JavaScript",
    ".mjs": "JavaScript",
    ".cjs": "JavaScript",
    ".jsx": "JavaScript",
    ".ts": "TypeScript",
    ".tsx": "TSX",
    ".vue": "Vue",
    ".svelte": "Svelte",
    ".go": "Go",
    ".rs": "Rust",
    ".java": "Java",
    ".kt": "Kotlin",
    ".kts": "Kotlin",
    ".scala": "Scala",
    ".groovy": "Groovy",
    ".gradle": "Groovy",
    ".clj": "Clojure",
    ".cljs": "Clojure",
    ".c": "C",
    ".h": "C",
    ".cc": "C++",
    ".cpp": "C++",
    ".cxx": "C++",
    ".hh": "C++",
    ".hpp": "C++",
    ".hxx": "C++",
    ".m": "Objective-C",
    ".mm": "Objective-C++",
    ".cs": "C#",
    ".fs": "F#",
    ".vb": "Visual Basic .NET",
    ".swift": "Swift",
    ".php": "PHP",
    ".pl": "Perl",
    ".pm": "Perl",
    ".lua": "Lua",
    ".r": "R",
    ".jl": "Julia",
    ".dart": "Dart",
    ".ex": "Elixir",
    ".exs": "Elixir",
    ".erl": "Erlang",
    ".hrl": "Erlang",
    ".hs": "Haskell",
    ".ml": "OCaml",
    ".mli": "OCaml",
    ".elm": "Elm",
    ".nim": "Nim",
    ".zig": "Zig",
    ".v": "V",
    ".sh": "Shell",
    ".bash": "Shell",
    ".zsh": "Shell",
    ".fish": "fish",
    ".ps1": "PowerShell",
    ".bat": "Batchfile",
    ".cmd": "Batchfile",
    ".sql": "SQL",
    ".html": "HTML",
    ".htm": "HTML",
    ".css": "CSS",
    ".scss": "SCSS",
    ".sass": "Sass",
    ".less": "Less",
    ".haml": "Haml",
    ".erb": "HTML+ERB",
    ".md": "Markdown",
    ".markdown": "Markdown",
    ".rst": "reStructuredText",
    ".adoc": "AsciiDoc",
    ".tex": "TeX",
    ".nix": "Nix",
    ".tf": "HCL",
    ".hcl": "HCL",
    ".proto": "Protocol Buffer",
    ".cmake": "CMake",
    ".mk": "Makefile",
    ".asm": "Assembly",
    ".s": "Assembly",
    ".vim": "Vim Script",
    ".el": "Emacs Lisp",
    ".lisp": "Common Lisp",
    ".scm": "Scheme",
    ".rkt": "Racket",
    ".f90": "Fortran",
    ".pas": "Pascal",
    ".ada": "Ada",
    ".d": "D",
    ".cr": "Crystal",
    ".sol": "Solidity",
    ".ipynb": "Jupyter Notebook",
}
FILENAMES = {
    "Makefile": "Makefile",
    "GNUmakefile": "Makefile",
    "makefile": "Makefile",
    "Dockerfile": "Dockerfile",
    "Containerfile": "Dockerfile",
    "CMakeLists.txt": "CMake",
    "Rakefile": "Ruby",
    "Gemfile": "Ruby",
    "Vagrantfile": "Ruby",
    "Jenkinsfile": "Groovy",
    "meson.build": "Meson",
}
# Linguist's vendor.yml, the common part: dependencies and bundled third-party code.
_VENDORED = re.compile(
    r"(?:^|/)(?:node_modules|bower_components|vendor|vendors|third[-_]?party|Godeps|"
    r"\.bundle|\.yarn|__pypackages__|site-packages|\.venv|venv)/"
    r"|(?:^|/)[^/]*\.min\.(?:js|css)$"
    r"|(?:^|/)(?:jquery|bootstrap)[^/]*\.(?:js|css)$"
)


def language_of(path: str) -> str | None:
    name = PurePosixPath(path).name
    if name in FILENAMES:
        return FILENAMES[name]
    if name.startswith("Dockerfile."):
        return "Dockerfile"
    suffix = PurePosixPath(name).suffix.lower()
    return EXTENSIONS.get(suffix)


def vendored(path: str) -> bool:
    return _VENDORED.search(path) is not None


# Subtrees and blobs one walk remembers what it counted of, by id (a bound on its memory).
_REMEMBERED = 1 << 16


@dataclass(slots=True)
class _Dir:
    """A directory being walked: what its files and finished subdirectories count so far."""

    id: pygit2.Oid
    entries: Iterator[pygit2.Object]
    prefix: str
    sizes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def language_bytes(
    repo: pygit2.Repository,
    tree: pygit2.Tree,
    *,
    large_blob_bytes: int,
    max_entries: int,
) -> dict[str, int]:
    """Bytes per language over the files of `tree`; submodules and symlinks don't count, nor
    does a blob over `large_blob_bytes`, which is never read (data, not source, at that size).

    At most `max_entries` entries are visited: past them, the bytes are those of the files
    counted so far, so the shares made of them are the shares of what was counted. A subtree
    met again counts what its first walk counted, without a second walk: a pushed tree may
    hold the same subtree twice at each of 40 levels (2^40 paths in a few KiB), and is then
    counted whole. Directories are walked with a stack of their own, however deep they nest."""
    subtrees: dict[pygit2.Oid, dict[str, int]] = {}
    # A blob's bytes as counted (0: binary, or too large to read).
    blobs: dict[pygit2.Oid, int] = {}
    root = _Dir(tree.id, iter(tree), "")
    stack = [root]
    visited = 0
    while stack:
        here = stack[-1]
        entry = next(here.entries, None)
        if entry is None:
            stack.pop()
            if len(subtrees) < _REMEMBERED:
                subtrees[here.id] = here.sizes
            if stack:
                _add(stack[-1].sizes, here.sizes)
            continue
        if visited >= max_entries:
            break
        visited += 1
        path = f"{here.prefix}{entry.name}"
        if isinstance(entry, pygit2.Tree):
            if vendored(path + "/"):
                continue
            known = subtrees.get(entry.id)
            if known is not None:
                _add(here.sizes, known)
            else:
                stack.append(_Dir(entry.id, iter(entry), path + "/"))
            continue
        if entry.type_str != "blob" or entry.filemode == pygit2.enums.FileMode.LINK:
            continue
        language = language_of(path)
        if language is None or vendored(path):
            continue
        size = blobs.get(entry.id)
        if size is None:
            size = _counted_bytes(repo, entry.id, large_blob_bytes)
            if len(blobs) < _REMEMBERED:
                blobs[entry.id] = size
        if size:
            here.sizes[language] += size
    if not stack:
        return dict(root.sizes)
    # Cut short: each directory still open holds what was counted in it.
    counted: dict[str, int] = defaultdict(int)
    for open_dir in stack:
        _add(counted, open_dir.sizes)
    return dict(counted)


def _add(sizes: dict[str, int], more: dict[str, int]) -> None:
    for language, size in more.items():
        sizes[language] = sizes.get(language, 0) + size


def _counted_bytes(repo: pygit2.Repository, blob_id: pygit2.Oid, large_blob_bytes: int) -> int:
    """A blob's size from its header; 0 when it is over large_blob_bytes or binary."""
    size = int(repo.odb.read_header(blob_id)[1])
    if size > large_blob_bytes or open_blob(repo, str(blob_id), size, head=True).binary:
        return 0
    return size


def shares(sizes: dict[str, int]) -> dict[str, float]:
    """Percentages rounded to two decimals, largest first (name breaks ties)."""
    total = sum(sizes.values())
    if not total:
        return {}
    ranked = sorted(((n, s) for n, s in sizes.items() if s > 0), key=lambda item: (-item[1], item[0]))
    return {name: round(size * 100 / total, 2) for name, size in ranked}
