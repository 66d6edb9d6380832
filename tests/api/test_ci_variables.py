"""Project CI/CD variables: GitLab's Project-level CI/CD variables API, one rule per test.
Group and instance variables are in test_ci_variables_groups.py and
test_ci_variables_instance.py, what a pipeline is given in test_ci_variables_pipeline.py."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kiln.auth.sealing import unseal
from kiln.models import Event, ProjectVariable
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, OWNER, REPORTER
from tests.statements import count

MULTIPLE = "There are multiple variables with provided parameters. Please use 'filter[environment_scope]'"
MASKABLE = "abc@:.~+/=_-1234"


def variables_url(project, key: str | None = None) -> str:
    base = f"/projects/{project.id}/variables"
    return base if key is None else f"{base}/{key}"


def add(api, caller, url: str, **body):
    r = api(caller).post(url, json={"key": "KEY", "value": "v", **body})
    assert r.status_code == 201, r.text
    return r.json()


def stored(db, model=ProjectVariable) -> int:
    """Variables and CiVariable events kept: what a refused request must leave as it was."""
    events = db.scalar(select(func.count()).select_from(Event).where(Event.target_type == "CiVariable"))
    return db.scalar(select(func.count()).select_from(model)) * 1000 + events


def view(key: str, value: str | None, **fields):
    return {
        "variable_type": "env_var",
        "key": key,
        "value": value,
        "hidden": False,
        "protected": False,
        "masked": False,
        "raw": False,
        "environment_scope": "*",
        "description": None,
        **fields,
    }


@pytest.fixture
def owned(make):
    """A Maintainer and their project."""
    u = make.user()
    return u, make.project(owner=u, members={u: MAINTAINER})


# ----------------------------------------------------------------------------- reading and writing


def test_maintainer_creates_a_variable(api, owned):
    u, p = owned
    body = {
        "key": "DEPLOY_TOKEN",
        "value": "s3cret-value",
        "variable_type": "file",
        "protected": True,
        "masked": True,
        "raw": True,
        "environment_scope": "production",
        "description": "for deploys",
    }
    r = api(u).post(variables_url(p), json=body)
    assert r.status_code == 201
    assert r.json() == view(
        "DEPLOY_TOKEN",
        "s3cret-value",
        variable_type="file",
        protected=True,
        masked=True,
        raw=True,
        environment_scope="production",
        description="for deploys",
    )


def test_a_variable_takes_gitlabs_defaults(api, owned):
    u, p = owned
    assert add(api, u, variables_url(p), key="PLAIN", value="") == view("PLAIN", "")


def test_form_fields_are_taken_as_json_ones(api, owned):
    u, p = owned
    r = api(u).post(variables_url(p), data={"key": "F", "value": "x", "protected": "true"})
    assert r.status_code == 201
    assert r.json()["protected"] is True


def test_list_is_paged_oldest_first(api, owned):
    u, p = owned
    for key in ("B", "A", "C"):
        add(api, u, variables_url(p), key=key)
    r = api(u).get(variables_url(p), params={"per_page": 2})
    assert [v["key"] for v in r.json()] == ["B", "A"]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    assert [v["key"] for v in api(u).get(variables_url(p), params={"page": 2, "per_page": 2}).json()] == ["C"]


def test_get_by_key(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="one")
    assert api(u).get(variables_url(p, "K")).json() == view("K", "one")


def test_a_missing_key_is_404(api, owned):
    u, p = owned
    for r in (
        api(u).get(variables_url(p, "NOPE")),
        api(u).put(variables_url(p, "NOPE"), json={"value": "x"}),
        api(u).delete(variables_url(p, "NOPE")),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Variable Not Found"})


def test_update_changes_only_what_is_given(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="old", description="kept", protected=True)
    r = api(u).put(variables_url(p, "K"), json={"value": "new", "variable_type": "file"})
    assert r.status_code == 200
    assert r.json() == view("K", "new", variable_type="file", protected=True, description="kept")
    assert api(u).get(variables_url(p, "K")).json()["value"] == "new"


def test_update_never_renames_the_key(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    assert api(u).put(variables_url(p, "K"), json={"key": "OTHER", "value": "x"}).json()["key"] == "K"


def test_a_null_description_clears_it(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", description="d")
    assert api(u).put(variables_url(p, "K"), json={"description": None}).json()["description"] is None


def test_update_moves_a_variable_to_another_scope(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    assert api(u).put(variables_url(p, "K"), json={"environment_scope": "review/*"}).status_code == 200
    assert [v["environment_scope"] for v in api(u).get(variables_url(p)).json()] == ["review/*"]


def test_delete_removes_it(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    r = api(u).delete(variables_url(p, "K"))
    assert (r.status_code, r.content) == (204, b"")
    assert api(u).get(variables_url(p)).json() == []


# ----------------------------------------------------------------------------- environment scopes


def test_one_key_may_have_a_variable_per_scope(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="all")
    add(api, u, variables_url(p), key="K", value="prod", environment_scope="production")
    assert [(v["environment_scope"], v["value"]) for v in api(u).get(variables_url(p)).json()] == [
        ("*", "all"),
        ("production", "prod"),
    ]


def test_a_key_in_several_scopes_needs_a_filter(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="all")
    add(api, u, variables_url(p), key="K", value="prod", environment_scope="production")
    for r in (
        api(u).get(variables_url(p, "K")),
        api(u).put(variables_url(p, "K"), json={"value": "x"}),
        api(u).delete(variables_url(p, "K")),
    ):
        assert (r.status_code, r.json()) == (409, {"message": MULTIPLE})
    assert len(api(u).get(variables_url(p)).json()) == 2


def test_the_filter_names_the_scope(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="all")
    add(api, u, variables_url(p), key="K", value="prod", environment_scope="production")
    prod = {"filter[environment_scope]": "production"}
    assert api(u).get(variables_url(p, "K"), params=prod).json()["value"] == "prod"
    r = api(u).put(variables_url(p, "K"), params=prod, json={"value": "changed"})
    assert r.json()["value"] == "changed"
    assert api(u).delete(variables_url(p, "K"), params=prod).status_code == 204
    assert [v["value"] for v in api(u).get(variables_url(p)).json()] == ["all"]


def test_the_filter_in_a_json_body(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    add(api, u, variables_url(p), key="K", environment_scope="staging")
    r = api(u).put(variables_url(p, "K"), json={"value": "s", "filter": {"environment_scope": "staging"}})
    assert (r.json()["environment_scope"], r.json()["value"]) == ("staging", "s")


def test_a_filter_naming_no_variable_is_404(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    r = api(u).get(variables_url(p, "K"), params={"filter[environment_scope]": "nowhere"})
    assert r.status_code == 404


def test_duplicate_key_and_scope_is_refused(api, db, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "K", "value": "again"})
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["(K) has already been taken"]}})
    assert stored(db) == before


def test_moving_onto_a_taken_scope_is_refused(api, db, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K")
    add(api, u, variables_url(p), key="K", environment_scope="production")
    before = stored(db)
    r = api(u).put(
        variables_url(p, "K"),
        params={"filter[environment_scope]": "production"},
        json={"environment_scope": "*"},
    )
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["(K) has already been taken"]}})
    assert stored(db) == before


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ("", "can't be blank"),
        ("prod!", "can contain only letters, digits, '-', '_', '/', '$', '{', '}', '.', '*' and spaces"),
        ("e" * 256, "is too long (maximum is 255 characters)"),
    ],
)
def test_environment_scope_rules(api, db, owned, scope, message):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "K", "value": "v", "environment_scope": scope})
    assert (r.status_code, r.json()) == (400, {"message": {"environment_scope": [message]}})
    assert stored(db) == before


# ----------------------------------------------------------------------------- input rules


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", ["can't be blank", "can contain only letters, digits and '_'."]),
        ("HAS-DASH", ["can contain only letters, digits and '_'."]),
        ("DOT.TED", ["can contain only letters, digits and '_'."]),
        ("K" * 256, ["is too long (maximum is 255 characters)"]),
    ],
)
def test_key_rules(api, db, owned, key, message):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": key, "value": "v"})
    assert (r.status_code, r.json()) == (400, {"message": {"key": message}})
    assert stored(db) == before


def test_a_key_of_255_characters_is_taken(api, owned):
    u, p = owned
    assert add(api, u, variables_url(p), key="K" * 255)["key"] == "K" * 255


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"value": "v"}, "key is missing"),
        ({"key": "K"}, "value is missing"),
        ({"key": "K", "value": "v", "variable_type": "secret"}, "variable_type does not have a valid value"),
        ({"key": "K", "value": "v", "protected": "maybe"}, "protected is invalid"),
    ],
)
def test_parameters_grape_refuses(api, db, owned, body, message):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json=body)
    assert (r.status_code, r.json()) == (400, {"error": message})
    assert stored(db) == before


def test_a_value_holds_at_most_10000_characters(api, db, owned):
    u, p = owned
    assert add(api, u, variables_url(p), key="LONGEST", value="v" * 10_000)["value"] == "v" * 10_000
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "K", "value": "v" * 10_001})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"value": ["The value of the provided variable exceeds the 10000 character limit"]}
    }
    r = api(u).put(variables_url(p, "LONGEST"), json={"value": "v" * 10_001})
    assert r.status_code == 400
    assert stored(db) == before
    assert api(u).get(variables_url(p, "LONGEST")).json()["value"] == "v" * 10_000


def test_a_description_holds_at_most_255_characters(api, db, owned):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "K", "value": "v", "description": "d" * 256})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"description": ["is too long (maximum is 255 characters)"]}},
    )
    assert stored(db) == before


# ----------------------------------------------------------------------------- masking


def test_a_masked_value_of_the_allowed_characters_is_taken(api, owned):
    u, p = owned
    assert add(api, u, variables_url(p), key="M", value=MASKABLE, masked=True)["masked"] is True


@pytest.mark.parametrize(
    "value",
    [
        "short7c",  # fewer than 8 characters
        "two\nlines1",
        "has space1",
        "pipe|char1",
        "ref$OTHER1",  # a variable reference, expanded unless raw
        "quote'd1234",
    ],
)
def test_a_masked_value_must_be_maskable(api, db, owned, value):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "M", "value": value, "masked": True})
    assert (r.status_code, r.json()) == (400, {"message": {"value": ["is invalid"]}})
    assert stored(db) == before


def test_a_raw_masked_value_may_hold_any_character_but_whitespace(api, db, owned):
    u, p = owned
    assert add(api, u, variables_url(p), key="R", value="ref$OTHER|'!", masked=True, raw=True)["raw"] is True
    before = stored(db)
    for value in ("has space1", "two\nlines1", "short7c"):
        r = api(u).post(variables_url(p), json={"key": "S", "value": value, "masked": True, "raw": True})
        assert (r.status_code, r.json()) == (400, {"message": {"value": ["is invalid"]}})
    assert stored(db) == before


def test_masking_a_variable_checks_its_current_value(api, db, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="short")
    before = stored(db)
    r = api(u).put(variables_url(p, "K"), json={"masked": True})
    assert (r.status_code, r.json()) == (400, {"message": {"value": ["is invalid"]}})
    assert stored(db) == before
    assert api(u).get(variables_url(p, "K")).json()["masked"] is False


def test_unmasking_a_masked_variable_takes_a_value_masking_refuses(api, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", value=MASKABLE, masked=True)
    r = api(u).put(variables_url(p, "K"), json={"masked": False, "value": "short"})
    assert (r.status_code, r.json()["value"], r.json()["masked"]) == (200, "short", False)


# ----------------------------------------------------------------------------- hidden


def test_a_hidden_variable_never_shows_its_value(api, owned):
    u, p = owned
    created = add(api, u, variables_url(p), key="H", value=MASKABLE, masked_and_hidden=True)
    assert created == view("H", None, hidden=True, masked=True)
    assert api(u).get(variables_url(p, "H")).json()["value"] is None
    assert [v["value"] for v in api(u).get(variables_url(p)).json()] == [None]
    changed = api(u).put(variables_url(p, "H"), json={"value": MASKABLE + "x", "protected": True})
    assert (changed.status_code, changed.json()["value"], changed.json()["protected"]) == (200, None, True)


def test_a_hidden_variable_must_be_maskable(api, db, owned):
    u, p = owned
    before = stored(db)
    r = api(u).post(variables_url(p), json={"key": "H", "value": "short", "masked_and_hidden": True})
    assert (r.status_code, r.json()) == (400, {"message": {"value": ["is invalid"]}})
    assert stored(db) == before


def test_a_hidden_variable_stays_masked(api, db, owned):
    u, p = owned
    add(api, u, variables_url(p), key="H", value=MASKABLE, masked_and_hidden=True)
    before = stored(db)
    r = api(u).put(variables_url(p, "H"), json={"masked": False})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"base": ["Updating masked attribute is not allowed on updates for hidden variables."]}
    }
    assert stored(db) == before
    assert api(u).put(variables_url(p, "H"), json={"masked": True}).status_code == 200


# ----------------------------------------------------------------------------- storage and events


def test_values_are_kept_sealed(api, db, owned, settings):
    u, p = owned
    add(api, u, variables_url(p), key="K", value="plain-secret")
    kept = db.scalar(select(ProjectVariable.value).where(ProjectVariable.project_id == p.id))
    assert "plain-secret" not in kept
    assert kept.startswith("v1:")
    assert unseal(settings, kept) == "plain-secret"


def test_each_change_records_an_event(api, db, owned):
    u, p = owned
    add(api, u, variables_url(p), key="K", environment_scope="prod")
    api(u).put(variables_url(p, "K"), json={"value": "x"})
    api(u).delete(variables_url(p, "K"))
    rows = db.execute(
        select(Event.action, Event.project_id, Event.author_id, Event.data)
        .where(Event.target_type == "CiVariable")
        .order_by(Event.id)
    ).all()
    data = {"level": "project", "key": "K", "environment_scope": "prod"}
    assert [tuple(r) for r in rows] == [
        ("created", p.id, u.id, data),
        ("updated", p.id, u.id, data),
        ("destroyed", p.id, u.id, data),
    ]


# ----------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("level", "allowed"),
    [(GUEST, False), (REPORTER, False), (DEVELOPER, False), (MAINTAINER, True), (OWNER, True)],
)
def test_variables_are_for_maintainers_and_up(api, db, make, level, allowed):
    owner = make.user()
    p = make.project(owner=owner, members={owner: MAINTAINER})
    add(api, owner, variables_url(p), key="K")
    member = make.user()
    make.member(p, member, level)
    calls = [
        lambda: api(member).get(variables_url(p)),
        lambda: api(member).get(variables_url(p, "K")),
        lambda: api(member).put(variables_url(p, "K"), json={"value": "x"}),
        lambda: api(member).post(variables_url(p), json={"key": "NEW", "value": "v"}),
        lambda: api(member).delete(variables_url(p, "K")),
    ]
    before = stored(db)
    for call in calls:
        r = call()
        if allowed:
            assert r.status_code in (200, 201, 204), r.text
        else:
            assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    if not allowed:
        assert stored(db) == before


def test_a_hidden_project_is_404(api, db, make):
    owner = make.user()
    p = make.project(owner=owner, members={owner: MAINTAINER})
    add(api, owner, variables_url(p), key="K")
    stranger = make.user()
    before = stored(db)
    for r in (
        api(stranger).get(variables_url(p)),
        api(stranger).get(variables_url(p, "K")),
        api(stranger).post(variables_url(p), json={"key": "NEW", "value": "v"}),
        api(stranger).put(variables_url(p, "K"), json={"value": "x"}),
        api(stranger).delete(variables_url(p, "K")),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert stored(db) == before


def test_a_public_project_refuses_non_members(api, make):
    owner = make.user()
    p = make.project(owner=owner, visibility="public")
    r = api(make.user()).get(variables_url(p))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_anonymous_callers_are_401(api, make):
    p = make.project(visibility="public")
    assert api().get(variables_url(p)).status_code == 401
    assert api().post(variables_url(p), json={"key": "K", "value": "v"}).status_code == 401


def test_an_administrator_manages_any_projects_variables(api, make):
    p = make.project(owner=make.user())
    assert add(api, "root", variables_url(p), key="K")["key"] == "K"
    assert [v["key"] for v in api("root").get(variables_url(p)).json()] == ["K"]


def test_a_project_by_path(api, make):
    u = make.user()
    p = make.project(owner=u, members={u: MAINTAINER}, path="app")
    add(api, u, variables_url(p), key="K")
    path = f"{u.username}%2Fapp"
    assert [v["key"] for v in api(u).get(f"/projects/{path}/variables").json()] == ["K"]


# ----------------------------------------------------------------------------- statements


def test_list_is_constant_in_variables(api, owned, runtime):
    u, p = owned
    add(api, u, variables_url(p), key="K0", value=MASKABLE, masked=True)
    listed = {"per_page": 100}
    few = count(runtime, lambda: api(u).get(variables_url(p), params=listed))
    for i in range(1, 25):
        add(api, u, variables_url(p), key=f"K{i}", environment_scope=f"env{i}")
    many = count(runtime, lambda: api(u).get(variables_url(p), params=listed))
    assert few == many
