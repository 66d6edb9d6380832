"""Crafted JSON bodies: nesting past what any parser should follow, numbers no column holds,
literals JSON does not have, bytes that are not UTF-8, arrays and strings far past what a
field allows. Each is a 400 with a JSON answer, and nothing is written."""

from __future__ import annotations

from typing import Any

import pytest

JSON = {"Content-Type": "application/json"}
MALFORMED = (
    "message body does not match declared format: when specifying application/json as "
    "content-type, you must pass valid application/json in the request's 'body'"
)


def _post(api: Any, body: bytes) -> Any:
    return api("root").post("/projects", content=body, headers=JSON)


def _project_names(api: Any) -> list[str]:
    return [p["name"] for p in api("root").get("/projects?per_page=100").json()]


@pytest.mark.parametrize(
    "body",
    [
        b'{"name": "n", "a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'{"name": "n", "a": ' + b'{"b": ' * 5000 + b"1" + b"}" * 5000 + b"}",
        b'{"name": "n", "x": NaN}',
        b'{"name": "n", "x": Infinity}',
        b'{"name": "n",}',
        b"{'name': 'n'}",
        b'{"name": "\xff\xfe"}',
        b'{"name": "\\ud800"}',
        b'{"name": "n"} trailing',
    ],
    ids=[
        "arrays-5000-deep",
        "objects-5000-deep",
        "nan",
        "infinity",
        "trailing-comma",
        "single-quotes",
        "not-utf8",
        "lone-surrogate",
        "trailing-bytes",
    ],
)
def test_json_no_parser_should_follow_is_malformed(api, body):
    before = _project_names(api)
    r = _post(api, body)
    assert r.status_code == 400, r.text
    assert r.json() == {"error": MALFORMED}
    assert _project_names(api) == before


@pytest.mark.parametrize("body", [b"[]", b'"name"', b"42", b"null", b"true"])
def test_a_body_that_is_not_an_object_is_refused(api, body):
    r = _post(api, body)
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "The request body must be a JSON object"}


@pytest.mark.parametrize(
    "value", ["18446744073709551616", "1e400", "-9223372036854775809", "123456789012345678901234567890"]
)
def test_numbers_no_column_holds_are_invalid(api, value):
    r = api("root").post(
        "/projects", content=f'{{"name": "n", "namespace_id": {value}}}'.encode(), headers=JSON
    )
    assert r.status_code == 400, r.text
    r = api("root").get("/projects", params={"id_after": value})
    assert r.status_code == 400, r.text


def test_a_duplicate_key_counts_once_as_its_last_value(api):
    r = _post(api, b'{"name": "first", "name": "second"}')
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "second"


def test_a_name_far_past_its_limit_is_refused_on_every_database(api):
    before = _project_names(api)
    r = api("root").post("/projects", json={"name": "n" * 100_000})
    assert r.status_code == 400, r.text
    assert _project_names(api) == before


def test_an_array_where_a_string_belongs_is_invalid(api):
    r = api("root").post("/projects", json={"name": ["a"] * 100_000})
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "name is invalid"}


def test_an_object_where_an_array_of_strings_belongs_is_invalid(api, make):
    owner = make.user()
    r = api(owner).post("/projects", json={"name": "topics", "topics": {"a": {"b": ["c"] * 1000}}})
    assert r.status_code == 400, r.text


def test_a_body_of_a_million_tiny_arrays_is_refused_before_it_is_built(api):
    from kiln.api._params import MAX_JSON_ELEMENTS, TOO_MANY_ELEMENTS

    body = b'{"name": "n", "a": [' + b"[]," * MAX_JSON_ELEMENTS + b"[]]}"
    before = _project_names(api)
    r = _post(api, body)
    assert r.status_code == 400, r.text
    assert r.json() == {"message": f"400 Bad request - {TOO_MANY_ELEMENTS}"}
    assert _project_names(api) == before


def test_commas_and_brackets_inside_strings_count_for_nothing(api, make):
    from kiln.api._params import MAX_JSON_ELEMENTS

    owner = make.user()
    project = api(owner).post("/projects", json={"name": "csv", "initialize_with_readme": True}).json()
    content = "a,[{" * (MAX_JSON_ELEMENTS // 2) + '\\"quoted, [still] text\\"'
    r = api(owner).post(
        f"/projects/{project['id']}/repository/files/data.csv",
        json={"branch": "main", "content": content, "commit_message": "csv"},
    )
    assert r.status_code == 201, r.text
    raw = api(owner).get(f"/projects/{project['id']}/repository/files/data.csv/raw?ref=main")
    assert raw.content == content.encode()
