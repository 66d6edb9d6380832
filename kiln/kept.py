"""What a process keeps across requests: values under keys that hold everything the value
was made from, so that an equal key can only mean an equal value and nothing kept is ever
stale (a changed input is a new key). Bounded: the oldest key goes when a new one would pass
the limit."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[Hashable, V] = {}
        # Reads on PostgreSQL run on several threads: one inserts (and evicts) at a time; a
        # lookup needs no lock.
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        return self._kept.get(key)

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            if key not in self._kept and len(self._kept) >= self.limit:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)
