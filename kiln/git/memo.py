"""Answers that depend only on immutable git objects (a commit id and a path), kept in memory
so the costly history walks run once per commit. Never stale: a new commit is a new key.
Each node keeps its own; nothing depends on finding an answer here."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    """A thread-safe least-recently-used map of bounded size."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[bool, V | None]:
        """(found, value): a value may itself be None."""
        with self._lock:
            if key not in self._items:
                return False, None
            self._items.move_to_end(key)
            return True, self._items[key]

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def compute(self, key: Hashable, fn: Callable[[], V]) -> V:
        """The remembered value, or fn()'s (computed outside the lock, so two threads may
        both compute a missing key; they get the same answer)."""
        found, value = self.get(key)
        if found:
            return value  # type: ignore[return-value]
        value = fn()
        self.put(key, value)
        return value
