"""The engine kiln runs on: on PostgreSQL, statements a connection has run before are
server-side prepared statements, and stay so across the rollback that ends every read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, delete, func, select, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session

from kiln.db import make_engine, make_engine_unpooled, make_sessionmaker, transaction, try_transaction
from kiln.models import Job, User
from kiln.runtime import Runtime


@pytest.fixture
def postgresql(runtime: Runtime) -> Iterator[Runtime]:
    """The suite's runtime on PostgreSQL; its pool is emptied afterwards, so no connection
    whose server process a test ended is handed to a later test."""
    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    yield runtime
    runtime.engine.dispose()


def terminate_backend(engine: Engine, pid: int) -> None:
    """Ends the server process behind connection `pid`, as a server restart or an
    administrator would, from a connection of its own; returns once it has ended (the
    timeout argument, PostgreSQL 14 and later), so the test never races the signal."""
    admin = make_engine_unpooled(engine.url.render_as_string(hide_password=False))
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)}, 10000)")
    finally:
        admin.dispose()


def test_a_statement_run_again_after_rollbacks_runs_prepared(postgresql):
    statement = select(User.id, User.username).where(User.id == 1)
    with postgresql.engine.connect() as conn:
        for _ in range(3):
            conn.execute(statement).all()
            conn.rollback()
        prepared = conn.exec_driver_sql("SELECT statement FROM pg_prepared_statements").scalars().all()
    assert [text for text in prepared if "users.username" in text and "FROM users" in text]


def test_a_connection_the_server_dropped_is_replaced(postgresql):
    statement = select(func.count(User.id))
    with postgresql.engine.connect() as conn:
        conn.execute(statement).all()
        conn.rollback()
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
    terminate_backend(postgresql.engine, pid)
    # The dropped connection fails once, which discards every pooled connection; the next
    # checkout is a fresh one.
    outcomes = []
    for _ in range(2):
        try:
            with postgresql.engine.connect() as conn:
                conn.execute(statement).scalar_one()
            outcomes.append("answered")
        except DBAPIError as exc:
            outcomes.append("pool discarded" if exc.connection_invalidated else str(exc))
    assert outcomes in (["answered", "answered"], ["pool discarded", "answered"])


def test_a_read_whose_connection_the_server_dropped_ends_as_a_lost_connection(postgresql):
    statement = select(func.count(User.id))
    with postgresql.engine.connect() as conn:
        conn.execute(statement).all()
        pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        terminate_backend(postgresql.engine, pid)
        # Ending the transaction finds the connection gone: an OperationalError (kiln answers
        # 503) that discards the pool, not an error of another kind.
        with pytest.raises(OperationalError) as lost:
            conn.rollback()
        assert lost.value.connection_invalidated
    with postgresql.engine.connect() as conn:
        assert conn.execute(statement).scalar_one() >= 0


def test_sixteen_requests_at_once_keep_their_connections_on_postgresql(postgresql):
    """Connections beyond the pool size are closed when given back: 16 clients at once on a
    pool of 10 made PostgreSQL start a server process (and plan every statement again) for
    most requests. The default pool keeps what 16 concurrent requests use."""
    engine = make_engine(postgresql.settings)
    try:

        def sixteen_at_once() -> set[int]:
            held = [engine.connect() for _ in range(16)]
            try:
                return {conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() for conn in held}
            finally:
                for conn in held:
                    conn.close()

        first = sixteen_at_once()
        assert len(first) == 16
        assert sixteen_at_once() == first
    finally:
        engine.dispose()


def transaction_status(db: Session) -> Any:
    return db.connection().connection.dbapi_connection.info.transaction_status  # type: ignore[union-attr]


def test_sessions_read_outside_any_transaction_and_write_inside_one_on_postgresql(postgresql):
    """No BEGIN and no ROLLBACK around reads (two round trips per request); a write is one
    transaction, and the session reads in autocommit again after it."""
    idle, in_transaction = psycopg.pq.TransactionStatus.IDLE, psycopg.pq.TransactionStatus.INTRANS
    with make_sessionmaker(postgresql.engine)() as db:
        db.execute(select(func.count(User.id))).scalar_one()
        assert transaction_status(db) == idle
        with transaction(db):
            db.execute(select(func.count(User.id))).scalar_one()
            assert transaction_status(db) == in_transaction
        db.execute(select(func.count(User.id))).scalar_one()
        assert transaction_status(db) == idle


def test_a_write_that_would_not_wait_leaves_later_statements_waiting_for_locks(postgresql):
    """try_transaction refuses to wait for a lock; joined into a longer transaction as a
    savepoint, its limit ends with it, or every later read of that transaction fails as soon
    as it meets a lock (autovacuum truncating a table holds one for a moment)."""
    with postgresql.engine.connect() as conn:
        outer = conn.begin()
        try:
            before = conn.exec_driver_sql("SHOW lock_timeout").scalar_one()
            with Session(bind=conn, join_transaction_mode="create_savepoint") as db:
                with try_transaction(db) as free:
                    assert free
                    during = db.execute(text("SHOW lock_timeout")).scalar_one()
                    db.add(Job(kind=PROBE, payload={}))
                    db.flush()
                after = db.execute(text("SHOW lock_timeout")).scalar_one()
                assert db.execute(select(func.count(Job.id)).where(Job.kind == PROBE)).scalar_one() == 1
        finally:
            outer.rollback()
    assert (before, during, after) == (before, "1ms", before)


PROBE = "kiln-test-probe"


def failing_write(db: Session) -> None:
    with transaction(db):
        db.add(Job(kind=PROBE, payload={}))
        db.flush()
        raise RuntimeError("the write fails after its first statement")


def test_a_failed_write_leaves_nothing_behind_on_postgresql(postgresql):
    sessions = make_sessionmaker(postgresql.engine)
    probe = PROBE
    try:
        with sessions() as db:
            db.execute(select(func.count(User.id))).scalar_one()  # a read first, in autocommit
            with pytest.raises(RuntimeError):
                failing_write(db)
        with sessions() as db:
            assert db.execute(select(func.count(Job.id)).where(Job.kind == probe)).scalar_one() == 0
    finally:
        with postgresql.engine.begin() as conn:
            conn.execute(delete(Job).where(Job.kind == probe))
