"""The read path (kiln.queries.reads.run): a statement the caller keeps runs compiled once,
straight on the driver, and answers exactly as SQLAlchemy would; one built afresh per call
runs through SQLAlchemy and is never kept."""

from __future__ import annotations

import time
from datetime import date
from typing import Any

import pytest
from sqlalchemy import Integer, bindparam, cast, event, func, literal, select, update
from sqlalchemy.exc import DBAPIError, NoResultFound
from sqlalchemy.orm import Session

from kiln import changes
from kiln.db import transaction
from kiln.models import PersonalAccessToken, User
from kiln.queries import reads
from kiln.queries.reads import row_column, run

_TOKENS = PersonalAccessToken.__table__
_USERS = User.__table__
# Kept, as the queries modules keep theirs: JSON, Boolean, Date, a time formatted in SQL, and
# an expanding IN.
KEPT = (
    select(
        _TOKENS.c.id,
        _TOKENS.c.name,
        _TOKENS.c.scopes,
        _TOKENS.c.revoked,
        _TOKENS.c.expires_at,
        _TOKENS.c.last_used_at,
        row_column(_USERS.c.created_at),
        _USERS.c.username,
    )
    .join(_USERS, _USERS.c.id == _TOKENS.c.user_id)
    .where(_TOKENS.c.user_id.in_(bindparam("user_ids", expanding=True)))
    .order_by(_TOKENS.c.id)
)


def sqlalchemy_rows(db: Session, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in db.connection().execute(KEPT, params)]


def test_a_kept_statement_answers_as_sqlalchemy_does_on_every_run(db, make):
    alice, bob = make.user(), make.user()
    make.token(alice, scopes=["api", "read_user"], expires_at=date(2031, 1, 2), name="dated")
    make.token(bob, revoked=True, name="revoked")
    expected = sqlalchemy_rows(db, {"user_ids": [alice.id, bob.id]})
    assert len(expected) == 4  # besides each user's own token
    for _ in range(4):
        rows = run(db, KEPT, {"user_ids": [alice.id, bob.id]})
        assert [tuple(row) for row in rows] == expected
    by_name = {row.name: row for row in run(db, KEPT, {"user_ids": [alice.id, bob.id]})}
    assert by_name["dated"].scopes == ["api", "read_user"]
    assert by_name["dated"].expires_at == date(2031, 1, 2)
    assert by_name["dated"].revoked is False
    assert by_name["dated"].created_at.endswith("Z")
    assert by_name["revoked"].revoked is True


def test_the_values_in_an_expanding_list_and_their_number_may_change_between_runs(db, make):
    users = [make.user() for _ in range(3)]  # one token each
    a, b, c = (user.id for user in users)
    for ids in ([a], [a, b, c], [c, a], [b, c, a], [c], [b], []):
        assert sorted(row.username for row in run(db, KEPT, {"user_ids": ids})) == sorted(
            user.username for user in users if user.id in ids
        )


# A constant SQLAlchemy renders into the SQL itself (aggregate_strings' separator), beside a list.
AGGREGATED = (
    select(_USERS.c.id, func.aggregate_strings(_TOKENS.c.name, ",").label("names"))
    .join(_TOKENS, _TOKENS.c.user_id == _USERS.c.id)
    .where(_USERS.c.id.in_(bindparam("user_ids", expanding=True)))
    .group_by(_USERS.c.id)
    .order_by(_USERS.c.id)
)


def test_a_constant_in_the_sql_is_expanded_once_with_each_length_of_a_list(db, make):
    a, b, c = (make.user().id for _ in range(3))  # one token each
    for ids in ([a], [a, b], [c, a, b], [b], [b, c]):
        expected = [tuple(row) for row in db.connection().execute(AGGREGATED, {"user_ids": ids})]
        assert len(expected) == len(ids)
        assert [tuple(row) for row in run(db, AGGREGATED, {"user_ids": ids})] == expected
    kept = reads._compiled[(id(AGGREGATED), db.get_bind().dialect.name)]
    assert kept is not None
    assert set(kept.expansions) == {(1,), (2,), (3,)}


def test_each_run_is_one_statement_to_the_engine_events(db, make, runtime):
    user = make.user()
    run(db, KEPT, {"user_ids": [user.id]})
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(runtime.engine, "before_cursor_execute", record)
    try:
        for _ in range(3):
            run(db, KEPT, {"user_ids": [user.id]})
    finally:
        event.remove(runtime.engine, "before_cursor_execute", record)
    assert len(seen) == 3
    assert all("FROM personal_access_tokens" in statement for statement in seen)


def test_a_read_sees_what_the_session_has_not_flushed_yet(db, make):
    user = make.user()
    db.add(PersonalAccessToken(user_id=user.id, name="pending", digest="d" * 64, scopes=["api"]))
    assert "pending" in [row.name for row in run(db, KEPT, {"user_ids": [user.id]})]
    db.rollback()


REFUSED = select(cast(bindparam("text", type_=Integer), Integer) + literal(1))


def test_an_error_of_the_database_comes_as_sqlalchemy_s(db, runtime):
    if runtime.engine.dialect.name == "sqlite":
        statement: Any = select(func.json_extract(bindparam("text"), "$.a"))  # malformed JSON
        good = '{"a": 1}'
    else:
        statement = REFUSED  # invalid input syntax for type integer
        good = "1"
    # Two good runs first: the second compiles the statement and learns its row, so the failing
    # runs take the path straight on the driver, whose errors must still come as SQLAlchemy's.
    for _ in range(2):
        assert len(run(db, statement, {"text": good})) == 1
    assert reads._compiled[(id(statement), runtime.engine.dialect.name)].row is not None
    for _ in range(3):
        with pytest.raises(DBAPIError):
            run(db, statement, {"text": "not a number {"})
        db.rollback()


def test_one_value_is_asked_of_a_statement_that_has_none(db):
    statement = select(_USERS.c.id).where(_USERS.c.id == bindparam("id"))
    for _ in range(3):
        with pytest.raises(NoResultFound):
            run(db, statement, {"id": -1}).scalar_one()


def test_a_statement_built_for_each_call_is_never_kept(db, make):
    user = make.user()
    kept = len(reads._compiled)
    for _ in range(50):
        statement = select(_USERS.c.username).where(_USERS.c.id == user.id)
        assert run(db, statement).scalar_one() == user.row.username
    assert len(reads._compiled) == kept


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("2026-11-25 17:31:40.123956", "2026-11-25T17:31:40.123Z"),
        ("2026-11-25 17:31:40.999999", "2026-11-25T17:31:40.999Z"),  # cut, not rounded
        ("2026-11-25 17:31:40.5", "2026-11-25T17:31:40.500Z"),
        ("2026-11-25 17:31:40", "2026-11-25T17:31:40.000Z"),  # written by SQL, no fraction
    ],
)
def test_a_time_is_read_as_the_api_shows_it(db, make, stored, shown):
    user = make.user()
    if db.get_bind().dialect.name == "sqlite":
        db.connection().exec_driver_sql("UPDATE users SET created_at = ? WHERE id = ?", (stored, user.id))
    else:
        db.connection().exec_driver_sql(
            "UPDATE users SET created_at = %s::timestamp AT TIME ZONE 'UTC' WHERE id = %s", (stored, user.id)
        )
    statement = select(row_column(_USERS.c.created_at)).where(_USERS.c.id == bindparam("id"))
    for _ in range(3):
        assert run(db, statement, {"id": user.id}).scalar_one() == shown


# ---------------------------------------------------------------------------- reused rows

# Marked reusable, as the credential and subject statements are.
REUSED = reads.reusable(select(_USERS.c.id, _USERS.c.bio).where(_USERS.c.id == bindparam("id")))


def runs_of(runtime: Any, read: Any) -> tuple[list[Any], int]:
    """What `read()` gives, and how many statements it sent."""
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            statements.append(statement)

    event.listen(runtime.engine, "before_cursor_execute", record)
    try:
        return read(), len(statements)
    finally:
        event.remove(runtime.engine, "before_cursor_execute", record)


@pytest.fixture
def clock(runtime: Any) -> changes.Clock:
    """The database's clock, once it can tell (PostgreSQL's listener starts on first use)."""
    found = changes.clock_of(runtime.engine)
    assert found is not None
    deadline = time.monotonic() + 10
    while found.stamp() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return found


def read_user(runtime: Any, user_id: int) -> list[Any]:
    with runtime.sessions() as session:
        return [tuple(row) for row in run(session, REUSED, {"id": user_id})]


def test_a_reusable_statement_is_read_once_while_nothing_is_written(db, make, runtime, clock):
    alice = make.user(bio="first")
    first, sent = runs_of(runtime, lambda: read_user(runtime, alice.id))
    again, sent_again = runs_of(runtime, lambda: read_user(runtime, alice.id))
    assert (first, sent) == ([(alice.id, "first")], 1)
    assert (again, sent_again) == (first, 0)


def test_any_write_makes_it_read_again(db, make, runtime, clock):
    alice, bob = make.user(bio="first"), make.user()
    read_user(runtime, alice.id)
    db.execute(update(User).where(User.id == bob.id).values(bio="another row"))
    assert runs_of(runtime, lambda: read_user(runtime, alice.id)) == ([(alice.id, "first")], 1)
    db.execute(update(User).where(User.id == alice.id).values(bio="second"))
    assert runs_of(runtime, lambda: read_user(runtime, alice.id)) == ([(alice.id, "second")], 1)


def test_other_parameters_are_other_rows(db, make, runtime, clock):
    alice, bob = make.user(bio="a"), make.user(bio="b")
    read_user(runtime, alice.id)
    assert runs_of(runtime, lambda: read_user(runtime, bob.id)) == ([(bob.id, "b")], 1)


def test_a_write_reads_from_the_database_and_keeps_nothing(db, make, runtime, clock):
    alice = make.user(bio="first")
    read_user(runtime, alice.id)
    with runtime.sessions() as session, transaction(session):
        inside, sent = runs_of(
            runtime, lambda: [tuple(row) for row in run(session, REUSED, {"id": alice.id})]
        )
        session.execute(update(User).where(User.id == alice.id).values(bio="inside"))
        changed = [tuple(row) for row in run(session, REUSED, {"id": alice.id})]
    assert (inside, sent) == ([(alice.id, "first")], 1)
    assert changed == [(alice.id, "inside")]
    assert runs_of(runtime, lambda: read_user(runtime, alice.id)) == ([(alice.id, "inside")], 1)


def test_a_write_rolled_back_is_read_again_as_it_was(db, make, runtime, clock):
    alice = make.user(bio="first")
    with runtime.sessions() as session:
        session.execute(update(User).where(User.id == alice.id).values(bio="never"))
        assert [tuple(row) for row in run(session, REUSED, {"id": alice.id})] == [(alice.id, "never")]
        session.rollback()
    assert runs_of(runtime, lambda: read_user(runtime, alice.id)) == ([(alice.id, "first")], 1)


def test_nothing_is_kept_of_a_row_not_found(db, make, runtime, clock):
    missing = make.user().id + 1000
    read_user(runtime, missing)
    assert runs_of(runtime, lambda: read_user(runtime, missing)) == ([], 1)
