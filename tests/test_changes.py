"""The database's clock (kiln.changes): its stamp stays the same while nothing is written and
changes with any write committed anywhere (another connection, process or node), with this
process's own writes as they run, and with a rollback of what was written; it is None while
it cannot tell."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Hashable
from pathlib import Path

import pytest
from sqlalchemy import Engine, select, text, update

from kiln import changes
from kiln.config import Settings
from kiln.db import make_engine, make_engine_unpooled, make_sessionmaker, transaction
from kiln.models import Base, User
from kiln.runtime import Runtime

LISTENING_S = 10.0


def settled(clock: changes.Clock, until: Callable[[Hashable | None], bool]) -> Hashable | None:
    """The clock's stamp once `until` holds of it (a listener hears of a commit soon after,
    not at once), or the last one seen after LISTENING_S."""
    deadline = time.monotonic() + LISTENING_S
    stamp = clock.stamp()
    while not until(stamp) and time.monotonic() < deadline:
        time.sleep(0.01)
        stamp = clock.stamp()
    return stamp


# ---------------------------------------------------------------------------- SQLite


@pytest.fixture
def sqlite_file(tmp_path: Path) -> tuple[Engine, Path]:
    """An engine on a database of its own, with one table."""
    engine = make_engine(Settings(data_dir=tmp_path))
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    yield engine, tmp_path / "kiln.db"
    changes.forget(engine)
    engine.dispose()


def test_sqlite_a_commit_by_another_connection_changes_the_stamp(sqlite_file):
    engine, path = sqlite_file
    clock = changes.clock_of(engine)
    before = clock.stamp()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("INSERT INTO notes (body) VALUES ('x')")
    assert clock.stamp() not in (before, None)


def test_sqlite_reads_and_a_rolled_back_write_elsewhere_leave_the_stamp(sqlite_file):
    engine, path = sqlite_file
    clock = changes.clock_of(engine)
    before = clock.stamp()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("SELECT count(*) FROM notes").fetchall()
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO notes (body) VALUES ('x')")
    other.execute("ROLLBACK")
    assert clock.stamp() == before


# ---------------------------------------------------------------------------- this process


def test_a_write_changes_the_stamp_as_it_runs(runtime, db):
    clock = changes.clock_of(runtime.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    db.execute(update(User).where(User.id == 1).values(bio="now"))
    assert clock.stamp() != before


def test_a_transaction_that_only_read_leaves_the_stamp(runtime, db):
    clock = changes.clock_of(runtime.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    with runtime.sessions() as session:
        session.scalars(select(User.id)).all()
        session.rollback()
    with runtime.sessions() as session, transaction(session):
        session.scalars(select(User.id)).all()
    assert clock.stamp() == before


def test_rolling_back_a_write_changes_the_stamp_again(runtime, db):
    clock = changes.clock_of(runtime.engine)
    nested = db.begin_nested()
    db.execute(update(User).where(User.id == 1).values(bio="gone soon"))
    written = clock.stamp()
    nested.rollback()
    assert clock.stamp() != written


# ---------------------------------------------------------------------------- PostgreSQL


@pytest.fixture
def postgresql(runtime: Runtime, baseline: object) -> Runtime:
    """The worker's PostgreSQL runtime, its baseline (root's row, which the tests touch) in place."""
    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's notifications")
    return runtime


def commit_elsewhere(engine: Engine, statement: str) -> None:
    """`statement`, committed on a connection that is not kiln's."""
    other = make_engine_unpooled(engine.url.render_as_string(hide_password=False))
    try:
        with other.connect() as conn:
            conn.exec_driver_sql(statement)
    finally:
        other.dispose()


def test_postgresql_a_commit_elsewhere_changes_the_stamp(postgresql):
    clock = changes.clock_of(postgresql.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    assert before is not None
    # Touches root's row only as far as its version goes (kiln_changed and the row's own trigger).
    commit_elsewhere(postgresql.engine, "UPDATE users SET name = name WHERE id = 1")
    assert settled(clock, lambda stamp: stamp not in (before, None)) not in (before, None)


def test_postgresql_a_write_rolled_back_elsewhere_is_never_heard(postgresql):
    clock = changes.clock_of(postgresql.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    commit_elsewhere(postgresql.engine, "BEGIN; UPDATE users SET name = name WHERE id = 1; ROLLBACK")
    commit_elsewhere(postgresql.engine, "NOTIFY kiln_other_channel")
    time.sleep(0.2)
    assert clock.stamp() == before


def test_postgresql_every_table_notifies_its_changes(postgresql):
    with postgresql.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname IN ('kiln_changed', 'kiln_changed_truncate')"
            )
        ).all()
    wanted = {
        (table, name) for table in Base.metadata.tables for name in ("kiln_changed", "kiln_changed_truncate")
    }
    assert wanted - {(table, name) for table, name in rows} == set()


def test_postgresql_no_stamp_while_not_listening():
    clock = changes.PostgresClock("postgresql://kiln@127.0.0.1:1/none?connect_timeout=1")
    try:
        assert [clock.stamp() for _ in range(3)] == [None] * 3
        time.sleep(0.2)
        assert clock.stamp() is None
    finally:
        clock.close()


def test_postgresql_a_listener_that_lost_its_connection_forgets_what_it_heard(postgresql):
    clock = changes.clock_of(postgresql.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    with make_engine_unpooled(postgresql.engine.url.render_as_string(hide_password=False)).connect() as conn:
        conn.exec_driver_sql(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = %s",
            (changes.listener_name(),),
        )
    after = settled(clock, lambda stamp: stamp not in (before, None))
    assert after not in (before, None)


def test_sessions_on_a_new_engine_share_its_clock(tmp_path):
    engine = make_engine(Settings(data_dir=tmp_path))
    try:
        sessions = make_sessionmaker(engine)
        with sessions() as session:
            clock = changes.clock_of(session.get_bind())
            assert isinstance(clock, changes.SQLiteClock)
            assert clock is changes.clock_of(engine)
    finally:
        changes.forget(engine)
        engine.dispose()


def test_sqlite_a_new_connection_of_the_clock_never_repeats_a_stamp(sqlite_file):
    """data_version counts again from its start on a new connection (after an error on the
    old one): the connection's number is part of the stamp."""
    engine, _path = sqlite_file
    clock = changes.clock_of(engine)
    assert isinstance(clock, changes.SQLiteClock)
    seen = {clock.stamp()}
    for _ in range(3):
        clock._conn = None  # what an error on the PRAGMA does
        stamp = clock.stamp()
        assert stamp not in seen
        seen.add(stamp)


def test_postgresql_a_write_through_kiln_is_heard_before_it_returns(postgresql):
    """A write answers once this process has heard its commit: every node's listener has it
    by then (measured without: a third of writes returned before their notification came)."""
    clock = changes.clock_of(postgresql.engine)
    sessions = make_sessionmaker(postgresql.engine)
    assert isinstance(clock, changes.PostgresClock)
    for _ in range(30):
        settled(clock, lambda stamp: stamp is not None)
        heard = clock._heard  # what the listener has counted (the stamp counts local writes too)
        with sessions() as session, transaction(session):
            session.execute(text("UPDATE users SET name = name WHERE id = 1"))
        assert clock._heard != heard


def test_postgresql_an_outage_is_logged_once_not_at_every_retry(caplog):
    clock = changes.PostgresClock("postgresql://kiln@127.0.0.1:1/none?connect_timeout=1")
    clock.RETRY_S = 0.02
    try:
        with caplog.at_level("WARNING", logger="kiln.changes"):
            clock.stamp()
            time.sleep(0.5)
    finally:
        clock.close()
    # Only this clock's words: the suite's own clock in this process may speak meanwhile.
    said = [
        r.getMessage() for r in caplog.records if r.name == "kiln.changes" and "port 1 " in r.getMessage()
    ]
    assert len(said) == 1
    assert said[0].startswith("kiln: not listening for database changes")


def test_postgresql_the_listener_s_own_beats_change_nothing(postgresql):
    clock = changes.clock_of(postgresql.engine)
    before = settled(clock, lambda stamp: stamp is not None)
    time.sleep(2.5)  # two beats or more
    assert settled(clock, lambda stamp: stamp is not None) == before


def test_postgresql_a_listener_whose_beat_is_late_gives_no_stamp(postgresql):
    """A peer gone silent, or a proxy that delivers no notifications, never beats back."""
    clock = changes.clock_of(postgresql.engine)
    assert isinstance(clock, changes.PostgresClock)
    settled(clock, lambda stamp: stamp is not None)
    clock._beat_at -= clock.BEAT_LATE_S + 1
    assert clock.stamp() is None
    assert settled(clock, lambda stamp: stamp is not None) is not None  # the next beat comes
