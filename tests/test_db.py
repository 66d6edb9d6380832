"""The engine kiln runs on: on PostgreSQL, statements a connection has run before are
server-side prepared statements, and stay so across the rollback that ends every read."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError, OperationalError

from kiln.db import make_engine_unpooled
from kiln.models import User
from kiln.runtime import Runtime


@pytest.fixture
def postgresql(runtime: Runtime) -> Runtime:
    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    return runtime


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
    admin = make_engine_unpooled(postgresql.engine.url.render_as_string(hide_password=False))
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
    finally:
        admin.dispose()
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
        admin = make_engine_unpooled(postgresql.engine.url.render_as_string(hide_password=False))
        try:
            with admin.connect() as other:
                other.exec_driver_sql(f"SELECT pg_terminate_backend({int(pid)})")
        finally:
            admin.dispose()
        # Ending the transaction finds the connection gone: an OperationalError (kiln answers
        # 503) that discards the pool, not an error of another kind.
        with pytest.raises(OperationalError) as lost:
            conn.rollback()
        assert lost.value.connection_invalidated
    with postgresql.engine.connect() as conn:
        assert conn.execute(statement).scalar_one() >= 0
