"""What a page request is and what a page holds; parsed by the API layer, executed by queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DEFAULT_PER_PAGE = 20
MAX_PER_PAGE = 100
# Above this many items totals are not computed (the spec omits X-Total and `last`).
TOTAL_LIMIT = 10_000


@dataclass(slots=True)
class Page:
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE
    keyset: bool = False
    sort: Literal["asc", "desc"] = "desc"

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


@dataclass(slots=True)
class PageResult:
    items: list[Any]
    total: int | None  # None when above TOTAL_LIMIT
    has_next: bool
    # For keyset pages: the key to continue after, when there is a next page, and the query
    # parameter that carries it (None: `id_after`, or `id_before` when sorting descending).
    next_key: Any = None
    cursor_param: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
