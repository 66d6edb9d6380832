"""Declarative base, UTC timestamps that survive SQLite, and the naming convention Alembic needs."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    DateTime,
    Integer,
    MetaData,
    String,
    Table,
    TypeDecorator,
    event,
    func,
    select,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: SQLite keeps no zone, PostgreSQL's timestamptz does."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    # Integers are 64-bit on PostgreSQL; SQLite needs INTEGER for its rowid primary keys.
    type_annotation_map = {datetime: UTCDateTime(), int: BigInteger().with_variant(Integer(), "sqlite")}


class Timestamps:
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class RowVersion:
    """A random number the database gives the row afresh on every insert and update (its own
    triggers), so never one a rolled-back write or a restored backup used. What is kept about
    a row across requests is kept under it: a write by any process, node or statement, ORM or
    not, is seen by the next read that compares it."""

    row_version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


def contribution(**kw: Any) -> dict[str, Any]:
    """Column info marking a user reference that soft deletion hands to the ghost user
    and hard deletion removes with its row (see services/users.delete)."""
    return {"contribution": True, **kw}


class IdHighWater(Base):
    """The highest id a table has handed out. SQLite gives a new row the highest id in use
    plus one, so deleting the newest row would hand its id to the next one; the ids of
    projects, namespaces and users name their repositories and files on disk, removed after
    the delete (the new row's with them), and clients hold ids. SQLite's own AUTOINCREMENT
    would do this, but only for a table created with it: existing databases would have to
    rebuild these tables, which half the schema references, with foreign keys switched off."""

    __tablename__ = "id_high_water"

    table_name: Mapped[str] = mapped_column(String(64), primary_key=True)
    last_id: Mapped[int]


# Ids are BIGINT: a larger number names no row.
MAX_ID = 2**63 - 1


def is_numeric(text: str) -> bool:
    """ASCII digits only: what a route or a client means as an id (str.isdigit also takes
    "²" and other digits int() refuses)."""
    return text.isascii() and text.isdigit()


def numeric_id(text: str) -> int | None:
    """The id `text` spells, or None when it spells none (not digits, or past MAX_ID)."""
    if not is_numeric(text):
        return None
    value = int(text)
    return value if value <= MAX_ID else None


def never_reuse_ids(model: type[Base]) -> None:
    """Rows of `model` draw their ids from IdHighWater on SQLite, inside the insert's write
    transaction (SQLite's one writer), so two inserts never draw the same id; PostgreSQL's
    sequences never hand an id out twice. One statement: past both the largest id in use
    and the last one drawn."""
    table: Table = model.__table__  # type: ignore[assignment]
    marks: Table = IdHighWater.__table__  # type: ignore[assignment]
    above_in_use = select(func.coalesce(func.max(table.c.id), 0) + 1).scalar_subquery()
    upsert = sqlite_insert(marks).values(table_name=table.name, last_id=above_in_use)
    next_id = upsert.on_conflict_do_update(
        index_elements=[marks.c.table_name],
        set_={"last_id": func.max(upsert.excluded.last_id, marks.c.last_id + 1)},
    ).returning(marks.c.last_id)

    @event.listens_for(model, "before_insert")
    def draw(_mapper: Any, connection: Connection, row: Any) -> None:
        if row.id is None and connection.dialect.name == "sqlite":
            row.id = connection.execute(next_id).scalar_one()
