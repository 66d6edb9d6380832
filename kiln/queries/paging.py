"""Run a list statement for one page: fetch per_page + 1 rows, count at most TOTAL_LIMIT + 1."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import islice
from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, Select, Table, bindparam, case, func, literal, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from kiln.pagination import TOTAL_LIMIT, Page, PageResult
from kiln.queries.reads import run


def offset_page(
    db: Session,
    stmt: Select[Any],
    page: Page,
    *,
    scalars: bool = True,
    core: bool = False,
    params: Mapping[str, Any] | None = None,
    count: Select[Any] | None = None,
) -> PageResult:
    """`core`: a Core statement whose rows the caller turns into records (queries.reads.run);
    otherwise ORM entities (`scalars`) or ORM tuples. `params`: values of the statement's bind
    parameters (a filter built once, like the caller's visibility, takes its values here).
    `count`: a statement counting the same rows faster than counting `stmt`, when the caller
    has one."""
    bounds = {"page_limit": page.per_page + 1, "page_offset": page.offset}
    rows = _fetch(db, _page_of(stmt), scalars=scalars, core=core, params={**(params or {}), **bounds})
    has_next = len(rows) > page.per_page
    rows = rows[: page.per_page]
    total: int | None
    if not has_next and (rows or page.page == 1):
        total = page.offset + len(rows)  # the last page tells the total without counting
        if total > TOTAL_LIMIT:
            total = None
    else:
        total = count_capped(db, stmt, params, count)
    return PageResult(items=rows, total=total, has_next=has_next)


def count_capped(
    db: Session,
    stmt: Select[Any],
    params: Mapping[str, Any] | None = None,
    count: Select[Any] | None = None,
) -> int | None:
    counting = count if count is not None else _count_of(stmt, db.get_bind().dialect.name == "sqlite")
    n = run(db, counting, params).scalar_one()
    return None if n > TOTAL_LIMIT else n


# What a list statement derives for a page and for its count, kept per statement: a caller
# that reuses its statement (a listing built once per shape) then reuses these, and their
# cache keys, instead of building them on every request. The page's bounds are parameters.
@lru_cache(maxsize=512)
def _page_of(stmt: Select[Any]) -> Select[Any]:
    return stmt.limit(bindparam("page_limit")).offset(bindparam("page_offset"))


@lru_cache(maxsize=512)
def _count_of(stmt: Select[Any], sqlite: bool) -> Select[Any]:
    counted = stmt.order_by(None)
    if counted.whereclause is None and sqlite:
        # SQLite counts a whole table from its b-tree without visiting rows (30x faster than
        # stepping through 10,001 of them); PostgreSQL would scan it all, so it keeps the cap.
        return counted.with_only_columns(func.count(), maintain_column_froms=True)
    if counted._distinct or counted._group_by_clauses:
        return select(func.count()).select_from(counted.limit(TOTAL_LIMIT + 1).subquery())
    # Count rows, not columns: reading every column of 10,001 rows cost 25x more.
    rows = counted.with_only_columns(literal(1), maintain_column_froms=True)
    return select(capped_count(rows, _table_id(rows) if sqlite else None))


def capped_count(rows: Select[Any], key: ColumnElement[int] | None = None) -> ScalarSelect[int]:
    """How many rows `rows` selects, counting at most TOTAL_LIMIT + 1 of them. `key`: the
    integer primary key of the one table `rows` reads. While its largest value is at most
    TOTAL_LIMIT the table cannot hold more rows than that (its ids are distinct positive
    integers), and the rows are counted directly: SQLite steps through a capped subquery at
    twice the cost (430 against 230 us for 8,900 of 10,000 projects). Only the branch taken
    runs (SQLite and PostgreSQL both evaluate a CASE's subqueries when reached), so a larger
    table still stops at the cap."""
    limited = select(func.count()).select_from(rows.limit(TOTAL_LIMIT + 1).subquery()).scalar_subquery()
    if key is None:
        return limited
    direct = rows.with_only_columns(func.count(), maintain_column_froms=True).scalar_subquery()
    largest = select(func.coalesce(func.max(key), 0)).correlate(None).scalar_subquery()
    return case((largest <= TOTAL_LIMIT, direct), else_=limited)  # type: ignore[return-value]


def _table_id(rows: Select[Any]) -> ColumnElement[int] | None:
    """The `id` primary key of the one table `rows` reads from, if that is all it reads."""
    froms = rows.get_final_froms()
    if len(froms) != 1 or not isinstance(froms[0], Table):
        return None
    key = froms[0].c.get("id")
    return key if key is not None and key.primary_key else None


def keyset_page(
    db: Session,
    stmt: Select[Any],
    page: Page,
    key: InstrumentedAttribute[int],
    after: int | None,
    before: int | None,
    *,
    scalars: bool = True,
    core: bool = False,
    params: Mapping[str, Any] | None = None,
) -> PageResult:
    """Keyset by one integer column; `sort` decides direction and which bound moves. Rows as in
    offset_page; Core rows carry `key` by name. The bounds and the page's size are parameters
    of a statement derived once per list statement (_keyset_of), so a kept list's pages run
    compiled whatever their bounds."""
    keyed = _keyset_of(stmt, key, page.sort == "asc", after is not None, before is not None)
    values = {**(params or {}), "page_limit": page.per_page + 1}
    if after is not None:
        values["keyset_after"] = after
    if before is not None:
        values["keyset_before"] = before
    rows = _fetch(db, keyed, scalars=scalars, core=core, params=values)
    has_next = len(rows) > page.per_page
    rows = rows[: page.per_page]
    next_key = getattr(rows[-1], key.key) if has_next and rows else None
    return PageResult(items=rows, total=None, has_next=has_next, next_key=next_key)


@lru_cache(maxsize=512)
def _keyset_of(
    stmt: Select[Any], key: InstrumentedAttribute[int], ascending: bool, after: bool, before: bool
) -> Select[Any]:
    if after:
        stmt = stmt.where(key > bindparam("keyset_after"))
    if before:
        stmt = stmt.where(key < bindparam("keyset_before"))
    stmt = stmt.order_by(None).order_by(key.asc() if ascending else key.desc())
    return stmt.limit(bindparam("page_limit"))


def _fetch(
    db: Session, stmt: Select[Any], *, scalars: bool, core: bool, params: Mapping[str, Any] | None
) -> list[Any]:
    if core:
        return list(run(db, stmt, params))
    result = db.execute(stmt, params)
    return list(result.scalars() if scalars else result.all())


def list_page(items: Sequence[Any], page: Page) -> PageResult:
    """One offset page of a list held in memory (refs, diffs, tree entries come from git,
    not from a table); totals follow the same cap as counted lists."""
    total = len(items)
    return PageResult(
        items=list(items[page.offset : page.offset + page.per_page]),
        total=None if total > TOTAL_LIMIT else total,
        has_next=page.offset + page.per_page < total,
    )


def stream_page(items: Iterable[Any], page: Page, count: Callable[[int], int]) -> PageResult:
    """One offset page of a list read as it is taken (a tree may hold millions of entries):
    read up to the page's last item and one more (whether a next page exists). The total is
    known without counting on the last page, else `count(at_most)` counts up to TOTAL_LIMIT + 1,
    past which it is never shown."""
    taken = list(islice(items, page.offset, page.offset + page.per_page + 1))
    has_next = len(taken) > page.per_page
    taken = taken[: page.per_page]
    if not has_next and (taken or page.page == 1):
        total = page.offset + len(taken)
    else:
        total = count(TOTAL_LIMIT + 1)
    return PageResult(items=taken, total=None if total > TOTAL_LIMIT else total, has_next=has_next)
