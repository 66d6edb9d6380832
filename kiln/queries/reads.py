"""The one way hot reads run a Core statement: on the session's connection, past the ORM.

`Session.execute` sends even a plain Core select through the ORM's compile and result
machinery, which measured as a third of a cheap request (~55 us a statement on SQLite); and
`Connection.execute` still derives the statement's cache key, rebuilds its parameters from it
and wraps each row (~100 us a statement). A statement object seen a second time is one the
caller keeps (the cached statement per shape that queries modules build): from then on it
runs compiled once per dialect, straight on the driver's cursor, with SQLAlchemy's own bind
and result processors and the engine's statement events (metrics, the statement counts
tests assert). Rows come back as named tuples; the queries modules turn them into their
records, whose times are the API's strings already (utc_iso, row_columns)."""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Dialect, Executable, String, Table
from sqlalchemy.engine.interfaces import DBAPICursor
from sqlalchemy.exc import MultipleResultsFound, NoResultFound
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import ExpandedState, SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeEngine

from kiln import changes
from kiln.kept import Kept, text_size
from kiln.models.base import UTCDateTime


class Rows:
    """A statement's rows, read to the end: what the queries modules use of a result."""

    __slots__ = ("_rows",)

    def __init__(self, rows: Sequence[Any]) -> None:
        self._rows = rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def all(self) -> list[Any]:
        return list(self._rows)

    def first(self) -> Any | None:
        return self._rows[0] if self._rows else None

    def scalar_one(self) -> Any:
        if not self._rows:
            raise NoResultFound("No row was found when one was required")
        if len(self._rows) > 1:
            raise MultipleResultsFound("Multiple rows were found when exactly one was required")
        return self._rows[0][0]


def run(db: Session, statement: Executable, params: Mapping[str, Any] | None = None) -> Rows:
    if id(statement) in _reusable:
        return _reused(db, statement, params or {})
    return _run(db, statement, params)


def _run(db: Session, statement: Executable, params: Mapping[str, Any] | None) -> Rows:
    # Pending ORM changes must be visible to the read, as Session.execute's autoflush makes them.
    if not db._is_clean():
        db.flush()
    conn = db.connection()
    compiled = _compiled_for(statement, conn.dialect)
    if compiled is None or conn.engine.echo:
        return Rows(conn.execute(statement, params or {}).all())  # type: ignore[call-overload]
    return compiled.execute(conn, params or {})


# Statements whose rows are reused while the database is unchanged (kiln.changes): rows that
# depend on the database and on their parameters alone (no time or randomness in their SQL:
# a date is a parameter). Held so that their ids stay theirs.
_reusable: dict[int, Executable] = {}
# Bounded as a process's other kept values (kiln.kept): small rows, the lookups every request
# starts with (a credential with its user, a project with the caller's level).
_REUSED_LIMIT = 8192
_REUSED_BYTES = 8 * 1024 * 1024
_kept: Kept[tuple[Hashable, Rows]] = Kept(_REUSED_LIMIT, _REUSED_BYTES)

S = TypeVar("S", bound=Executable)


def reusable(statement: S) -> S:
    """Let `run` reuse the statement's rows while the database is unchanged."""
    _reusable[id(statement)] = statement
    return statement


def _reused(db: Session, statement: Executable, params: Mapping[str, Any]) -> Rows:
    """The rows an earlier run read, if no write was committed anywhere since (the clock's
    stamp is the same); else read now, and kept under the stamp taken before the read. Never
    inside a write, whose own changes the kept rows do not hold, nor kept from one."""
    clock = None if db.info.get("tx_depth") else changes.clock_of(db.get_bind())
    stamp = None if clock is None else clock.stamp()
    if stamp is None:
        return _run(db, statement, params)
    try:
        # A list (an expanding parameter: a page's ids, names) counts as the tuple of its values.
        key: Hashable = (
            id(statement),
            tuple(
                (name, tuple(value) if isinstance(value, list) else value) for name, value in params.items()
            ),
        )
        hash(key)
    except TypeError:
        return _run(db, statement, params)
    found = _kept.get(key)
    if found is not None and found[0] == stamp:
        return found[1]
    rows = _run(db, statement, params)
    if rows and clock.stamp() == stamp and clock.read_at(db.connection(), stamp):  # type: ignore[union-attr]
        _kept.put(key, (stamp, rows), text_size(rows.all()))
    return rows


def forget_reused() -> None:
    """Drop every reused row (tests that measure what a request costs the database)."""
    _kept.clear()


# Statements seen once, by id (held so that the id stays theirs), and those compiled: a
# statement built afresh per request never gets past the first, and both stay bounded.
_SEEN_LIMIT = 1024
_COMPILED_LIMIT = 4096
_seen: OrderedDict[int, Executable] = OrderedDict()
_compiled: dict[tuple[int, str], _Compiled | None] = {}
_lock = threading.Lock()


def _compiled_for(statement: Executable, dialect: Dialect) -> _Compiled | None:
    key = (id(statement), dialect.name)
    found = _compiled.get(key, _ABSENT)
    if found is not _ABSENT:
        return found  # type: ignore[return-value]
    with _lock:
        if _seen.pop(id(statement), None) is not statement:
            _seen[id(statement)] = statement
            if len(_seen) > _SEEN_LIMIT:
                _seen.popitem(last=False)
            return None
        if len(_compiled) >= _COMPILED_LIMIT:
            return None
        _compiled[key] = _Compiled.of(statement, dialect)
        return _compiled[key]


_ABSENT = object()


# Sets of list lengths kept per statement (a page's ids: at most per_page + 1 lengths).
_EXPANSIONS_LIMIT = 128


class _Compiled:
    """A statement compiled for one dialect, with what running it needs besides the driver."""

    def __init__(self, statement: Executable, compiled: SQLCompiler, dialect: Dialect) -> None:
        self.statement = statement  # keeps id(statement) this statement's
        self.compiled = compiled
        self.dialect = dialect
        self.expanding = bool(compiled.post_compile_params or compiled.literal_execute_params)
        # Lists expanded into `IN (?, ?, ...)`: the SQL depends on their lengths only, so it is
        # expanded once per set of lengths (SQLAlchemy re-renders it on every run). Constants
        # SQLAlchemy renders into the SQL itself (literal_execute: the separator of
        # aggregate_strings) are the statement's own and go in once too, unless a run gives
        # them a value; other such values, and tuples, are expanded each time.
        post_compile = compiled.post_compile_params
        literals = compiled.literal_execute_params
        self.lists = tuple(compiled.bind_names[bind] for bind in post_compile)
        self.literals = frozenset(compiled.bind_names[bind] for bind in literals)
        self.by_lengths = self.expanding
        self.by_lengths &= all(bind.expanding and not bind.type._is_tuple_type for bind in post_compile)
        self.by_lengths &= all(
            not bind.expanding and not bind.callable and bind.value is not None for bind in literals
        )
        self.expansions: dict[tuple[int, ...], ExpandedState] = {}
        self.positional = compiled.positional
        # Known once SQLAlchemy has run it (its first run here): the row's names and processors.
        self.row: Callable[..., Any] | None = None
        self.processors: list[tuple[int, Callable[[Any], Any]]] = []

    @classmethod
    def of(cls, statement: Executable, dialect: Dialect) -> _Compiled | None:
        compiled = statement.compile(dialect=dialect)
        if not statement.is_select or not isinstance(compiled, SQLCompiler) or compiled.escaped_bind_names:
            return None
        return cls(statement, compiled, dialect)

    def learn(self, keys: Sequence[str], description: Sequence[Any] | None) -> None:
        columns = self.compiled._result_columns
        if description is None or len(columns) != len(description) or len(keys) != len(description):
            return
        processors = []
        for index, (column, described) in enumerate(zip(columns, description, strict=True)):
            processor = column[3]._cached_result_processor(self.dialect, described[1])
            if processor is not None:
                processors.append((index, processor))
        self.processors = processors
        self.row = namedtuple("Row", [str(key) for key in keys], rename=True)._make  # type: ignore[misc]

    def execute(self, conn: Connection, params: Mapping[str, Any]) -> Rows:
        compiled = self.compiled
        if self.row is None:
            # Not learnt yet (its first run here): SQLAlchemy runs it and run() learns from it.
            result = conn.execute(self.statement, params)  # type: ignore[call-overload]
            self.learn(list(result.keys()), result.cursor.description)
            return Rows(result.all())
        if self.by_lengths and self.literals.isdisjoint(params):
            values = compiled.construct_params(params, escape_names=False)
            lengths = tuple(len(values[name]) for name in self.lists)
            state = self.expansions.get(lengths)
            if state is None:
                state = compiled.construct_expanded_state(params, escape_names=False)
                if len(self.expansions) < _EXPANSIONS_LIMIT:
                    self.expansions[lengths] = state
            for name, expanded in state.parameter_expansion.items():
                values.update(zip(expanded, values.pop(name), strict=True))
            sql, order, binders = state.statement, state.positiontup, state.processors
        elif self.expanding:
            state = compiled.construct_expanded_state(params, escape_names=False)
            sql, values, order, binders = (
                state.statement,
                state.parameters,
                state.positiontup,
                state.processors,
            )
        else:
            values = compiled.construct_params(params, escape_names=False)
            sql, order, binders = compiled.string, compiled.positiontup, compiled._bind_processors
        for name, binder in binders.items():
            if name in values:
                values[name] = binder(values[name])  # type: ignore[operator]
        parameters: Any = tuple(values[name] for name in order or ()) if self.positional else values
        cursor: DBAPICursor | None = None
        try:
            cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
            conn.dispatch.before_cursor_execute(conn, cursor, sql, parameters, None, False)
            cursor.execute(sql, parameters)
            conn.dispatch.after_cursor_execute(conn, cursor, sql, parameters, None, False)
            raw = cursor.fetchall()
            cursor.close()
        except Exception as error:
            # SQLAlchemy's own handling: its exception types, a lost connection invalidated.
            conn._handle_dbapi_exception(error, sql, parameters, cursor, None)
        make = self.row
        if self.processors:
            return Rows([make(_processed(row, self.processors)) for row in raw])
        return Rows([make(row) for row in raw])


def _processed(row: Sequence[Any], processors: list[tuple[int, Callable[[Any], Any]]]) -> list[Any]:
    values = list(row)
    for index, processor in processors:
        values[index] = processor(values[index])
    return values


class _APITime(TypeEngine[str]):
    """utc_iso's result: the API's string. SQLite's stored text is cut into it in Python, which
    costs a fifth of strftime's formatting in SQL (0.75 us a value: a third of the statement
    for a page of users); PostgreSQL formats it (to_char) on the server."""

    cache_ok = True

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        return _api_time_from_sqlite if dialect.name == "sqlite" else None


def _api_time_from_sqlite(value: str | None) -> str | None:
    # Stored as naive UTC text: "2026-11-25 17:31:40.123956", or without a fraction when
    # written by SQL ("2026-11-25 17:31:40"). Milliseconds are cut, not rounded, as to_char's MS.
    if value is None:
        return None
    if len(value) > 22:
        return value[:10] + "T" + value[11:23] + "Z"
    return f"{value[:10]}T{value[11:19]}.{value[20:23]:0<3}Z"


class utc_iso(FunctionElement[str]):  # noqa: N801 - named as the SQL function it stands for
    """A UTC time as the API renders it ("2026-11-25T17:31:40.123Z"): parsing a time per
    column and row into a datetime, and formatting it back, cost more than reading the row."""

    type = _APITime()
    inherit_cache = True
    name = "utc_iso"


@compiles(utc_iso, "sqlite")
def _utc_iso_sqlite(element: utc_iso, compiler: Any, **kw: Any) -> str:
    return f"({compiler.process(element.clauses, **kw)})"  # the text, cut by _APITime


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
