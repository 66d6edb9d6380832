"""Lists cost a fixed number of SQL statements, however many rows exist (no N+1), and the hot
single-object routes cost the statements written here: each new statement on them is a choice."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, insert, select

from kiln.api import _answers
from kiln.models import (
    GroupCustomAttribute,
    Identity,
    Member,
    Project,
    ProjectGroupLink,
    ProjectStar,
    ProjectTopic,
    ProtectedBranch,
    User,
    UserCustomAttribute,
)
from tests.repositories import new_project
from tests.statements import count, recording

# The token with its user, the page's ids with their rows' versions, the count: the rows
# themselves are kept by version (services.users), read once.
BUDGET = 3


def add_users(db: Any, start: int, n: int) -> None:
    """Users with an identity and a custom attribute each, so per-user loads would show."""
    rows = [
        {"username": f"b{i}", "email": f"b{i}@example.com", "name": f"B {i}"} for i in range(start, start + n)
    ]
    ids = db.scalars(insert(User).returning(User.id), rows).all()
    db.execute(insert(Identity), [{"user_id": i, "provider": "ldap", "extern_uid": f"uid-{i}"} for i in ids])
    db.execute(insert(UserCustomAttribute), [{"user_id": i, "key": "team", "value": "x"} for i in ids])
    db.commit()


def test_user_list_costs_the_same_for_25_and_250_users(api, db, runtime):
    root = api("root")
    add_users(db, 0, 25)
    few = count(runtime, lambda: root.get("/users?per_page=20"))
    add_users(db, 25, 225)
    many = count(runtime, lambda: root.get("/users?per_page=20"))
    assert few == many == BUDGET


def test_user_list_with_custom_attributes_is_constant(api, db, runtime):
    root = api("root")
    add_users(db, 0, 25)
    few = count(runtime, lambda: root.get("/users?per_page=20&with_custom_attributes=true"))
    add_users(db, 25, 100)
    many = count(runtime, lambda: root.get("/users?per_page=20&with_custom_attributes=true"))
    assert few == many == BUDGET + 1


def test_short_list_stays_within_the_budget(api, runtime):
    assert count(runtime, lambda: api("root").get("/users")) <= BUDGET


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
    few = count(runtime, lambda: caller.get(query))
    add_projects(make, owner, group, 35)
    many = count(runtime, lambda: caller.get(query))
    assert few == many


def test_current_user_costs_the_token_alone(api, runtime):
    assert count(runtime, lambda: api("root").get("/user")) == 1


def test_a_project_costs_the_token_and_its_view(api, make, runtime):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    assert count(runtime, lambda: api(owner).get(f"/projects/{project.id}")) == 2


def test_a_project_by_path_costs_the_same(api, make, runtime):
    owner = make.user()
    project = make.project(owner=owner, visibility="private")
    path = f"/projects/{owner.username}%2F{project.path}"
    assert count(runtime, lambda: api(owner).get(path)) == 2


def test_a_public_project_costs_anonymous_callers_one_statement(api, make, runtime):
    project = make.project(visibility="public")
    assert count(runtime, lambda: api().get(f"/projects/{project.id}")) == 1


def test_a_shared_fork_adds_its_shares_and_its_parent(api, make, runtime):
    owner = make.user()
    group = make.group(owners=[owner])
    add_projects(make, owner, group, 1)
    fork = max(p.id for p in make.db.scalars(select(Project)))
    assert count(runtime, lambda: api(owner).get(f"/projects/{fork}")) == 4


def test_a_non_admin_page_of_projects_costs_a_fixed_number(api, make, runtime):
    """The token, the page's ids, the count, the page's views."""
    owner = make.user()
    for _ in range(25):
        make.project(owner=owner, visibility="private")
    assert count(runtime, lambda: api(owner).get("/projects?per_page=20&order_by=id")) == 4


# ---------------------------------------------------------------------------- every list
#
# Each list is read twice, with few rows and with many (both more than a page, so both pages
# count their total): the same number of statements either way.


def constant(runtime: Any, call: Callable[[], Any], grow: Callable[[], None]) -> int:
    few = count(runtime, call)
    grow()
    many = count(runtime, call)
    assert few == many, f"{few} statements with few rows, {many} with many"
    return many


def add_plain_users(db: Any, n: int) -> list[int]:
    start = db.scalar(select(func.count()).select_from(User))
    rows = [
        {"username": f"m{start + i}", "email": f"m{start + i}@example.com", "name": "M"} for i in range(n)
    ]
    ids = list(db.scalars(insert(User).returning(User.id), rows).all())
    db.commit()
    return ids


def add_members(db: Any, n: int, *, creator: int, requested: bool = False, **source: int) -> None:
    """Members (or access requesters) of a group or project, each added by `creator`."""
    ids = add_plain_users(db, n)
    now = datetime.now(UTC) if requested else None
    db.execute(
        insert(Member),
        [
            {"user_id": i, "access_level": 30, "created_by_id": creator, "requested_at": now, **source}
            for i in ids
        ],
    )
    db.commit()


def add_groups(make: Any, owner: Any, n: int, *, parent: Any = None) -> None:
    """Groups with a custom attribute and a project each, under `parent` when given."""
    for _ in range(n):
        g = make.group(owners=[owner], parent=parent, visibility="public")
        make.db.execute(insert(GroupCustomAttribute), [{"namespace_id": g.id, "key": "k", "value": "v"}])
        make.project(namespace=g, owner=owner, visibility="public")
    make.db.commit()


@pytest.mark.parametrize(
    ("caller", "query"),
    [
        ("owner", "/groups?per_page=3"),
        ("owner", "/groups?per_page=3&all_available=true"),
        ("root", "/groups?per_page=3&statistics=true&with_custom_attributes=true"),
        (None, "/groups?per_page=3"),
    ],
)
def test_group_list_is_constant(api, make, runtime, caller, query):
    owner = make.user()
    add_groups(make, owner, 5)
    client = api(owner if caller == "owner" else caller)
    constant(runtime, lambda: client.get(query), lambda: add_groups(make, owner, 20))


@pytest.mark.parametrize("route", ["subgroups", "descendant_groups"])
def test_subgroup_lists_are_constant(api, make, runtime, route):
    owner = make.user()
    top = make.group(owners=[owner], visibility="public")
    add_groups(make, owner, 5, parent=top)
    caller = api(owner)
    constant(
        runtime,
        lambda: caller.get(f"/groups/{top.id}/{route}?per_page=3"),
        lambda: add_groups(make, owner, 20, parent=top),
    )


@pytest.mark.parametrize(
    "query", ["per_page=3", "per_page=3&include_subgroups=true&with_shared=true&simple=true"]
)
def test_group_projects_are_constant(api, make, runtime, query):
    owner = make.user()
    group = make.group(owners=[owner])
    add_projects(make, owner, group, 10)
    caller = api(owner)
    constant(
        runtime,
        lambda: caller.get(f"/groups/{group.id}/projects?{query}"),
        lambda: add_projects(make, owner, group, 30),
    )


@pytest.mark.parametrize("caller", ["owner", "root"])
def test_namespace_list_is_constant(api, make, runtime, caller):
    owner = make.user()
    add_groups(make, owner, 5)
    client = api(owner if caller == "owner" else "root")
    constant(runtime, lambda: client.get("/namespaces?per_page=3"), lambda: add_groups(make, owner, 20))


@pytest.mark.parametrize("route", ["members", "members/all", "access_requests"])
@pytest.mark.parametrize("kind", ["groups", "projects"])
def test_member_lists_are_constant(api, make, runtime, db, kind, route):
    owner = make.user()
    parent = make.group(owners=[owner])
    group = make.group(owners=[owner], parent=parent)
    project = make.project(namespace=group, owner=owner)
    source = {"namespace_id": group.id} if kind == "groups" else {"project_id": project.id}
    ident = group.id if kind == "groups" else project.id
    requested = route == "access_requests"

    def grow(n: int) -> None:
        add_members(db, n, creator=owner.id, requested=requested, **source)
        if not requested:
            add_members(db, n, creator=owner.id, namespace_id=parent.id)

    grow(5)
    caller = api(owner)
    constant(runtime, lambda: caller.get(f"/{kind}/{ident}/{route}?per_page=3"), lambda: grow(20))


@pytest.mark.parametrize("route", ["forks", "users"])
def test_forks_and_user_projects_are_constant(api, make, runtime, route):
    owner = make.user()
    parent = make.project(owner=owner, visibility="public")

    def grow(n: int) -> None:
        for _ in range(n):
            make.project(owner=owner, visibility="public", forked_from_id=parent.id)

    grow(5)
    path = f"/projects/{parent.id}/forks" if route == "forks" else f"/users/{owner.id}/projects"
    caller = api(owner)
    constant(runtime, lambda: caller.get(f"{path}?per_page=3"), lambda: grow(20))


# ---------------------------------------------------------------------------- repository lists

BOT = ("Budget Bot", "bot@example.com")
_names = itertools.count()


@pytest.mark.parametrize(
    "route",
    [
        "repository/branches?per_page=3",
        "repository/tags?per_page=3",
        "repository/commits?per_page=3",
        "repository/tree?per_page=3",
        "protected_branches?per_page=3",
    ],
)
def test_repository_lists_are_constant(api, make, runtime, db, route):
    owner = make.user()
    project = make.project_with_repository(owner=owner)

    def grow(n: int) -> None:
        """`n` commits on main, each adding a file, with a branch, a tag and a protected
        branch rule each (so per-ref or per-entry loads would show)."""
        for _ in range(n):
            name = f"f{next(_names)}"
            sha = make.commit(project, {f"{name}.txt": "x\n"}, message=f"add {name}", author=BOT)
            make.branch(project, name, sha)
            make.tag(project, name, sha)
        add_rules(db, project.id, n)

    grow(5)
    caller = api(owner)
    constant(runtime, lambda: caller.get(f"/projects/{project.id}/{route}"), lambda: grow(20))


# ---------------------------------------------------------------------------- hot single objects


def test_a_group_costs_the_token_and_its_view(api, make, runtime):
    """The view statement carries the caller's standing and the instance's settings."""
    owner = make.user()
    group = make.group(owners=[owner])
    assert count(runtime, lambda: api(owner).get(f"/groups/{group.id}?with_projects=false")) == 2


def test_a_group_with_its_projects_adds_both_project_lists(api, make, runtime):
    """The group's own projects and those shared with it: the ids and the versions of each
    (their records kept since the first request)."""
    owner = make.user()
    group = make.group(owners=[owner])
    make.project(namespace=group, owner=owner)
    shared = make.project(owner=owner)
    make.db.execute(
        insert(ProjectGroupLink), [{"project_id": shared.id, "group_id": group.id, "group_access": 30}]
    )
    make.db.commit()
    assert count(runtime, lambda: api(owner).get(f"/groups/{group.id}")) == 6


def test_a_namespace_costs_the_token_and_its_view(api, make, runtime):
    owner = make.user()
    assert count(runtime, lambda: api(owner).get(f"/namespaces/{owner.username}")) == 2


def test_a_group_namespace_adds_the_counts_its_owner_sees(api, make, runtime):
    owner = make.user()
    group = make.group(owners=[owner])
    assert count(runtime, lambda: api(owner).get(f"/namespaces/{group.id}")) == 3


def test_whether_a_path_exists_costs_one_statement_however_many_are_taken(api, make, runtime):
    owner = make.user()
    for path in ("taken", "taken1", "taken2"):
        make.group(owners=[owner], path=path)
    make.user(username="taken3")
    r = api(owner).get("/namespaces/taken/exists")
    assert r.json() == {"exists": True, "suggests": ["taken4"]}
    assert count(runtime, lambda: api(owner).get("/namespaces/taken/exists")) == 2


@pytest.mark.parametrize("route", ["members", "members/all"])
def test_a_member_costs_the_token_the_subject_and_the_member(api, make, runtime, route):
    """The member's row comes with their user and who added them."""
    owner = make.user()
    project = make.project(owner=owner)
    other = make.user()
    make.member(project, other, 30, created_by_id=owner.id)
    path = f"/projects/{project.id}/{route}/{other.id}"
    assert count(runtime, lambda: api(owner).get(path)) == 3


def test_a_file_costs_the_token_and_the_subject(api, make, runtime):
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    assert count(runtime, lambda: api(owner).get(path)) == 2


def warm_statements(runtime: Any, call: Callable[[], Any]) -> int:
    """Statements of a call made again while nothing was written since the one before (the
    first records the token's use: a write)."""
    return count(runtime, call, fresh=False, warm_up=2)


def test_while_nothing_is_written_a_file_costs_no_statement(api, make, runtime):
    """The token with its user and the project with the caller's level are reused while the
    database is unchanged (kiln.changes); the file's view is kept by its commit."""
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    assert warm_statements(runtime, lambda: api(owner).get(path)) == 0
    _answers.forget()  # the answer itself is kept too (tests/api/test_kept_answers.py)
    with recording(runtime.engine) as statements:
        assert api(owner).get(path).status_code == 200
    assert statements == []


def test_while_nothing_is_written_the_current_user_and_a_project_cost_their_views_alone(api, make, runtime):
    owner = make.user()
    project = make.project(owner=owner)
    assert warm_statements(runtime, lambda: api(owner).get("/user")) == 0
    # The project's view: its records are kept by row version, read by one narrow statement.
    assert warm_statements(runtime, lambda: api(owner).get(f"/projects/{project.id}")) == 1


def test_after_any_write_a_file_costs_the_token_and_the_subject_again(api, make, runtime):
    owner = make.user()
    project = new_project(api, make, owner)
    path = f"/projects/{project['id']}/repository/files/README.md?ref=main"
    api(owner).get(path)
    make.user()  # anyone, anything
    with recording(runtime.engine) as statements:
        assert api(owner).get(path).status_code == 200
    assert len(statements) == 2


# ---------------------------------------------------------------------------- tokens


def test_a_page_of_tokens_costs_a_fixed_number(api, make, runtime):
    """The token, the page's ids, the count, the page's rows: the same for 5 tokens and 25."""
    user = make.user()
    for _ in range(5):
        make.token(user)
    caller = api(user)

    def grow() -> None:
        for _ in range(20):
            make.token(user)

    assert constant(runtime, lambda: caller.get("/personal_access_tokens?per_page=3"), grow) == 4


@pytest.mark.parametrize(
    "query",
    [
        "/personal_access_tokens?per_page=3&user_id={user}&state=active&sort=name_asc",
        "/users/{user}/impersonation_tokens?per_page=3",
    ],
)
def test_admin_token_lists_are_constant(api, make, runtime, query):
    """The user is looked up once, however many tokens they hold."""
    user = make.user()

    def grow(n: int) -> None:
        for _ in range(n):
            make.token(user, impersonation=True)
            make.token(user)

    grow(5)
    root = api("root")
    assert constant(runtime, lambda: root.get(query.format(user=user.id)), lambda: grow(20)) == 5


@pytest.mark.parametrize("caller", ["owner", "root"])
def test_a_token_costs_the_token_and_the_token_with_its_owner(api, make, runtime, caller):
    user = make.user()
    make.token(user, name="other")
    client = api(user if caller == "owner" else "root")
    token_id = api(user).get("/personal_access_tokens?search=other").json()[0]["id"]
    assert count(runtime, lambda: client.get(f"/personal_access_tokens/{token_id}")) == 2


def test_the_current_token_costs_two_statements(api, make, runtime):
    user = make.user()
    assert count(runtime, lambda: api(user).get("/personal_access_tokens/self")) == 2


def test_an_impersonation_token_costs_the_token_and_the_token_with_its_owner(api, make, runtime):
    user = make.user()
    make.token(user, impersonation=True)
    root = api("root")
    token_id = root.get(f"/users/{user.id}/impersonation_tokens").json()[0]["id"]
    path = f"/users/{user.id}/impersonation_tokens/{token_id}"
    assert count(runtime, lambda: root.get(path)) == 2


# ---------------------------------------------------------------------------- starrers


def add_starrers(db: Any, project_id: int, n: int) -> None:
    db.execute(
        insert(ProjectStar), [{"project_id": project_id, "user_id": i} for i in add_plain_users(db, n)]
    )
    db.commit()


def test_a_page_of_starrers_costs_a_fixed_number(api, make, runtime, db):
    """The token, the subject, the page's stars, the count, their users: the same for 5
    starrers and 25."""
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    add_starrers(db, project.id, 5)
    path = f"/projects/{project.id}/starrers?per_page=3"
    assert constant(runtime, lambda: api(owner).get(path), lambda: add_starrers(db, project.id, 20)) == 5


def test_starrers_searched_anonymously_are_constant(api, make, runtime, db):
    project = make.project(visibility="public")
    add_starrers(db, project.id, 5)
    path = f"/projects/{project.id}/starrers?per_page=3&search=m"
    assert constant(runtime, lambda: api().get(path), lambda: add_starrers(db, project.id, 20)) == 4


# ---------------------------------------------------------------------------- protected branches


def add_rules(db: Any, project_id: int, n: int) -> None:
    start = db.scalar(select(func.count()).select_from(ProtectedBranch))
    db.execute(
        insert(ProtectedBranch), [{"project_id": project_id, "name": f"r{start + i}"} for i in range(n)]
    )
    db.commit()


def test_protected_branches_searched_are_constant(api, make, runtime, db):
    """The token, the subject, the page's rules, the count."""
    owner = make.user()
    project = make.project(owner=owner)
    add_rules(db, project.id, 5)
    path = f"/projects/{project.id}/protected_branches?per_page=3&search=r"
    assert constant(runtime, lambda: api(owner).get(path), lambda: add_rules(db, project.id, 20)) == 4


def test_a_protected_branch_costs_the_token_the_subject_and_the_rule(api, make, runtime, db):
    owner = make.user()
    project = make.project(owner=owner)
    add_rules(db, project.id, 1)
    name = db.scalar(select(ProtectedBranch.name).where(ProtectedBranch.project_id == project.id))
    path = f"/projects/{project.id}/protected_branches/{name}"
    assert count(runtime, lambda: api(owner).get(path)) == 3


# ---------------------------------------------------------------------------- custom attributes

from kiln.models import ProjectCustomAttribute  # noqa: E402 - kept beside the tests that use it

ATTRIBUTE_TABLES = {
    "users": (UserCustomAttribute, "user_id"),
    "groups": (GroupCustomAttribute, "namespace_id"),
    "projects": (ProjectCustomAttribute, "project_id"),
}


def add_attributes(db: Any, kind: str, owner_id: int, n: int) -> None:
    model, column = ATTRIBUTE_TABLES[kind]
    start = db.scalar(select(func.count()).select_from(model))
    db.execute(insert(model), [{column: owner_id, "key": f"k{start + i}", "value": "v"} for i in range(n)])
    db.commit()


def attribute_owner(make: Any, kind: str) -> int:
    if kind == "users":
        return make.user().id
    return make.group().id if kind == "groups" else make.project().id


@pytest.mark.parametrize("kind", ["users", "groups", "projects"])
def test_custom_attributes_cost_the_token_the_owner_and_the_attributes(api, make, runtime, db, kind):
    owner = attribute_owner(make, kind)
    add_attributes(db, kind, owner, 3)
    root = api("root")
    path = f"/{kind}/{owner}/custom_attributes"
    grow = lambda: add_attributes(db, kind, owner, 30)  # noqa: E731
    assert constant(runtime, lambda: root.get(path), grow) == 3
    key = db.scalar(select(ATTRIBUTE_TABLES[kind][0].key).limit(1))
    assert count(runtime, lambda: root.get(f"{path}/{key}")) == 3


# ---------------------------------------------------------------------------- user status


def test_the_current_status_costs_only_the_token(api, make, runtime):
    """The status is in the row authentication read; an expired one is cleared by a write."""
    user = make.user()
    api(user).put("/user/status", json={"message": "away", "clear_status_after": "1_day"})
    assert count(runtime, lambda: api(user).get("/user/status")) == 1


@pytest.mark.parametrize("caller", ["user", None])
def test_a_users_status_costs_the_token_and_the_user(api, make, runtime, caller):
    user = make.user()
    api(user).put("/user/status", json={"message": "away"})
    client = api(user if caller else None)
    expected = 2 if caller else 1
    assert count(runtime, lambda: client.get(f"/users/{user.username}/status")) == expected
    assert count(runtime, lambda: client.get(f"/users/{user.id}/status")) == expected


# ---------------------------------------------------------------------------- languages, comments


def test_languages_cost_the_token_and_the_subject_once_computed(api, make, runtime):
    owner = make.user()
    project = new_project(api, make, owner)
    assert count(runtime, lambda: api(owner).get(f"/projects/{project['id']}/languages")) == 2


def test_commit_comments_are_constant(api, make, runtime):
    """The token, the subject, the page's comments, the count, their authors."""
    owner = make.user()
    project = new_project(api, make, owner)
    base = f"/projects/{project['id']}/repository/commits"
    sha = api(owner).get(base).json()[0]["id"]

    def grow(n: int) -> None:
        for i in range(n):
            author = make.user()
            make.member(make.db.get(Project, project["id"]), author, 30)
            r = api(author).post(f"{base}/{sha}/comments", json={"note": f"n{i}"})
            assert r.status_code == 201, r.text

    grow(5)
    path = f"{base}/{sha}/comments?per_page=3"
    assert constant(runtime, lambda: api(owner).get(path), lambda: grow(10)) == 5


def test_an_upload_costs_the_subject_and_the_file(api, make, runtime):
    """Anonymously: the subject and the upload's row; signed in, the token too."""
    owner = make.user()
    project = make.project(owner=owner, visibility="public")
    body = api(owner).post(f"/projects/{project.id}/uploads", files={"file": ("a.png", b"x")}).json()
    assert count(runtime, lambda: api().get(body["full_path"])) == 2
    assert count(runtime, lambda: api(owner).get(body["full_path"])) == 3


@pytest.mark.parametrize("signed_in", [False, True])
def test_git_info_refs_costs_the_credential_and_the_subject(api, make, runtime, signed_in):
    """A clone's first request: the project's subject row and the instance settings (which
    protocols and credentials git may use; reused while nothing changes, read here because
    nothing is reused), and signed in the token's two lookups (a password over Basic is tried
    as an OAuth token, then as a personal one)."""
    import base64

    owner = make.user()
    project = new_project(api, make, owner)
    if not signed_in:
        api(owner).put(f"/projects/{project['id']}", json={"visibility": "public"})
    secret = base64.b64encode(f"x:{owner.token}".encode()).decode()
    headers = {"Authorization": f"Basic {secret}"} if signed_in else {}
    path = f"/{project['path_with_namespace']}.git/info/refs?service=git-upload-pack"
    client = api().client
    assert count(runtime, lambda: client.get(path, headers=headers)) == (4 if signed_in else 2)


def test_a_compare_with_a_fork_adds_its_subject_and_its_parent(api, make, runtime):
    """The token, both subjects, the fork's parent on the way to the network's root."""
    owner = make.user()
    upstream = new_project(api, make, owner)
    fork = api(owner).post(f"/projects/{upstream['id']}/fork", json={"path": "f", "name": "f"}).json()
    path = f"/projects/{upstream['id']}/repository/compare?from=main&to=main&from_project_id={fork['id']}"
    assert count(runtime, lambda: api(owner).get(path)) == 4


def test_oauth_token_info_costs_one_statement(api, runtime):
    from tests.conftest import ROOT_PASSWORD

    client = api().client
    grant = {"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    token = client.post("/oauth/token", data=grant).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    assert count(runtime, lambda: client.get("/oauth/token/info", headers=headers)) == 1
