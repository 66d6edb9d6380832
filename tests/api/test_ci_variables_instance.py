"""Instance CI/CD variables: GitLab's Instance-level CI/CD variables API under /admin/ci, the
administrators' alone. One variable per key (no environment scopes), never hidden."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.auth.sealing import unseal
from kiln.models import Event, InstanceVariable
from tests.api.test_ci_variables import MASKABLE, add, stored
from tests.statements import count

URL = "/admin/ci/variables"


def instance_view(key: str, value: str, **fields):
    return {
        "variable_type": "env_var",
        "key": key,
        "value": value,
        "protected": False,
        "masked": False,
        "raw": False,
        "description": None,
        **fields,
    }


def test_an_administrator_creates_a_variable(api):
    body = {"key": "I", "value": MASKABLE, "masked": True, "protected": True, "variable_type": "file"}
    r = api("root").post(URL, json={**body, "description": "everywhere"})
    assert r.status_code == 201
    assert r.json() == instance_view(
        "I", MASKABLE, masked=True, protected=True, variable_type="file", description="everywhere"
    )


def test_list_get_update_delete(api):
    root = api("root")
    add(api, "root", URL, key="A", value="1")
    add(api, "root", URL, key="B", value="2")
    assert [v["key"] for v in root.get(URL).json()] == ["A", "B"]
    assert root.get(f"{URL}/B").json() == instance_view("B", "2")
    assert root.put(f"{URL}/B", json={"value": "3", "raw": True}).json() == instance_view("B", "3", raw=True)
    assert root.delete(f"{URL}/A").status_code == 204
    assert [v["key"] for v in root.get(URL).json()] == ["B"]


def test_a_missing_key_is_404(api):
    root = api("root")
    for r in (
        root.get(f"{URL}/NOPE"),
        root.put(f"{URL}/NOPE", json={"value": "x"}),
        root.delete(f"{URL}/NOPE"),
    ):
        assert (r.status_code, r.json()) == (404, {"message": "404 InstanceVariable Not Found"})


def test_a_key_is_held_once(api, db):
    add(api, "root", URL, key="K")
    before = stored(db, InstanceVariable)
    r = api("root").post(URL, json={"key": "K", "value": "again", "environment_scope": "production"})
    assert (r.status_code, r.json()) == (400, {"message": {"key": ["(K) has already been taken"]}})
    assert stored(db, InstanceVariable) == before


def test_neither_scopes_nor_hiding_apply(api):
    created = add(
        api, "root", URL, key="K", value=MASKABLE, environment_scope="production", masked_and_hidden=True
    )
    assert created == instance_view("K", MASKABLE)


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"key": "BAD-KEY", "value": "v"}, {"key": ["can contain only letters, digits and '_'."]}),
        ({"key": "M", "value": "short", "masked": True}, {"value": ["is invalid"]}),
        (
            {"key": "L", "value": "v" * 10_001},
            {"value": ["The value of the provided variable exceeds the 10000 character limit"]},
        ),
    ],
)
def test_bad_input_is_refused(api, db, body, errors):
    before = stored(db, InstanceVariable)
    r = api("root").post(URL, json=body)
    assert (r.status_code, r.json()) == (400, {"message": errors})
    assert stored(db, InstanceVariable) == before


def test_others_are_refused_before_their_input_is_read(api, db, make):
    add(api, "root", URL, key="K")
    u = make.user()
    before = stored(db, InstanceVariable)
    for r in (
        api(u).get(URL),
        api(u).get(f"{URL}/K"),
        api(u).post(URL, json={"key": "BAD-KEY"}),
        api(u).put(f"{URL}/K", json={"value": "x"}),
        api(u).delete(f"{URL}/K"),
    ):
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert stored(db, InstanceVariable) == before
    assert api().get(URL).status_code == 401


def test_values_are_kept_sealed(api, db, settings):
    add(api, "root", URL, key="K", value="instance-secret")
    kept = db.scalar(select(InstanceVariable.value).where(InstanceVariable.key == "K"))
    assert "instance-secret" not in kept
    assert unseal(settings, kept) == "instance-secret"


def test_each_change_records_an_event(api, db):
    add(api, "root", URL, key="K")
    api("root").put(f"{URL}/K", json={"value": "x"})
    api("root").delete(f"{URL}/K")
    rows = db.execute(
        select(Event.action, Event.project_id, Event.data)
        .where(Event.target_type == "CiVariable")
        .order_by(Event.id)
    ).all()
    data = {"level": "instance", "key": "K"}
    assert [tuple(r) for r in rows] == [
        ("created", None, data),
        ("updated", None, data),
        ("destroyed", None, data),
    ]


def test_list_is_constant_in_variables(api, runtime):
    listed = {"per_page": 100}
    add(api, "root", URL, key="K0")
    few = count(runtime, lambda: api("root").get(URL, params=listed))
    for i in range(1, 25):
        add(api, "root", URL, key=f"K{i}")
    many = count(runtime, lambda: api("root").get(URL, params=listed))
    assert few == many
