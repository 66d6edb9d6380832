"""Plan limits (administrators only): GitLab's limits of the `default` plan, their defaults,
changes and the history of changes."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from sqlalchemy import select

from kiln.models import PlanLimits
from tests.bodies import FORBIDDEN, UNAUTHORIZED

PATH = "/application/plan_limits"
DEFAULTS = {
    "ci_instance_level_variables": 25,
    "ci_pipeline_size": 0,
    "ci_active_jobs": 0,
    "ci_project_subscriptions": 2,
    "ci_pipeline_schedules": 10,
    "ci_needs_size_limit": 50,
    "ci_registered_group_runners": 1000,
    "ci_registered_project_runners": 1000,
    "conan_max_file_size": 3221225472,
    "dotenv_size": 5120,
    "dotenv_variables": 20,
    "enforcement_limit": 0,
    "generic_packages_max_file_size": 5368709120,
    "helm_max_file_size": 5242880,
    "maven_max_file_size": 3221225472,
    "notification_limit": 0,
    "npm_max_file_size": 524288000,
    "nuget_max_file_size": 524288000,
    "pipeline_hierarchy_size": 1000,
    "pypi_max_file_size": 3221225472,
    "storage_size_limit": 0,
    "terraform_module_max_file_size": 1073741824,
    "web_hook_calls": 0,
}


def stored(db) -> dict:
    db.expire_all()
    return db.scalars(select(PlanLimits.values).where(PlanLimits.plan_name == "default")).first() or {}


def test_anonymous_is_401_and_non_admin_403(api, make, db):
    assert (api().get(PATH).status_code, api().get(PATH).json()) == (401, UNAUTHORIZED)
    user = make.user()
    assert (api(user).get(PATH).status_code, api(user).get(PATH).json()) == (403, FORBIDDEN)
    r = api(user).put(PATH, json={"plan_name": "default", "ci_pipeline_size": 5})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert stored(db) == {}


def test_get_answers_the_default_plans_limits(api):
    r = api("root").get(PATH)
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in DEFAULTS} == DEFAULTS
    assert body["limits_history"] == {}


def test_only_the_default_plan_exists(api):
    r = api("root").get(f"{PATH}?plan_name=gold")
    assert (r.status_code, r.json()) == (400, {"error": "plan_name does not have a valid value"})


@pytest.mark.parametrize("how", ["json", "query"])
def test_update_sets_the_limits_given(api, db, how):
    values = {"plan_name": "default", "ci_pipeline_size": 100, "npm_max_file_size": 1024}
    r = (
        api("root").put(f"{PATH}?{urlencode(values)}")
        if how == "query"
        else api("root").put(PATH, json=values)
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["ci_pipeline_size"], body["npm_max_file_size"], body["pypi_max_file_size"]) == (
        100,
        1024,
        3221225472,
    )
    assert api("root").get(PATH).json()["ci_pipeline_size"] == 100
    assert stored(db)["ci_pipeline_size"] == 100


def test_update_needs_the_plan_name(api):
    r = api("root").put(PATH, json={"ci_pipeline_size": 100})
    assert (r.status_code, r.json()) == (400, {"error": "plan_name is missing"})


def test_limits_are_integers(api):
    r = api("root").put(PATH, json={"plan_name": "default", "ci_pipeline_size": "big"})
    assert (r.status_code, r.json()) == (400, {"error": "ci_pipeline_size is invalid"})


def test_a_negative_limit_changes_nothing(api, db):
    r = api("root").put(PATH, json={"plan_name": "default", "ci_pipeline_size": 7, "dotenv_size": -1})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"dotenv_size": ["must be greater than or equal to 0"]}},
    )
    assert stored(db) == {}


def test_changes_are_recorded_in_the_history(api):
    api("root").put(PATH, json={"plan_name": "default", "ci_pipeline_size": 10})
    body = api("root").put(PATH, json={"plan_name": "default", "ci_pipeline_size": 20}).json()
    history = body["limits_history"]["ci_pipeline_size"]
    assert [(h["user_id"], h["username"], h["value"]) for h in history] == [(1, "root", 10), (1, "root", 20)]
    assert all(isinstance(h["timestamp"], int) for h in history)
