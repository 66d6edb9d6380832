"""Views rendered once per distinct record (kiln/entities/_rendered.py): whatever changes in a
record, the JSON sent is the JSON of that record, never one rendered for an earlier one."""

from __future__ import annotations

import dataclasses
from datetime import date, timedelta
from typing import Any

import orjson
import pytest

from kiln.auth.actor import Actor
from kiln.entities import projects as views
from kiln.entities._rendered import RenderedViews
from kiln.models.namespaces import DEVELOPER
from kiln.queries.users import row_by_id
from kiln.records import ProjectRecord
from kiln.services import projects as project_service

BASE = "http://kiln.example"


def others(value: Any) -> list[Any]:
    """Values of the same kind that differ from `value` (for None: one of each kind)."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1]
    if isinstance(value, str):
        return [value + "x"]
    if isinstance(value, date):
        return [value + timedelta(days=1)]
    if isinstance(value, dict):
        return [{**value, "x": 1.0}]
    return ["x", 1, date(2026, 1, 2), True]


def renders(rec: ProjectRecord) -> bool:
    try:
        views.project_with_access(rec, BASE)
        views.project_in_list(rec, BASE, authenticated=False, simple=True)
    except (AttributeError, TypeError, ValueError):
        return False
    return True


def changed(rec: ProjectRecord, part: str, name: str) -> ProjectRecord:
    """`rec` with the column `name` of its row `part` changed to a value its views render."""
    row = getattr(rec, part)
    for value in others(getattr(row, name)):
        variant = dataclasses.replace(rec, **{part: row._replace(**{name: value})})
        if renders(variant):
            return variant
    raise AssertionError(f"no other value of {part}.{name} renders")


def sent(fragment: orjson.Fragment) -> Any:
    return orjson.loads(orjson.dumps(fragment))


def rendered(view: Any) -> Any:
    return orjson.loads(orjson.dumps(view, option=orjson.OPT_NON_STR_KEYS))


@pytest.fixture
def record(db, make, api) -> ProjectRecord:
    owner, member = make.user(), make.user()
    parent = make.project(owner=owner, visibility="public", name="parent")
    fork = api(owner).post(f"/projects/{parent.id}/fork", json={"path": "fork", "name": "fork"}).json()
    api(owner).put(f"/projects/{fork['id']}", json={"description": "**x**", "topics": ["a", "b"]})
    api(owner).post(f"/projects/{fork['id']}/members", json={"user_id": member.id, "access_level": DEVELOPER})
    viewer = Actor(user=row_by_id(db, member.id), via="personal_access_token", scopes=None)
    return project_service.get(db, viewer, str(fork["id"]), settings=None, statistics=True)


def variants(rec: ProjectRecord) -> list[tuple[str, ProjectRecord]]:
    """The record with one thing changed, for every column of its rows and every field."""
    out = []
    assert rec.owner is not None
    assert rec.forked_from is not None
    assert rec.statistics is not None
    for part in ("project", "namespace", "owner", "statistics"):
        for name in getattr(rec, part)._fields:
            out.append((f"{part}.{name}", changed(rec, part, name)))
    parent = rec.forked_from
    out.append(
        ("forked_from", dataclasses.replace(rec, forked_from=dataclasses.replace(parent, topics=["z"])))
    )
    out.append(("topics", dataclasses.replace(rec, topics=[*rec.topics, "c"])))
    out.append(("custom_attributes", dataclasses.replace(rec, custom_attributes=[("k", "v")])))
    for name in ("level", "project_access", "group_access", "can_read_code", "can_admin"):
        out.append((name, dataclasses.replace(rec, **{name: others(getattr(rec, name))[0]})))
    flipped = {feature: not open_ for feature, open_ in rec.features_open.items()}
    out.append(("features_open", dataclasses.replace(rec, features_open=flipped)))
    return out


def test_every_change_to_a_record_is_rendered_anew(record):
    views.RENDERED.clear()
    assert sent(views.project_with_access_json(record, BASE)) == rendered(
        views.project_with_access(record, BASE)
    )
    for changed, variant in variants(record):
        for kept, direct in (
            (views.project_with_access_json(variant, BASE), views.project_with_access(variant, BASE)),
            (
                views.project_in_list_json(variant, BASE, authenticated=True, simple=False),
                views.project_in_list(variant, BASE, authenticated=True, simple=False),
            ),
            (
                views.project_in_list_json(variant, BASE, authenticated=False, simple=True),
                views.project_in_list(variant, BASE, authenticated=False, simple=True),
            ),
        ):
            assert sent(kept) == rendered(direct), changed


def test_the_key_holds_every_field_of_a_record():
    assert tuple(field.name for field in dataclasses.fields(ProjectRecord)) == views.KEYED_FIELDS


def test_a_record_whose_row_holds_a_json_value_is_kept_by_that_value(record):
    """A JSON column's dict cannot be hashed: its text stands for it in the key."""
    english = dataclasses.replace(record, project=record.project._replace(languages={"Python": 100.0}))
    other = dataclasses.replace(record, project=record.project._replace(languages={"Go": 100.0}))
    first = views.project_with_access_json(english, BASE)
    assert views.project_with_access_json(english, BASE) is first
    assert views.project_with_access_json(other, BASE) is not first


def test_a_list_view_is_kept_per_kind_of_caller(record):
    """One record, listed for a signed-in caller and for an anonymous one: each gets its own
    view (permissions are a signed-in caller's only), whichever was rendered first."""
    views.RENDERED.clear()
    for authenticated in (True, False):
        kept = views.project_in_list_json(record, BASE, authenticated=authenticated, simple=False)
        assert sent(kept) == rendered(
            views.project_in_list(record, BASE, authenticated=authenticated, simple=False)
        )


def test_the_base_url_is_part_of_what_is_rendered(record):
    first = sent(views.project_with_access_json(record, BASE))
    again = sent(views.project_with_access_json(record, "https://elsewhere.example"))
    assert (first["web_url"], again["web_url"]) == (
        f"{BASE}/{record.namespace.full_path}/{record.project.path}",
        f"https://elsewhere.example/{record.namespace.full_path}/{record.project.path}",
    )


def test_a_view_is_rendered_once_per_record():
    kept = RenderedViews(limit=2, budget=1 << 20)
    calls: list[str] = []

    def view(name: str) -> Any:
        calls.append(name)
        return {"name": name}

    assert sent(kept.get("a", lambda: view("a"))) == {"name": "a"}
    assert sent(kept.get("a", lambda: view("again"))) == {"name": "a"}
    kept.get("b", lambda: view("b"))
    kept.get("c", lambda: view("c"))  # past the limit: the oldest ("a") goes
    assert sent(kept.get("a", lambda: view("a2"))) == {"name": "a2"}
    assert calls == ["a", "b", "c", "a2"]
