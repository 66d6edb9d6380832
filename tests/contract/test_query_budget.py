"""Lists cost a fixed number of SQL statements, however many rows exist (no N+1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, insert

from kiln.models import Identity, ProjectGroupLink, ProjectTopic, User, UserCustomAttribute

# The token with its user, the page (namespace ids ride along), the count, identities.
BUDGET = 4
_TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


@contextmanager
def counting(engine: Any) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if not statement.lstrip().upper().startswith(_TRANSACTION):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def add_users(db: Any, start: int, n: int) -> None:
    """Users with an identity and a custom attribute each, so per-user loads would show."""
    rows = [
        {"username": f"b{i}", "email": f"b{i}@example.com", "name": f"B {i}"} for i in range(start, start + n)
    ]
    ids = db.scalars(insert(User).returning(User.id), rows).all()
    db.execute(insert(Identity), [{"user_id": i, "provider": "ldap", "extern_uid": f"uid-{i}"} for i in ids])
    db.execute(insert(UserCustomAttribute), [{"user_id": i, "key": "team", "value": "x"} for i in ids])
    db.commit()


def statements_for(runtime: Any, call: Callable[[], Any]) -> int:
    """Statements of the second call: the first may record the token's use."""
    call()
    with counting(runtime.engine) as statements:
        r = call()
    assert r.status_code == 200, r.text
    return len(statements)


def test_user_list_costs_the_same_for_25_and_250_users(api, db, runtime):
    root = api("root")
    add_users(db, 0, 25)
    few = statements_for(runtime, lambda: root.get("/users?per_page=20"))
    add_users(db, 25, 225)
    many = statements_for(runtime, lambda: root.get("/users?per_page=20"))
    assert few == many == BUDGET


def test_user_list_with_custom_attributes_is_constant(api, db, runtime):
    root = api("root")
    add_users(db, 0, 25)
    few = statements_for(runtime, lambda: root.get("/users?per_page=20&with_custom_attributes=true"))
    add_users(db, 25, 100)
    many = statements_for(runtime, lambda: root.get("/users?per_page=20&with_custom_attributes=true"))
    assert few == many == BUDGET + 1


def test_short_list_stays_within_the_budget(api, runtime):
    assert statements_for(runtime, lambda: api("root").get("/users")) <= BUDGET


def add_projects(make: Any, owner: Any, group: Any, n: int) -> None:
    """Projects with what their views show: topics, a share, a fork parent."""
    parent = make.project(owner=owner, visibility="public")
    for i in range(n):
        p = make.project(namespace=group if i % 2 else None, owner=owner, forked_from_id=parent.id)
        make.db.execute(
            insert(ProjectTopic), [{"project_id": p.id, "name": "t1"}, {"project_id": p.id, "name": "t2"}]
        )
        make.db.execute(
            insert(ProjectGroupLink), [{"project_id": p.id, "group_id": group.id, "group_access": 10}]
        )
    make.db.commit()


@pytest.mark.parametrize(
    "query", ["/projects?per_page=3", "/projects?per_page=3&statistics=true&simple=false"]
)
def test_project_list_costs_the_same_for_5_and_40_projects(api, make, runtime, query):
    owner = make.user()
    group = make.group(owners=[owner])
    caller = api(owner)
    add_projects(make, owner, group, 5)
    few = statements_for(runtime, lambda: caller.get(query))
    add_projects(make, owner, group, 35)
    many = statements_for(runtime, lambda: caller.get(query))
    assert few == many
