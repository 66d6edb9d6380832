"""Feature flags: GitLab's Features API and the flags behaviour in kiln reads, one rule per
test."""

from __future__ import annotations

import pytest

from kiln.models.namespaces import KIND_GROUP
from kiln.services import features
from tests.statements import count


def set_flag(api, name: str, **body):
    r = api("root").post(f"/features/{name}", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def listed(api) -> dict[str, dict]:
    r = api("root").get("/features")
    assert r.status_code == 200
    return {f["name"]: f for f in r.json()}


# ----------------------------------------------------------------------------- who


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/features"),
        ("GET", "/features/definitions"),
        ("POST", "/features/some_flag?value=true"),
        ("DELETE", "/features/some_flag"),
    ],
)
def test_features_are_for_administrators(api, make, method, path):
    assert api().request(method, path).status_code == 401
    r = api(make.user()).request(method, path)
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_an_administrator_other_than_root_may_set_flags(api, make):
    admin = make.admin()
    r = api(admin).post("/features/x_flag", json={"value": True})
    assert (r.status_code, r.json()["state"]) == (201, "on")
    assert listed(api)["x_flag"]["state"] == "on"


# ----------------------------------------------------------------------------- setting


def test_enable_for_everyone(api):
    assert set_flag(api, "my_flag", value=True) == {
        "name": "my_flag",
        "state": "on",
        "gates": [{"key": "boolean", "value": True}],
        "definition": None,
    }


def test_value_is_required(api):
    r = api("root").post("/features/my_flag", json={})
    assert (r.status_code, r.json()) == (400, {"error": "value is missing"})


def test_a_value_that_is_neither_boolean_nor_number_is_refused(api):
    r = api("root").post("/features/my_flag", json={"value": "maybe"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": """400 Bad request - Cannot set 'my_flag' to "maybe\""""},
    )
    assert "my_flag" not in listed(api)


def test_a_percentage_for_named_actors_is_refused(api, make):
    u = make.user()
    r = api("root").post("/features/my_flag", json={"value": 50, "user": u.username})
    assert (r.status_code, r.json()) == (
        400,
        {"message": f"""400 Bad request - Cannot set 'my_flag' to "50" for User:{u.id}"""},
    )
    assert "my_flag" not in listed(api)


def test_an_unknown_key_is_refused(api):
    r = api("root").post("/features/my_flag", json={"value": 50, "key": "percentage_of_moons"})
    assert r.status_code == 400
    assert r.json() == {
        "message": """400 Bad request - Cannot set 'my_flag' ("percentage_of_moons") to "50\""""
    }
    assert "my_flag" not in listed(api)


def test_a_percentage_of_actors_must_be_a_number(api):
    r = api("root").post("/features/my_flag", json={"value": "lots", "key": "percentage_of_actors"})
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Not a percentage"})
    assert "my_flag" not in listed(api)


@pytest.mark.parametrize("value", [False, "false", 0, "0"])
def test_disable_for_everyone_keeps_the_flag_listed_off(api, value):
    set_flag(api, "my_flag", value=True)
    flag = set_flag(api, "my_flag", value=value)
    assert (flag["state"], flag["gates"]) == ("off", [{"key": "boolean", "value": False}])
    assert listed(api)["my_flag"]["state"] == "off"


def test_disabling_for_everyone_clears_every_gate(api, make):
    u = make.user()
    set_flag(api, "my_flag", value=True, user=u.username)
    set_flag(api, "my_flag", value=30)
    assert set_flag(api, "my_flag", value=False)["gates"] == [{"key": "boolean", "value": False}]


def test_enabling_for_everyone_clears_every_gate(api, make):
    u = make.user()
    set_flag(api, "my_flag", value=True, user=u.username)
    set_flag(api, "my_flag", value=30)
    flag = set_flag(api, "my_flag", value=True)
    assert (flag["state"], flag["gates"]) == ("on", [{"key": "boolean", "value": True}])


def test_enable_for_users_by_username(api, make):
    a, b = make.user(), make.user()
    flag = set_flag(api, "my_flag", value=True, user=f"{a.username},{b.username.upper()}")
    assert flag["state"] == "conditional"
    assert flag["gates"] == [
        {"key": "boolean", "value": False},
        {"key": "actors", "value": sorted([f"User:{a.id}", f"User:{b.id}"])},
    ]


def test_an_unknown_user_is_a_bad_request_and_changes_nothing(api, make):
    u = make.user()
    r = api("root").post("/features/my_flag", json={"value": True, "user": f"{u.username},nobody_here"})
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - nobody_here is not found!"})
    assert "my_flag" not in listed(api)


def test_enable_for_groups_namespaces_projects_and_repositories(api, make):
    u = make.user()
    g = make.group(path="team")
    p = make.project(namespace=g, path="app")
    flag = set_flag(
        api,
        "my_flag",
        value=True,
        group="team",
        namespace=u.username,
        project="team/app",
        repository="team/app.git",
    )
    actors = next(gate["value"] for gate in flag["gates"] if gate["key"] == "actors")
    assert f"Group:{g.id}" in actors
    assert f"Project:{p.id}" in actors
    assert any(a.startswith("Namespaces::UserNamespace:") for a in actors)
    assert any(a.startswith("Repository:@hashed/") for a in actors)


@pytest.mark.parametrize(
    ("param", "value"), [("group", "no/such/group"), ("project", "no/such"), ("repository", "no/such.git")]
)
def test_an_unknown_target_is_a_bad_request(api, param, value):
    r = api("root").post("/features/my_flag", json={"value": True, param: value})
    assert (r.status_code, r.json()) == (400, {"message": f"400 Bad request - {value} is not found!"})
    assert "my_flag" not in listed(api)


def test_a_user_namespace_is_no_group(api, make):
    u = make.user()
    r = api("root").post("/features/my_flag", json={"value": True, "group": u.username})
    assert (r.status_code, r.json()) == (400, {"message": f"400 Bad request - {u.username} is not found!"})
    assert "my_flag" not in listed(api)


def test_enable_for_a_feature_group(api):
    flag = set_flag(api, "my_flag", value=True, feature_group="gitlab_team_members")
    assert {"key": "groups", "value": ["gitlab_team_members"]} in flag["gates"]
    assert flag["state"] == "conditional"


def test_disable_for_a_user_removes_only_that_user(api, make):
    a, b = make.user(), make.user()
    set_flag(api, "my_flag", value=True, user=f"{a.username},{b.username}")
    flag = set_flag(api, "my_flag", value=False, user=a.username)
    assert {"key": "actors", "value": [f"User:{b.id}"]} in flag["gates"]


def test_disable_for_the_last_user_leaves_the_flag_set_and_off(api, make):
    a = make.user()
    set_flag(api, "my_flag", value=True, user=a.username)
    flag = set_flag(api, "my_flag", value=False, user=a.username)
    assert (flag["state"], flag["gates"]) == ("off", [{"key": "boolean", "value": False}])


def test_a_number_is_a_percentage_of_time(api):
    flag = set_flag(api, "my_flag", value=30)
    assert flag["state"] == "conditional"
    assert flag["gates"] == [{"key": "boolean", "value": False}, {"key": "percentage_of_time", "value": 30}]


def test_key_percentage_of_actors(api):
    flag = set_flag(api, "my_flag", value="25", key="percentage_of_actors")
    assert {"key": "percentage_of_actors", "value": 25} in flag["gates"]


def test_a_fractional_percentage(api):
    flag = set_flag(api, "my_flag", value="12.5")
    assert {"key": "percentage_of_time", "value": 12.5} in flag["gates"]


def test_a_percentage_above_100_is_refused(api):
    r = api("root").post("/features/my_flag", json={"value": 150})
    assert r.status_code == 400
    assert r.json() == {
        "message": "400 Bad request - value must be a positive number less than or equal to 100, but was 150"
    }


def test_a_fully_enabled_flag_takes_no_percentage(api):
    set_flag(api, "my_flag", value=True)
    r = api("root").post("/features/my_flag", json={"value": 50})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "400 Bad request - Cannot enable percentage of time for a fully-enabled flag"},
    )
    assert listed(api)["my_flag"]["gates"] == [{"key": "boolean", "value": True}]


@pytest.mark.parametrize("target", ["user", "group", "project", "feature_group", "namespace", "repository"])
def test_key_and_a_target_are_mutually_exclusive(api, target):
    r = api("root").post("/features/my_flag", json={"value": 10, "key": "percentage_of_actors", target: "x"})
    assert (r.status_code, r.json()) == (400, {"error": f"key, {target} are mutually exclusive"})


def test_any_name_is_accepted(api):
    assert set_flag(api, "not_a_kiln_flag", value=True, force=True)["name"] == "not_a_kiln_flag"


def test_form_parameters_work_as_json(api):
    r = api("root").post("/features/form_flag", data={"value": "true"})
    assert (r.status_code, r.json()["state"]) == (201, "on")
    assert listed(api)["form_flag"]["gates"] == [{"key": "boolean", "value": True}]


# ----------------------------------------------------------------------------- reading


def test_list_holds_only_flags_that_were_set(api):
    assert listed(api) == {}
    set_flag(api, "b_flag", value=True)
    set_flag(api, "a_flag", value=False)
    assert list(listed(api)) == ["a_flag", "b_flag"]


def test_a_known_flag_carries_its_definition(api):
    flag = set_flag(api, features.CONFIDENTIAL_EPICS, value=True)
    assert flag["definition"]["name"] == "confidential_epics"
    assert flag["definition"]["default_enabled"] is False


def test_definitions_list_kilns_flags(api):
    r = api("root").get("/features/definitions")
    assert r.status_code == 200
    by_name = {d["name"]: d for d in r.json()}
    assert set(by_name) >= {features.VULNERABILITY_EXPORTS, features.CONFIDENTIAL_EPICS}
    assert set(by_name[features.VULNERABILITY_EXPORTS]) == {
        "name",
        "introduced_by_url",
        "rollout_issue_url",
        "milestone",
        "log_state_changes",
        "type",
        "group",
        "default_enabled",
    }
    assert by_name[features.VULNERABILITY_EXPORTS]["default_enabled"] is False


def test_list_costs_the_same_for_few_and_many_flags(api, runtime):
    set_flag(api, "flag_0", value=True)
    few = count(runtime, lambda: api("root").get("/features"))
    for n in range(1, 15):
        set_flag(api, f"flag_{n}", value=n)
    many = count(runtime, lambda: api("root").get("/features"))
    assert few == many
    assert len(listed(api)) == 15


# ----------------------------------------------------------------------------- removing


def test_delete_forgets_the_flag(api, db):
    set_flag(api, features.VULNERABILITY_EXPORTS, value=True)
    assert features.enabled(db, features.VULNERABILITY_EXPORTS)
    assert api("root").delete(f"/features/{features.VULNERABILITY_EXPORTS}").status_code == 204
    assert features.VULNERABILITY_EXPORTS not in listed(api)
    assert not features.enabled(db, features.VULNERABILITY_EXPORTS)


def test_deleting_an_unset_flag_is_no_error(api):
    assert api("root").delete("/features/never_set").status_code == 204


# ----------------------------------------------------------------------------- deciding


def test_known_flags_are_off_by_default(db):
    assert not features.enabled(db, features.VULNERABILITY_EXPORTS)
    assert not features.enabled(db, features.CONFIDENTIAL_EPICS)
    assert not features.enabled(db, "nothing_by_that_name")


def test_a_flag_enabled_for_everyone_is_on_for_anyone(api, db, make):
    set_flag(api, features.CONFIDENTIAL_EPICS, value=True)
    assert features.enabled(db, features.CONFIDENTIAL_EPICS)
    assert features.enabled(db, features.CONFIDENTIAL_EPICS, user=make.user())


def test_a_flag_enabled_for_an_actor_is_on_for_that_actor_only(api, db, make):
    a, b = make.user(), make.user()
    g = make.group()
    p = make.project(namespace=g)
    set_flag(api, "my_flag", value=True, user=a.username, project=f"{g.full_path}/{p.path}")
    assert features.enabled(db, "my_flag", user=a)
    assert not features.enabled(db, "my_flag", user=b)
    assert features.enabled(db, "my_flag", user=b, project=p)
    assert not features.enabled(db, "my_flag")


def test_a_flag_enabled_for_a_group_is_on_for_that_group(api, db, make):
    g, other = make.group(), make.group()
    assert g.kind == KIND_GROUP
    set_flag(api, "my_flag", value=True, group=g.full_path)
    assert features.enabled(db, "my_flag", group=g)
    assert not features.enabled(db, "my_flag", group=other)


def test_percentage_of_actors_splits_actors_by_a_stable_hash(api, db, make):
    users = [make.user() for _ in range(30)]
    set_flag(api, "my_flag", value=50, key="percentage_of_actors")
    first = [features.enabled(db, "my_flag", user=u) for u in users]
    assert first == [features.enabled(db, "my_flag", user=u) for u in users]
    assert any(first)
    assert not all(first)


def test_a_percentage_of_100_turns_the_flag_fully_on(api, db):
    flag = set_flag(api, "my_flag", value=100, key="percentage_of_actors")
    assert (flag["state"], flag["gates"]) == ("on", [{"key": "boolean", "value": True}])
    assert features.enabled(db, "my_flag")


@pytest.mark.committing
def test_a_change_is_seen_by_every_new_session_at_once(api, runtime):
    set_flag(api, "shared_flag", value=True)
    with runtime.sessions() as other:
        assert features.enabled(other, "shared_flag")
    assert api("root").delete("/features/shared_flag").status_code == 204
    with runtime.sessions() as other:
        assert not features.enabled(other, "shared_flag")
