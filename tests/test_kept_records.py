"""Records kept across requests (services.projects and services.users, models.base.RowVersion):
a list reads its rows' versions and reuses the records kept under them, so whatever changes a
project's or a user's view, through the API or by any other statement, the next list shows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import delete, insert, select, update

from kiln import policy
from kiln.auth.actor import Actor
from kiln.entities import projects as project_views
from kiln.entities import users as user_views
from kiln.entities._rendered import RenderedViews
from kiln.kept import Kept
from kiln.models import Identity, Member, Namespace, Project, ProjectGroupLink, ProjectTopic, User
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from kiln.models.projects import DISABLED, ENABLED, FEATURE_PRIVATE
from kiln.policy import Action, ProjectSubject
from kiln.queries.users import row_by_id
from kiln.services import projects as project_service
from kiln.services import users as user_service
from tests.statements import count


def version(db: Any, model: Any, row_id: int) -> int:
    db.expire_all()
    return int(db.scalar(select(model.row_version).where(model.id == row_id)))


def written(db: Any, statement: Any) -> None:
    """A write past every service: only the database's triggers know of it."""
    db.execute(statement)
    db.commit()


def each_change_read_as_if_nothing_were_kept(
    changes: list[Callable[[], Any]], pages: Callable[[], Any], *kept: Kept[Any] | RenderedViews
) -> None:
    """After each change (its pages read and kept before it), the pages equal the pages read
    with `kept` emptied."""
    for change in changes:
        pages()
        r = change()
        assert r is None or r.status_code < 300, r.text
        seen = pages()
        for memo in kept:
            memo.clear()
        assert seen == pages()


def listed(client: Any, project_id: int, query: str = "") -> dict[str, Any]:
    r = client.get(f"/projects?per_page=100{query}")
    assert r.status_code == 200, r.text
    found = [p for p in r.json() if p["id"] == project_id]
    assert len(found) == 1, [p["id"] for p in r.json()]
    return found[0]


# ---------------------------------------------------------------------------- versions


def test_a_new_row_has_a_version_of_its_own(db, make):
    first, second = make.project(), make.project()
    assert 0 != version(db, Project, first.id) != version(db, Project, second.id)


@pytest.mark.parametrize(
    ("model", "values"),
    [(Project, {"description": "changed"}), (Namespace, {"name": "changed"}), (User, {"name": "changed"})],
)
def test_every_update_gives_the_row_a_new_version(db, make, model, values):
    owner = make.user()
    project = make.project(owner=owner)
    row_id = {Project: project.id, Namespace: project.namespace_id, User: owner.id}[model]
    before = version(db, model, row_id)
    written(db, update(model).where(model.id == row_id).values(**values))
    after = version(db, model, row_id)
    written(db, update(model).where(model.id == row_id).values(**values))  # the same values again
    assert len({before, after, version(db, model, row_id)}) == 3


@pytest.mark.parametrize(
    ("child", "parent"),
    [(ProjectTopic, Project), (ProjectGroupLink, Project), (Identity, User)],
)
def test_a_change_to_a_child_row_gives_its_parent_a_new_version(db, make, child, parent):
    """Rows a parent's view shows: their insert, update and delete each renew the parent's."""
    owner = make.user()
    project = make.project(owner=owner)
    row, changed = {
        ProjectTopic: ({"project_id": project.id, "name": "a", "position": 0}, {"name": "b"}),
        ProjectGroupLink: (
            {"project_id": project.id, "group_id": make.group(owners=[owner]).id, "group_access": 30},
            {"group_access": 20},
        ),
        Identity: ({"user_id": owner.id, "provider": "ldapmain", "extern_uid": "uid=a"}, {"extern_uid": "b"}),
    }[child]
    parent_id = owner.id if parent is User else project.id
    own = (child.user_id if parent is User else child.project_id) == parent_id
    versions = [version(db, parent, parent_id)]
    for statement in (
        insert(child).values(**row),
        update(child).where(own).values(**changed),
        delete(child).where(own),
    ):
        written(db, statement)
        versions.append(version(db, parent, parent_id))
    assert len(set(versions)) == 4


def test_a_write_that_sets_the_version_itself_still_renews_it(db, make):
    """Contents written with an old version (a copied row) must not pass for the old row."""
    project = make.project(description="before")
    old = version(db, Project, project.id)
    written(db, update(Project).where(Project.id == project.id).values(description="between"))
    written(db, update(Project).where(Project.id == project.id).values(description="after", row_version=old))
    assert version(db, Project, project.id) != old


# ---------------------------------------------------------------------------- viewers


def test_viewers_of_one_kind_are_given_the_same_decisions(db, make):
    """What a kept record holds is decided for the viewer's kind (policy.viewer_kind): any
    other difference between two viewers of one kind changes no decision a record carries."""
    projects = [
        make.project(visibility=visibility, archived=archived, repository_access_level=access)
        for visibility in ("public", "internal", "private")
        for archived in (False, True)
        for access in (ENABLED, FEATURE_PRIVATE, DISABLED)
    ]
    base = row_by_id(db, make.user().id)
    variants = [
        {},
        {"id": base.id + 1000, "username": "other", "can_create_group": not base.can_create_group},
        {"projects_limit": 0, "private_profile": True, "state": "blocked", "note": "x"},
    ]
    kinds: dict[Any, list[Actor]] = {}
    for admin in (False, True):
        for external in (False, True):
            for changes in variants:
                user = base._replace(admin=admin, external=external, **changes)
                for via, scopes in (("personal_access_token", frozenset({"api"})), ("session", None)):
                    actor = Actor(user=user, via=via, scopes=scopes, token_id=7 if scopes else None)
                    kinds.setdefault(policy.viewer_kind(actor), []).append(actor)
    kinds[policy.viewer_kind(None)] = [None]
    assert len(kinds) == 5
    for project in projects:
        namespace = db.get(Namespace, project.namespace_id)
        for level in (None, GUEST, REPORTER, DEVELOPER, MAINTAINER, OWNER):
            subject = ProjectSubject(project=project, namespace=namespace, level=level)
            for actors in kinds.values():
                decisions = {_decisions(actor, subject) for actor in actors}
                assert len(decisions) == 1, (project.visibility, level, decisions)


def _decisions(actor: Actor | None, subject: ProjectSubject) -> tuple[Any, ...]:
    """Every decision a project record carries (services.projects._build)."""
    actions = (
        Action.READ_PROJECT,
        Action.READ_CODE,
        Action.READ_PROJECT_SETTINGS,
        Action.CREATE_MERGE_REQUEST_IN,
    )
    return (
        *(policy.may(actor, action, subject) for action in actions),
        tuple(policy.open_features(actor, subject).items()),
    )


# ---------------------------------------------------------------------------- lists


@pytest.fixture
def seen(api, make) -> tuple[Any, Any, Project]:
    """A public project of `owner`'s, already listed once by `viewer` (its record kept)."""
    owner, viewer = make.user(), make.user()
    project = make.project(owner=owner, visibility="public", description="before")
    client = api(viewer)
    listed(client, project.id)
    return owner, client, project


def test_the_second_list_reuses_the_kept_records(api, make, runtime):
    """The token, the page's ids, its count and its versions: no view statement."""
    owner = make.user()
    for _ in range(25):
        make.project(owner=owner)
    project_service.KEPT.clear()
    assert count(runtime, lambda: api(owner).get("/projects?per_page=20")) == 4


def test_a_list_shows_a_change_written_by_any_statement(db, seen):
    _, client, project = seen
    written(db, update(Project).where(Project.id == project.id).values(description="after"))
    assert listed(client, project.id)["description"] == "after"


def test_a_list_shows_new_topics(db, seen):
    _, client, project = seen
    written(db, insert(ProjectTopic).values(project_id=project.id, name="kiln", position=0))
    assert listed(client, project.id)["topics"] == ["kiln"]


def test_a_list_shows_the_owner_s_new_name(db, seen):
    owner, client, project = seen
    written(db, update(User).where(User.id == owner.id).values(name="Renamed"))
    assert listed(client, project.id)["owner"]["name"] == "Renamed"


def test_a_list_shows_a_renamed_group(api, make, db):
    owner, viewer = make.user(), make.user()
    group = make.group(owners=[owner], visibility="public")
    project = make.project(namespace=group, owner=owner, visibility="public")
    client = api(viewer)
    assert listed(client, project.id)["namespace"]["name"] == group.name
    r = api(owner).put(f"/groups/{group.id}", json={"name": "Renamed"})
    assert r.status_code == 200, r.text
    assert listed(client, project.id)["namespace"]["name"] == "Renamed"


def test_a_list_shows_the_caller_s_new_level(api, make, db):
    owner, member = make.user(), make.user()
    project = make.project(owner=owner, visibility="public", members={member: DEVELOPER})
    client = api(member)
    assert listed(client, project.id)["permissions"]["project_access"]["access_level"] == DEVELOPER
    assert "import_url" not in listed(client, project.id)
    written(db, update(Member).where(Member.user_id == member.id).values(access_level=MAINTAINER))
    seen = listed(client, project.id)
    assert seen["permissions"]["project_access"]["access_level"] == MAINTAINER
    assert "import_url" in seen  # a Maintainer sees the settings


def test_what_an_administrator_is_shown_is_not_shown_to_others(api, make):
    project = make.project(owner=make.user(), visibility="public")
    assert "import_url" in listed(api("root"), project.id)
    assert "import_url" not in listed(api(make.user()), project.id)


def test_an_anonymous_caller_is_not_shown_a_signed_in_caller_s_view(api, make):
    """End to end, whoever lists first: a signed-in caller's view (with permissions) never
    answers an anonymous one (tests/test_rendered_views.py checks the view's key)."""
    project = make.project(visibility="public")
    assert "permissions" in listed(api(make.user()), project.id)
    assert "permissions" not in listed(api(), project.id)


def shared_project(make: Any, db: Any) -> tuple[Any, Any]:
    """A public project shared with a public group (Developer access): the group, the project."""
    owner = make.user()
    group = make.group(owners=[owner], visibility="public")
    project = make.project(owner=owner, visibility="public")
    written(db, insert(ProjectGroupLink).values(project_id=project.id, group_id=group.id, group_access=30))
    return group, project


def test_a_shared_project_shows_its_group_s_new_name(api, make, db):
    group, project = shared_project(make, db)
    client = api(make.user())
    assert listed(client, project.id)["shared_with_groups"][0]["group_name"] == group.name
    written(db, update(Namespace).where(Namespace.id == group.id).values(name="Renamed"))
    assert listed(client, project.id)["shared_with_groups"][0]["group_name"] == "Renamed"


def test_a_shared_project_shows_its_share_s_new_access(api, make, db):
    _group, project = shared_project(make, db)
    client = api(make.user())
    assert listed(client, project.id)["shared_with_groups"][0]["group_access_level"] == 30
    written(
        db, update(ProjectGroupLink).where(ProjectGroupLink.project_id == project.id).values(group_access=20)
    )
    assert listed(client, project.id)["shared_with_groups"][0]["group_access_level"] == 20
    written(db, delete(ProjectGroupLink).where(ProjectGroupLink.project_id == project.id))
    assert listed(client, project.id)["shared_with_groups"] == []


def test_a_shared_project_is_kept_too(api, make, runtime, db):
    """The token, the page's ids, the versions (with its groups'): no view, no shares."""
    owner = make.user()
    group = make.group(owners=[owner])
    project = make.project(owner=owner)
    written(db, insert(ProjectGroupLink).values(project_id=project.id, group_id=group.id, group_access=30))
    assert count(runtime, lambda: api(owner).get("/projects?per_page=20")) == 3  # one page: no count


@pytest.fixture
def fork(api, make) -> tuple[Any, Project, int]:
    """(owner, parent, fork id): a public project and its public fork."""
    owner = make.user()
    parent = make.project(owner=owner, visibility="public", name="parent")
    r = api(owner).post(f"/projects/{parent.id}/fork", json={"path": "fork", "name": "fork"})
    assert r.status_code == 201, r.text
    return owner, parent, r.json()["id"]


def test_a_fork_is_kept_with_its_parent(api, runtime, fork):
    """The token, the page's ids, its versions and its parents' versions: no views."""
    owner, _, _ = fork
    project_service.KEPT.clear()
    assert count(runtime, lambda: api(owner).get("/projects?per_page=20")) == 4  # one page: no count


def test_a_fork_stops_showing_a_parent_made_private(api, make, db, fork):
    _, parent, fork_id = fork
    client = api(make.user())
    assert listed(client, fork_id)["forked_from_project"]["id"] == parent.id
    written(db, update(Project).where(Project.id == parent.id).values(visibility="private"))
    assert listed(client, fork_id).get("forked_from_project") is None


def test_a_fork_shows_a_private_parent_once_the_caller_may_see_it(api, make, db, fork):
    _, parent, fork_id = fork
    written(db, update(Project).where(Project.id == parent.id).values(visibility="private"))
    viewer = make.user()
    client = api(viewer)
    assert listed(client, fork_id).get("forked_from_project") is None
    make.member(parent, viewer, DEVELOPER)
    assert listed(client, fork_id)["forked_from_project"]["id"] == parent.id


def test_a_parent_on_the_same_page_is_shown_only_to_who_may_see_it(db, make):
    """A page's ids are read before its views: a parent that closed in between is on the
    page, and must not be shown (nor kept) inside its fork for a caller who cannot see it."""
    owner = make.user()
    parent = make.project(owner=owner, visibility="private")
    fork = make.project(owner=owner, visibility="public", forked_from_id=parent.id)
    viewer = Actor(user=row_by_id(db, make.user().id), via="personal_access_token", scopes=None)
    (record,) = [
        r
        for r in project_service.records(db, viewer, [parent, fork], settings=None)
        if r.project.id == fork.id
    ]
    assert record.forked_from is None


def test_a_fork_shows_its_parent_s_new_name(api, make, db):
    owner = make.user()
    parent = make.project(owner=owner, visibility="public", name="parent")
    r = api(owner).post(f"/projects/{parent.id}/fork", json={"path": "fork", "name": "fork"})
    assert r.status_code == 201, r.text
    client = api(make.user())
    assert listed(client, r.json()["id"])["forked_from_project"]["name"] == "parent"
    written(db, update(Project).where(Project.id == parent.id).values(name="renamed"))
    assert listed(client, r.json()["id"])["forked_from_project"]["name"] == "renamed"


def test_a_kept_page_is_always_the_page_read_afresh(api, make, db):
    """After each of a run of changes, through the API and past it, every viewer's page is
    the page a process that kept nothing would send."""
    owner, member, other = make.user(), make.user(), make.user()
    group = make.group(owners=[owner], visibility="public", members={member: DEVELOPER})
    mine = make.project(owner=owner, visibility="public", name="mine")
    theirs = make.project(namespace=group, owner=owner, visibility="internal", name="theirs")
    hidden = make.project(namespace=group, owner=owner, visibility="private", name="hidden")
    by_owner = api(owner)
    changes = [
        lambda: by_owner.put(f"/projects/{mine.id}", json={"description": "x", "topics": ["a"]}),
        lambda: by_owner.put(f"/projects/{theirs.id}", json={"name": "renamed", "visibility": "public"}),
        lambda: by_owner.post(f"/projects/{hidden.id}/archive"),
        lambda: by_owner.put(f"/groups/{group.id}", json={"name": "Group renamed"}),
        lambda: written(
            db, update(Member).where(Member.user_id == member.id).values(access_level=MAINTAINER)
        ),
        lambda: by_owner.post(f"/projects/{mine.id}/fork", json={"path": "fork", "name": "fork"}),
        lambda: written(db, update(User).where(User.id == owner.id).values(name="Owner renamed")),
        lambda: by_owner.post(f"/projects/{mine.id}/share", json={"group_id": group.id, "group_access": 30}),
        lambda: api(member).post(f"/projects/{mine.id}/star"),
        lambda: written(db, update(Project).where(Project.id == mine.id).values(visibility="private")),
        lambda: written(db, delete(Member).where(Member.user_id == member.id)),
        lambda: by_owner.delete(f"/projects/{theirs.id}"),
    ]
    viewers = [api(owner), api(member), api(other), api("root"), api()]

    def pages() -> list[Any]:
        return [viewer.get("/projects?per_page=100&order_by=id").json() for viewer in viewers]

    each_change_read_as_if_nothing_were_kept(changes, pages, project_service.KEPT, project_views.RENDERED)


# ---------------------------------------------------------------------------- users


def user_listed(client: Any, user_id: int) -> dict[str, Any]:
    r = client.get("/users?per_page=100")
    assert r.status_code == 200, r.text
    found = [u for u in r.json() if u["id"] == user_id]
    assert len(found) == 1, [u["id"] for u in r.json()]
    return found[0]


def test_the_second_user_list_reuses_the_kept_rows(api, runtime):
    """The token, the page's ids with their versions, the count: no rows statement."""
    user_service.KEPT.clear()
    assert count(runtime, lambda: api("root").get("/users?per_page=20")) == 2  # one page: no count


def test_a_user_list_shows_a_change_written_by_any_statement(api, make, db):
    user = make.user(name="Before")
    root = api("root")
    assert user_listed(root, user.id)["name"] == "Before"
    written(db, update(User).where(User.id == user.id).values(name="After"))
    assert user_listed(root, user.id)["name"] == "After"
    assert user_listed(api(make.user()), user.id)["name"] == "After"


def test_a_user_list_shows_a_new_identity(api, make, db):
    user = make.user()
    root = api("root")
    assert user_listed(root, user.id)["identities"] == []
    written(db, insert(Identity).values(user_id=user.id, provider="ldapmain", extern_uid="uid=a"))
    assert user_listed(root, user.id)["identities"] == [
        {"provider": "ldapmain", "extern_uid": "uid=a", "saml_provider_id": None}
    ]


def test_an_administrator_s_user_view_is_not_shown_to_others(api, make):
    user = make.user()
    assert "email" in user_listed(api("root"), user.id)
    assert "email" not in user_listed(api(make.user()), user.id)


def test_a_kept_user_page_is_always_the_page_read_afresh(api, make, db):
    user, viewer = make.user(name="Before"), make.user()
    root = api("root")
    changes = [
        lambda: root.put(f"/users/{user.id}", json={"name": "After", "bio": "b"}),
        lambda: root.post(f"/users/{user.id}/block"),
        lambda: written(db, insert(Identity).values(user_id=user.id, provider="ldapmain", extern_uid="u")),
        lambda: written(db, update(User).where(User.id == user.id).values(projects_limit=0, external=True)),
        lambda: root.post(f"/users/{user.id}/unblock"),
        lambda: written(db, update(User).where(User.id == viewer.id).values(admin=True)),
    ]
    viewers = [root, api(viewer), api(user)]

    def pages() -> list[Any]:
        return [v.get("/users?per_page=100").json() for v in viewers]

    each_change_read_as_if_nothing_were_kept(changes, pages, user_service.KEPT, user_views.RENDERED)
