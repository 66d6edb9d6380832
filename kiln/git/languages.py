"""Which languages a tree is written in, by bytes per file extension (or well-known file
name), leaving out vendored code, binaries and data files as Linguist does."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import PurePosixPath

import pygit2

from kiln.git.files import blob_pieces

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
# libgit2's own test: a NUL byte in the first 8000 bytes.
_BINARY_PROBE = 8000
# Blobs larger than this are left out unread (GitLab's 10 MiB MAX_BLOB_SIZE; callers that
# hold the instance's settings pass its large_blob_bytes).
LARGE_BLOB_BYTES = 10 << 20


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


def language_bytes(
    repo: pygit2.Repository, tree: pygit2.Tree, *, large_blob_bytes: int = LARGE_BLOB_BYTES
) -> dict[str, int]:
    """Bytes per language over every file of `tree`; submodules and symlinks don't count, nor
    does a blob over `large_blob_bytes`, which is never read (data, not source, at that size).
    Directories are walked with a stack of their own, however deep a pushed tree nests."""
    sizes: dict[str, int] = defaultdict(int)
    pending: list[tuple[pygit2.Tree, str]] = [(tree, "")]
    while pending:
        current, prefix = pending.pop()
        for entry in current:
            path = f"{prefix}{entry.name}"
            if entry.type_str == "tree":
                if not vendored(path + "/"):
                    pending.append((repo[entry.id].peel(pygit2.Tree), path + "/"))
                continue
            if entry.type_str != "blob" or entry.filemode == pygit2.enums.FileMode.LINK:
                continue
            language = language_of(path)
            if language is None or vendored(path):
                continue
            size = int(repo.odb.read_header(entry.id)[1])
            if size > large_blob_bytes or _binary(repo, str(entry.id), size):
                continue
            sizes[language] += size
    return dict(sizes)


def _binary(repo: pygit2.Repository, blob_id: str, size: int) -> bool:
    """A NUL in the first bytes; a large blob's first piece is read from git, not the whole
    blob through libgit2."""
    pieces = blob_pieces(repo, blob_id, size)
    try:
        first = next(pieces, b"")
    finally:
        pieces.close()
    return b"\x00" in first[:_BINARY_PROBE]


def shares(sizes: dict[str, int]) -> dict[str, float]:
    """Percentages rounded to two decimals, largest first (name breaks ties)."""
    total = sum(sizes.values())
    if not total:
        return {}
    ranked = sorted(((n, s) for n, s in sizes.items() if s > 0), key=lambda item: (-item[1], item[0]))
    return {name: round(size * 100 / total, 2) for name, size in ranked}
