"""Group CI/CD variables: GitLab's Group-level variables API. The rules a variable's fields
follow are the project's (test_ci_variables.py); what differs is who may manage them (the
group's Owners), the 404's name, and a change naming no scope."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.auth.sealing import unseal
from kiln.models import Event, GroupVariable
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from tests.api.test_ci_variables import MASKABLE, MULTIPLE, add, stored, view
from tests.statements import count


def group_url(group, key: str | None = None) -> str:
    base = f"/groups/{group.id}/variables"
    return base if key is None else f"{base}/{key}"


@pytest.fixture
def owned(make):
    """An Owner and their group."""
    u = make.user()
    return u, make.group(owners=[u])


def test_owner_creates_a_variable(api, owned):
    u, g = owned
    r = api(u).post(
        group_url(g),
        json={
            "key": "G",
            "value": MASKABLE,
            "masked": True,
            "environment_scope": "review/*",
            "description": "d",
        },
    )
    assert r.status_code == 201
    assert r.json() == view("G", MASKABLE, masked=True, environment_scope="review/*", description="d")


def test_list_get_update_delete(api, owned):
    u, g = owned
    add(api, u, group_url(g), key="A", value="1")
    add(api, u, group_url(g), key="B", value="2")
    assert [v["key"] for v in api(u).get(group_url(g)).json()] == ["A", "B"]
    assert api(u).get(group_url(g, "B")).json()["value"] == "2"
    assert api(u).put(group_url(g, "B"), json={"value": "3", "protected": True}).json() == view(
        "B", "3", protected=True
    )
    assert api(u).delete(group_url(g, "A")).status_code == 204
    assert [v["key"] for v in api(u).get(group_url(g)).json()] == ["B"]


def test_a_missing_key_is_404(api, owned):
    u, g = owned
    for r in (
        api(u).get(group_url(g, "NOPE")),
        api(u).put(group_url(g, "NOPE"), json={"value": "x"}),
        api(u).delete(group_url(g, "NOPE")),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 GroupVariable Not Found"})


def test_a_key_in_several_scopes_needs_a_filter_to_read_or_remove(api, owned):
    u, g = owned
    add(api, u, group_url(g), key="K", value="all")
    add(api, u, group_url(g), key="K", value="prod", environment_scope="production")
    for r in (api(u).get(group_url(g, "K")), api(u).delete(group_url(g, "K"))):
        assert (r.status_code, r.json()) == (409, {"message": MULTIPLE})
    prod = {"filter[environment_scope]": "production"}
    assert api(u).get(group_url(g, "K"), params=prod).json()["value"] == "prod"
    assert api(u).delete(group_url(g, "K"), params=prod).status_code == 204


def test_a_change_naming_no_scope_takes_the_oldest(api, owned):
    u, g = owned
    add(api, u, group_url(g), key="K", value="all")
    add(api, u, group_url(g), key="K", value="prod", environment_scope="production")
    r = api(u).put(group_url(g, "K"), json={"value": "changed"})
    assert (r.status_code, r.json()["environment_scope"]) == (200, "*")
    r = api(u).put(
        group_url(g, "K"), params={"filter[environment_scope]": "production"}, json={"value": "p2"}
    )
    assert r.json()["value"] == "p2"
    assert [v["value"] for v in api(u).get(group_url(g)).json()] == ["changed", "p2"]


def test_duplicate_key_and_scope_is_refused(api, db, owned):
    u, g = owned
    add(api, u, group_url(g), key="K")
    before = stored(db, GroupVariable)
    r = api(u).post(group_url(g), json={"key": "K", "value": "again"})
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["(K) has already been taken"]}})
    assert stored(db, GroupVariable) == before


def test_the_same_key_in_another_group_is_free(api, make, owned):
    u, g = owned
    other = make.group(owners=[u])
    add(api, u, group_url(g), key="K")
    assert add(api, u, group_url(other), key="K")["key"] == "K"


def test_a_masked_value_must_be_maskable(api, db, owned):
    u, g = owned
    before = stored(db, GroupVariable)
    r = api(u).post(group_url(g), json={"key": "M", "value": "not maskable", "masked": True})
    assert (r.status_code, r.json()) == (400, {"message": {"value": ["is invalid"]}})
    assert stored(db, GroupVariable) == before


def test_a_hidden_variable_never_shows_its_value(api, owned):
    u, g = owned
    created = add(api, u, group_url(g), key="H", value=MASKABLE, masked_and_hidden=True)
    assert created == view("H", None, hidden=True, masked=True)
    assert api(u).get(group_url(g, "H")).json()["value"] is None


def test_values_are_kept_sealed(api, db, owned, settings):
    u, g = owned
    add(api, u, group_url(g), key="K", value="group-secret")
    kept = db.scalar(select(GroupVariable.value).where(GroupVariable.namespace_id == g.id))
    assert "group-secret" not in kept
    assert unseal(settings, kept) == "group-secret"


def test_each_change_records_an_event(api, db, owned):
    u, g = owned
    add(api, u, group_url(g), key="K")
    api(u).put(group_url(g, "K"), json={"value": "x"})
    api(u).delete(group_url(g, "K"))
    rows = db.execute(
        select(Event.action, Event.project_id, Event.data)
        .where(Event.target_type == "CiVariable")
        .order_by(Event.id)
    ).all()
    data = {"level": "group", "key": "K", "environment_scope": "*", "group_id": g.id}
    assert [tuple(r) for r in rows] == [
        ("created", None, data),
        ("updated", None, data),
        ("destroyed", None, data),
    ]


@pytest.mark.parametrize(
    ("level", "allowed"),
    [(GUEST, False), (REPORTER, False), (DEVELOPER, False), (MAINTAINER, False), (OWNER, True)],
)
def test_group_variables_are_for_owners(api, db, make, level, allowed):
    owner = make.user()
    g = make.group(owners=[owner])
    add(api, owner, group_url(g), key="K")
    member = make.user()
    make.member(g, member, level)
    before = stored(db, GroupVariable)
    for r in (
        api(member).get(group_url(g)),
        api(member).get(group_url(g, "K")),
        api(member).put(group_url(g, "K"), json={"value": "x"}),
        api(member).post(group_url(g), json={"key": "NEW", "value": "v"}),
        api(member).delete(group_url(g, "K")),
    ):
        if allowed:
            assert r.status_code in (200, 201, 204), r.text
        else:
            assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    if not allowed:
        assert stored(db, GroupVariable) == before


def test_an_owner_of_a_parent_group_manages_a_subgroups(api, make, owned):
    u, g = owned
    sub = make.group(parent=g)
    assert add(api, u, group_url(sub), key="K")["key"] == "K"


def test_a_hidden_group_is_404(api, db, make, owned):
    u, g = owned
    add(api, u, group_url(g), key="K")
    stranger = make.user()
    before = stored(db, GroupVariable)
    for r in (
        api(stranger).get(group_url(g)),
        api(stranger).get(group_url(g, "K")),
        api(stranger).post(group_url(g), json={"key": "N", "value": "v"}),
        api(stranger).put(group_url(g, "K"), json={"value": "x"}),
        api(stranger).delete(group_url(g, "K")),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Group Not Found"})
    assert stored(db, GroupVariable) == before


def test_a_public_group_refuses_non_members(api, make):
    g = make.group(owners=[make.user()], visibility="public")
    r = api(make.user()).get(group_url(g))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api().get(group_url(g)).status_code == 401


def test_a_group_by_path(api, make):
    u = make.user()
    top = make.group(owners=[u], path="top")
    sub = make.group(parent=top, path="sub")
    add(api, u, group_url(sub), key="K")
    assert [v["key"] for v in api(u).get("/groups/top%2Fsub/variables").json()] == ["K"]


def test_list_is_constant_in_variables(api, owned, runtime):
    u, g = owned
    listed = {"per_page": 100}
    add(api, u, group_url(g), key="K0")
    few = count(runtime, lambda: api(u).get(group_url(g), params=listed))
    for i in range(1, 25):
        add(api, u, group_url(g), key=f"K{i}", value=MASKABLE, masked=True)
    many = count(runtime, lambda: api(u).get(group_url(g), params=listed))
    assert few == many
