"""Views of tree entries and blobs."""

from __future__ import annotations

import base64
from typing import Any

import pygit2

from kiln.git.files import TreeItem


def tree_entry(item: TreeItem) -> dict[str, Any]:
    return {
        "id": item.id,
        "name": item.name,
        "type": item.type,
        "path": item.path,
        "mode": f"{item.mode:06o}",
    }


def blob(obj: pygit2.Blob) -> dict[str, Any]:
    return {
        "size": obj.size,
        "encoding": "base64",
        "content": base64.b64encode(obj.data).decode("ascii"),
        "sha": str(obj.id),
    }
