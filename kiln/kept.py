"""What a process keeps across requests: values under keys that hold everything the value
was made from, so that an equal key can only mean an equal value and nothing kept is ever
stale (a changed input is a new key). Bounded by a count and by bytes: the oldest keys go
when a new value would pass either; a value larger than a sixteenth of the bytes is not
kept (a project's description has no length limit)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(Generic[V]):
    def __init__(self, limit: int, budget: int, size: Callable[[V], int] | None = None) -> None:
        """`budget`: bytes, as `size` estimates a value's (its text, not Python's overhead),
        or as each `put` says."""
        self.limit = limit
        self.budget = budget
        self.size = size
        self._kept: dict[Hashable, tuple[V, int]] = {}
        self._bytes = 0
        # Reads on PostgreSQL run on several threads: one inserts (and evicts) at a time; a
        # lookup needs no lock.
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        found = self._kept.get(key)
        return None if found is None else found[0]

    def put(self, key: Hashable, value: V, size: int | None = None) -> None:
        if size is None:
            if self.size is None:
                raise TypeError("a Kept without a size function is told each value's size")
            size = self.size(value)
        n = size
        if n > self.budget // 16:
            return
        with self._lock:
            old = self._kept.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            while self._kept and (len(self._kept) >= self.limit or self._bytes + n > self.budget):
                _, (_, gone) = _oldest(self._kept)
                self._bytes -= gone
            self._kept[key] = (value, n)
            self._bytes += n

    def many(
        self,
        wanted: Mapping[K, Hashable | None],
        read: Callable[[list[K]], Iterable[tuple[K, V, Hashable | None]]],
    ) -> dict[K, V]:
        """The values of `wanted` (id -> the key it would be kept under; None: never kept),
        those not kept read at once: `read(missing ids)` yields (id, value, the key to keep it
        under, or None). The key a value is kept under must come from what it was itself read
        with, not from `wanted`: a write between the two reads then leaves it under a key no
        later read asks for."""
        found: dict[K, V] = {}
        for ident, key in wanted.items():
            value = None if key is None else self.get(key)
            if value is not None:
                found[ident] = value
        missing = [ident for ident in wanted if ident not in found]
        if missing:
            for ident, value, key in read(missing):
                found[ident] = value
                if key is not None:
                    self.put(key, value)
        return found

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> int:
        return self._bytes


def _oldest(kept: dict[Hashable, tuple[V, int]]) -> tuple[Hashable, tuple[V, int]]:
    key = next(iter(kept))
    return key, kept.pop(key)


def text_size(*parts: object) -> int:
    """The bytes of the text in `parts` (rows, tuples, lists, strings), for a Kept's budget:
    what grows with what users write."""
    total = 0
    for part in parts:
        if isinstance(part, str | bytes):
            total += len(part)
        elif isinstance(part, tuple | list):
            total += text_size(*part)
        elif isinstance(part, dict):
            total += text_size(*part.keys(), *part.values())
        else:
            total += 8
    return total
