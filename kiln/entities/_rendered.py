"""Views rendered once per distinct input: the JSON of an entity, kept by everything it is
rendered from.

An entity is a function of its record (rows read on this request) and the instance's base
URL, nothing else; so the JSON it gave for equal inputs is the JSON it would give again, and
a changed row is a new key, never a stale answer. Lists show the same rows again and again
(the first pages, the projects everyone sees): building 20 project views and encoding them
was a quarter of a member's page. The JSON is kept encoded (orjson.Fragment), so the response
embeds it as it is (kept by kiln.kept.Kept)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import orjson

from kiln.kept import Kept


class RenderedViews:
    def __init__(self, limit: int, budget: int) -> None:
        """At most `limit` views and `budget` bytes of JSON."""
        self._kept: Kept[orjson.Fragment] = Kept(limit, budget)

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
        data = orjson.dumps(view(), option=orjson.OPT_NON_STR_KEYS)
        rendered = orjson.Fragment(data)
        self._kept.put(key, rendered, len(data))
        return rendered

    def clear(self) -> None:
        self._kept.clear()


def _hashable(value: Any) -> Hashable:
    if isinstance(value, dict):
        return ("dict", orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_hashable(item) for item in value))
    return value  # type: ignore[no-any-return]
