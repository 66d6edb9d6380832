"""Views rendered once per distinct input: the JSON of an entity, kept by everything it is
rendered from.

An entity is a function of its record (rows read on this request) and the instance's base
URL, nothing else; so the JSON it gave for equal inputs is the JSON it would give again, and
a changed row is a new key, never a stale answer. Lists show the same rows again and again
(the first pages, the projects everyone sees): building 20 project views and encoding them
was a quarter of a member's page. The JSON is kept encoded (orjson.Fragment), so the response
embeds it as it is. Bounded: the oldest key goes when a new one would pass the limit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

import orjson


class RenderedViews:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._kept: dict[Hashable, orjson.Fragment] = {}
        # Reads on PostgreSQL render on several threads: one inserts (and evicts) at a time;
        # a lookup needs no lock.
        self._lock = threading.Lock()

    def get(self, key: Hashable, view: Callable[[], Any]) -> orjson.Fragment:
        """The JSON of `view()`, rendered once per `key`: the key must hold every input of the
        view (see the module's docstring)."""
        try:
            found = self._kept.get(key)
        except TypeError:  # a JSON column's dict or list: its text stands for it
            key = _hashable(key)
            found = self._kept.get(key)
        if found is not None:
            return found
        rendered = orjson.Fragment(orjson.dumps(view(), option=orjson.OPT_NON_STR_KEYS))
        with self._lock:
            if len(self._kept) >= self.limit:
                del self._kept[next(iter(self._kept))]
            self._kept[key] = rendered
        return rendered

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict):
        return ("dict", orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_hashable(item) for item in value))
    return value  # type: ignore[no-any-return]
