"""The one way hot reads run a Core statement: on the session's connection, past the ORM.

`Session.execute` sends even a plain Core select through the ORM's compile and result
machinery, which measured as a third of a cheap request (~55 us a statement on SQLite). Rows
come back as SQLAlchemy rows; the queries modules turn them into their records, whose times
are the API's strings already (utc_iso, row_columns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import ColumnElement, CursorResult, Executable, String, Table
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import FunctionElement

from kiln.models.base import UTCDateTime


def run(db: Session, statement: Executable, params: Mapping[str, Any] | None = None) -> CursorResult[Any]:
    # Pending ORM changes must be visible to the read, as Session.execute's autoflush makes them.
    if not db._is_clean():
        db.flush()
    return db.connection().execute(statement, params or {})  # type: ignore[arg-type]


class utc_iso(FunctionElement[str]):  # noqa: N801 - named as the SQL function it stands for
    """A UTC time as the API renders it ("2026-11-25T17:31:40.123Z"), formatted by the
    database: parsing a time per column and row in Python cost more than reading the row."""

    type = String()
    inherit_cache = True
    name = "utc_iso"


@compiles(utc_iso, "sqlite")
def _utc_iso_sqlite(element: utc_iso, compiler: Any, **kw: Any) -> str:
    # Stored as naive UTC text ("2026-11-25 17:31:40.123956"). strftime's %f rounds (to .124),
    # so the milliseconds are cut from the text instead, truncated as iso() and to_char's MS do.
    value = compiler.process(element.clauses, **kw)
    return f"(strftime('%Y-%m-%dT%H:%M:%S.', {value}) || substr(substr({value}, 21) || '000', 1, 3) || 'Z')"


@compiles(utc_iso, "postgresql")
def _utc_iso_postgresql(element: utc_iso, compiler: Any, **kw: Any) -> str:
    value = compiler.process(element.clauses, **kw)
    return f"""to_char({value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


def row_column(column: Any) -> ColumnElement[Any]:
    """A column as a row record holds it: a time formatted by utc_iso, under its own name."""
    return utc_iso(column).label(column.key) if isinstance(column.type, UTCDateTime) else column


def row_columns(table: Table) -> list[ColumnElement[Any]]:
    """Every column of `table` for a row record (see row_column)."""
    return [row_column(column) for column in table.c]


class unindexed(FunctionElement[Any]):  # noqa: N801 - named as what it does to its column
    """A column SQLite must not answer from an index: `+column` (SQLite's own idiom). In
    `visibility IN (…) OR id IN (…)`, SQLite otherwise gathers every visible row through the
    visibility index and sorts them all for a page of 20; without it, it walks the primary key
    in the page's order and stops after the page. Other databases get the plain column."""

    type = String()  # the text columns it is used on
    inherit_cache = True
    name = "unindexed"


@compiles(unindexed)
def _unindexed(element: unindexed, compiler: Any, **kw: Any) -> str:
    return compiler.process(element.clauses, **kw)  # type: ignore[no-any-return]


@compiles(unindexed, "sqlite")
def _unindexed_sqlite(element: unindexed, compiler: Any, **kw: Any) -> str:
    return f"+{compiler.process(element.clauses, **kw)}"
