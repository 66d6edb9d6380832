"""Views of tree entries and blobs."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from kiln.entities.files import base64_pieces
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
    head, tail = _around_content(found)
    yield head
    yield from base64_pieces(pieces)
    yield tail


def blob_length(found: BlobRef) -> int:
    """How long blob_pieces' JSON is, told before any of it is made."""
    head, tail = _around_content(found)
    return len(head) + 4 * ((found.size + 2) // 3) + len(tail)


def _around_content(found: BlobRef) -> tuple[bytes, bytes]:
    head = orjson.dumps({"size": found.size, "encoding": "base64"})[:-1] + b',"content":"'
    return head, b'",' + orjson.dumps({"sha": found.id})[1:]
