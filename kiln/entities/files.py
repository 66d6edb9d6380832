"""Views of repository files and blame ranges."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
import pygit2

from kiln.entities._format import git_text, git_time
from kiln.entities._rendered import RenderedViews
from kiln.kept import Kept, text_size

if TYPE_CHECKING:
    from kiln.queries.files import BlameRange, FileRecord


_HEADER_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def file_record(rec: FileRecord, *, content: bool = True, digest: str | None = None) -> dict[str, Any]:
    """The spec's file record; `content` (base64, no line breaks) is left out for HEAD.
    `digest`: the content's SHA-256 when the caller has it (read off the event loop)."""
    view: dict[str, Any] = {
        "file_name": rec.file.name,
        "file_path": rec.file.path,
        "size": rec.file.size,
        "encoding": "base64",
    }
    if content:
        view["content"] = base64.b64encode(rec.data).decode("ascii")
    view |= {
        "content_sha256": digest if digest is not None else rec.content_sha256,
        "ref": rec.ref,
        "blob_id": rec.file.blob_id,
        "commit_id": rec.commit_id,
        "last_commit_id": rec.last_commit_id,
        "execute_filemode": rec.file.executable,
    }
    return view


def file_record_pieces(rec: FileRecord, digest: str, pieces: Iterable[bytes]) -> Iterator[bytes]:
    """file_record's JSON, content included, in pieces: the content is encoded as it is read,
    so a large file never sits whole in memory, as bytes or as base64."""
    head, tail = around_content(file_record(rec, content=False, digest=digest))
    yield head
    yield from base64_pieces(pieces)
    yield tail


def file_record_length(rec: FileRecord, digest: str) -> int:
    """How long file_record_pieces' JSON is, told before any of it is made."""
    head, tail = around_content(file_record(rec, content=False, digest=digest))
    return len(head) + base64_length(rec.file.size) + len(tail)


def around_content(view: dict[str, Any]) -> tuple[bytes, bytes]:
    """The JSON before and after the content's base64, which goes just after `encoding`."""
    fields = list(view.items())
    at = [name for name, _ in fields].index("encoding") + 1
    head = orjson.dumps(dict(fields[:at]))[:-1] + b',"content":"'
    rest = orjson.dumps(dict(fields[at:]))
    return head, b'",' + rest[1:]


def base64_length(size: int) -> int:
    """How long the base64 of `size` bytes is (padded, as JSON carries it)."""
    return 4 * ((size + 2) // 3)


def base64_pieces(pieces: Iterable[bytes]) -> Iterator[bytes]:
    """The base64 of the pieces joined, a piece at a time (no line breaks)."""
    held = b""
    for piece in pieces:
        data = held + piece if held else piece
        whole = len(data) - len(data) % 3
        held = data[whole:]
        if whole:
            yield base64.b64encode(data[:whole])
    if held:
        yield base64.b64encode(held)


# A file's record as GET sends it, kept by its repository, commit, path and ref: a commit's
# files never change, and encoding a file is most of what reading it again costs.
RENDERED = RenderedViews(limit=1024, budget=32 << 20)
# Its metadata headers, by the same key.
_HEADERS: Kept[dict[str, str]] = Kept(limit=1024, budget=1 << 20, size=text_size)


def file_view(rec: FileRecord) -> orjson.Fragment:
    """file_record's JSON, content included."""
    return RENDERED.get((rec.key, rec.ref), lambda: file_record(rec))


def content_length(rec: FileRecord) -> int:
    """What `content` adds to the record's JSON: its key and quotes, a comma, and the base64
    text (which JSON never escapes). HEAD tells GET's length without encoding the file."""
    return len(',"content":""') + base64_length(rec.file.size)


# The prefixes every metadata header goes out under: GitLab's own, which its clients read
# (python-gitlab's `files.head`), and the spec's name for it.
HEADER_PREFIXES = ("X-Gitlab-", "X-Service-")


def file_headers(rec: FileRecord, digest: str | None = None) -> dict[str, str]:
    """The metadata headers every file read carries (HEAD answers with these alone), each
    under both HEADER_PREFIXES with the same value."""
    key = (rec.key, rec.ref)
    headers = _HEADERS.get(key)
    if headers is None:
        meta = file_record(rec, content=False, digest=digest)
        headers = {
            prefix + _header_name(name): _header_value(value)
            for prefix in HEADER_PREFIXES
            for name, value in sorted(meta.items())
        }
        _HEADERS.put(key, headers)
    return dict(headers)


def _header_name(key: str) -> str:
    """`last_commit_id` → `Last-Commit-Id`, as GitLab names its headers."""
    return "-".join(part.capitalize() for part in key.split("_"))


def _header_value(value: Any) -> str:
    """Printable ASCII as it is; a value holding anything else (a non-ASCII or control
    character, or a `%`) travels percent-encoded as UTF-8, so decoding a value that holds
    a `%` is always right and no name can break the header."""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if text.isascii() and text.isprintable() and "%" not in text:
        return text
    return quote(text, safe=_HEADER_SAFE)


def write_result(path: str, branch: str) -> dict[str, str]:
    return {"file_path": path, "branch": branch}


def _when(sig: pygit2.Signature) -> str | None:
    return git_time(sig.time)


def blame_commit(commit: pygit2.Commit) -> dict[str, Any]:
    return {
        "id": str(commit.id),
        "message": commit.raw_message.decode("utf-8", "replace"),
        "parent_ids": [str(p) for p in commit.parent_ids],
        "authored_date": _when(commit.author),
        "author_name": git_text(commit.author.raw_name),
        "author_email": git_text(commit.author.raw_email),
        "committed_date": _when(commit.committer),
        "committer_name": git_text(commit.committer.raw_name),
        "committer_email": git_text(commit.committer.raw_email),
    }


# Lines of a blame range encoded in one call: each call holds the interpreter while it runs.
_LINES_AT_ONCE = 4096


def blame_json(ranges: list[BlameRange]) -> orjson.Fragment:
    """Blame ranges (a commit and its lines each) as JSON, made a slice of lines at a time: a
    file of a million lines is not one long encoding that keeps every other thread (the
    event loop's) waiting."""
    parts = [b"["]
    views: dict[str, bytes] = {}
    for n, r in enumerate(ranges):
        sha = str(r.commit.id)
        view = views.get(sha)
        if view is None:
            view = views[sha] = orjson.dumps(blame_commit(r.commit))
        parts.append(b'{"commit":' if n == 0 else b',{"commit":')
        parts.append(view)
        parts.append(b',"lines":[')
        for start in range(0, len(r.lines), _LINES_AT_ONCE):
            if start:
                parts.append(b",")
            parts.append(orjson.dumps(r.lines[start : start + _LINES_AT_ONCE])[1:-1])
        parts.append(b"]}")
    parts.append(b"]")
    return orjson.Fragment(b"".join(parts))
