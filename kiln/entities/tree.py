"""Views of tree entries and blobs."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from kiln.entities.files import around_content, base64_length, base64_pieces
from kiln.git.files import BlobRef, TreeItem


def tree_entry(item: TreeItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "name": item.name,
        "type": item.type,
        "path": item.path,
        "mode": f"{item.mode:06o}",
    }


def blob(found: BlobRef) -> dict[str, Any]:
    """A blob with its content, read whole (blob_pieces streams a large one)."""
    return {
        "size": found.size,
        "encoding": "base64",
        "content": base64.b64encode(found.data()).decode("ascii"),
        "sha": found.id,
    }


def blob_pieces(found: BlobRef, pieces: Iterable[bytes]) -> Iterator[bytes]:
    """blob's JSON in pieces, its content encoded as it is read."""
    head, tail = around_content(_blob_fields(found))
    yield head
    yield from base64_pieces(pieces)
    yield tail


def blob_length(found: BlobRef) -> int:
    """How long blob_pieces' JSON is, told before any of it is made."""
    head, tail = around_content(_blob_fields(found))
    return len(head) + base64_length(found.size) + len(tail)


def _blob_fields(found: BlobRef) -> dict[str, Any]:
    """blob's fields but its content, in its order (the content goes after `encoding`)."""
    return {"size": found.size, "encoding": "base64", "sha": found.id}


# How much of a whole tree's JSON one piece holds (each piece is made in a thread).
_PIECE_BYTES = 1 << 18


def tree_json_pieces(items: Iterator[TreeItem]) -> Iterator[bytes]:
    """A whole tree's entries (pagination=none) as the JSON array render makes, a piece at a
    time as they are read: a tree may list millions, never held at once."""
    try:
        parts = [b"["]
        held = 0
        for n, item in enumerate(items):
            entry = orjson.dumps(tree_entry(item))
            parts.append(b"," + entry if n else entry)
            held += len(entry)
            if held >= _PIECE_BYTES:
                yield b"".join(parts)
                parts, held = [], 0
        parts.append(b"]")
        yield b"".join(parts)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()
