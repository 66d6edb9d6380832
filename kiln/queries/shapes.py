"""Statements kept per shape. Building a list's statement, and SQLAlchemy deriving its cache
key, cost more than running it; a statement kept and reused also runs compiled once
(queries.reads.run). A shape is whatever changes the statement's SQL: the caller's kind and
the list's parameters; values that change per caller (the viewer's id, today's date) are bind
parameters given at execution instead."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel
from sqlalchemy import bindparam

T = TypeVar("T")


class Shapes(Generic[T]):
    """Built once per shape; bounded: past `limit` shapes (a stream of distinct searches), it
    starts over rather than grow."""

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self._built: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        found = self._built.get(key)
        if found is None:
            found = build()
            with self._lock:
                if len(self._built) >= self.limit:
                    self._built.clear()
                self._built[key] = found
        return found


# Which page is read is the page's bound parameters (queries.paging), not the statement's.
PAGE_FIELDS = frozenset({"page", "per_page", "pagination"})
# A list's id bounds (id_after, id_before: each keyset page moves them) are bind parameters
# of its statement (bounds_params); only whether each is given shapes the statement.
BOUND_FIELDS = ("id_after", "id_before")


def parameters_key(params: BaseModel) -> bytes:
    """A list's parameters as one hashable value, equal for equal parameters; the page asked
    for, and the values of its id bounds, leave it unchanged, so every page of a list runs the
    one statement."""
    dumped: Any = params.model_dump(warnings=False, exclude=set(PAGE_FIELDS) | set(BOUND_FIELDS))
    given = [name for name in BOUND_FIELDS if getattr(params, name, None) is not None]
    return orjson.dumps([dumped, given], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def bound(name: str) -> Any:
    """The bind parameter standing for the id bound `name` in a list's statement."""
    return bindparam(f"list_{name}")


def bounds_params(params: BaseModel) -> dict[str, Any]:
    """The values of a list's id bounds (bound), for its statement's execution."""
    return {
        f"list_{name}": value for name in BOUND_FIELDS if (value := getattr(params, name, None)) is not None
    }
