"""Lists cost a fixed number of SQL statements, however many rows exist (no N+1), and the hot
single-object routes cost the statements written here: each new statement on them is a choice."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, insert, select

from kiln.models import Identity, Project, ProjectGroupLink, ProjectTopic, User, UserCustomAttribute

# The token with its user, the page's ids, their rows, the count, identities.
BUDGET = 5
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


def test_current_user_costs_the_token_and_the_identities(api, runtime):
    assert statements_for(runtime, lambda: api("root").get("/user")) == 2


def test_a_project_costs_the_token_and_its_view(api, make, runtime):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    assert statements_for(runtime, lambda: api(owner).get(f"/projects/{project.id}")) == 2


def test_a_project_by_path_costs_the_same(api, make, runtime):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    path = f"/projects/{owner.username}%2F{project.path}"
    assert statements_for(runtime, lambda: api(owner).get(path)) == 2


def test_a_public_project_costs_anonymous_callers_one_statement(api, make, runtime):
    project = make.project(visibility="public")
    assert statements_for(runtime, lambda: api().get(f"/projects/{project.id}")) == 1


def test_a_shared_fork_adds_its_shares_and_its_parent(api, make, runtime):
    owner = make.user()
    group = make.group(owners=[owner])
    add_projects(make, owner, group, 1)
    fork = max(p.id for p in make.db.scalars(select(Project)))
    assert statements_for(runtime, lambda: api(owner).get(f"/projects/{fork}")) == 4


def test_a_non_admin_page_of_projects_costs_a_fixed_number(api, make, runtime):
    """The token, the page's ids, the count, the page's views."""
    owner = make.user()
    for _ in range(25):
        make.project(owner=owner, visibility="private")
    assert statements_for(runtime, lambda: api(owner).get("/projects?per_page=20&order_by=id")) == 4
