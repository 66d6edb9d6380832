"""Parameters: one merge of path + query + form + multipart + JSON (query < body < path, as
Grape), Rack-style arrays and hashes, booleans in every spelling clients send, JSON null as
"not given", unknown keys ignored."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from litestar import Litestar, Request, Response
from litestar.datastructures import State
from litestar.params import FromPath
from litestar.testing import TestClient

from kiln.api._asgi import KilnASGI
from kiln.api._errors import HANDLERS
from kiln.api._params import params
from kiln.api._render import render
from kiln.api._routes import post
from kiln.models import UserCustomAttribute
from kiln.schemas._types import Flag, Params

BOUNDARY = "kiln-test-boundary"


def multipart(fields: list[tuple[str, str]], *, empty_part: bool = False) -> dict[str, Any]:
    """Request kwargs for a hand-built multipart body (plain string fields, as python-gitlab)."""
    chunks = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields
    ]
    if empty_part:
        chunks.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name=""\r\n\r\n\r\n'.encode())
    chunks.append(f"--{BOUNDARY}--\r\n".encode())
    return {
        "content": b"".join(chunks),
        "headers": {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
    }


def new_user_fields(n: str) -> dict[str, str]:
    return {"email": f"{n}@example.com", "name": f"Name {n}", "username": n, "password": "secret-pass-123"}


# --- merging ---------------------------------------------------------------------------------


def test_query_params_are_read_on_post(api):
    r = api("root").post("/users", params=new_user_fields("viaquery"), json={})
    assert r.status_code == 201, r.text
    assert (r.json()["username"], r.json()["email"]) == ("viaquery", "viaquery@example.com")


def test_query_and_json_body_are_merged(api):
    fields = new_user_fields("mixed")
    r = api("root").post(
        "/users", params={"username": fields.pop("username")}, json=fields | {"bio": "from body"}
    )
    assert r.status_code == 201, r.text
    assert (r.json()["username"], r.json()["name"], r.json()["bio"]) == ("mixed", "Name mixed", "from body")


def test_a_chunked_body_without_content_length_is_read(api):
    body = orjson.dumps(new_user_fields("chunked") | {"bio": "in chunks"})

    def chunks() -> Iterator[bytes]:
        yield body[:10]
        yield body[10:]

    r = api("root").post("/users", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert (r.json()["username"], r.json()["bio"]) == ("chunked", "in chunks")


def test_form_body_is_read(api):
    r = api("root").post("/users", data=new_user_fields("viaform") | {"bio": "formed"})
    assert r.status_code == 201, r.text
    assert (r.json()["username"], r.json()["bio"]) == ("viaform", "formed")


def test_multipart_body_is_read(api):
    r = api("root").post("/users", **multipart(list(new_user_fields("viamulti").items())))
    assert r.status_code == 201, r.text
    assert r.json()["username"] == "viamulti"


def test_empty_extra_multipart_part_is_ignored(api):
    r = api("root").post("/users", **multipart(list(new_user_fields("extra").items()), empty_part=True))
    assert r.status_code == 201, r.text
    assert r.json()["username"] == "extra"


@pytest.mark.parametrize(
    "body",
    [
        {"json": {"name": "From body"}},
        {"data": {"name": "From body"}},
        multipart([("name", "From body")]),
    ],
    ids=["json", "form", "multipart"],
)
def test_body_wins_over_query(api, make, body):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", params={"name": "From query"}, **body)
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "From body"


# A route of kiln's own kind (the real params helper, error handlers and ASGI wrapper) that
# echoes what it parsed: no users endpoint shows a path parameter competing with the body.
class Echo(Params):
    id: str | None = None
    name: str | None = None
    flag: Flag | None = None


@pytest.fixture
def echo(runtime, settings):
    @post("/echo/{id:str}", auth="none", params=Echo, status=200)
    async def echo_route(request: Request[Any, Any, Any], id: FromPath[str]) -> Response[bytes]:
        p: Echo = await params(request)
        return render(p.model_dump(exclude_unset=True))

    app = Litestar(route_handlers=[echo_route], exception_handlers=HANDLERS, state=State({"kiln": runtime}))
    with TestClient(KilnASGI(app, settings.max_request_body_bytes), base_url="http://kiln.test") as c:
        yield c


def test_path_wins_over_body_and_query(echo):
    r = echo.post("/echo/from-path", params={"id": "from-query", "name": "q"}, json={"id": "from-body"})
    assert (r.status_code, r.json()) == (200, {"id": "from-path", "name": "q"})


def test_encoded_slash_reaches_the_parameter_decoded(echo):
    r = echo.post("/echo/a%2Fb", json={})
    assert (r.status_code, r.json()) == (200, {"id": "a/b"})


def test_encoded_percent_is_decoded_once(echo):
    r = echo.post("/echo/a%252Fb", json={})
    assert (r.status_code, r.json()) == (200, {"id": "a%2Fb"})


# --- arrays and hashes ------------------------------------------------------------------------


def test_array_params_in_form(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens",
        data={"name": "t", "scopes[]": ["api", "read_user"]},
    )
    assert r.status_code == 201, r.text
    assert r.json()["scopes"] == ["api", "read_user"]


def test_single_element_array_in_query(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens?name=t&scopes[]=read_api", json={})
    assert r.status_code == 201, r.text
    assert r.json()["scopes"] == ["read_api"]


def test_array_params_in_json(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", json={"name": "t", "scopes": ["read_user", "api"]}
    )
    assert r.status_code == 201, r.text
    assert r.json()["scopes"] == ["read_user", "api"]


def test_hash_params_in_query(api, make, db):
    blue, green = make.user(), make.user()
    db.add_all(
        [
            UserCustomAttribute(user_id=blue.id, key="team", value="blue"),
            UserCustomAttribute(user_id=green.id, key="team", value="green"),
        ]
    )
    db.commit()
    r = api("root").get("/users?custom_attributes[team]=blue")
    assert r.status_code == 200, r.text
    assert [u["id"] for u in r.json()] == [blue.id]


# --- booleans ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["True", "true", "1", "TRUE"])
def test_true_in_query(api, make, value):
    ext = make.user(external=True)
    make.user()
    r = api("root").get(f"/users?external={value}")
    assert r.status_code == 200, r.text
    assert [u["id"] for u in r.json()] == [ext.id]


@pytest.mark.parametrize("value", ["False", "false", "0"])
def test_false_in_query(api, make, value):
    ext, other = make.user(external=True), make.user()
    r = api("root").get(f"/users?external={value}")
    assert r.status_code == 200, r.text
    assert sorted(u["id"] for u in r.json()) == [1, ext.id, other.id]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"json": {"private_profile": True}}, True),
        ({"json": {"private_profile": False}}, False),
        ({"json": {"private_profile": 1}}, True),
        ({"json": {"private_profile": "true"}}, True),
        ({"data": {"private_profile": "1"}}, True),
        ({"data": {"private_profile": "0"}}, False),
        ({"data": {"private_profile": "True"}}, True),
        (multipart([("private_profile", "1")]), True),
        (multipart([("private_profile", "0")]), False),
        ({"params": {"private_profile": "True"}, "json": {}}, True),
        ({"params": {"private_profile": "False"}, "json": {}}, False),
    ],
)
def test_booleans_in_every_encoding(api, make, body, expected):
    u = make.user(private_profile=not expected)
    r = api("root").put(f"/users/{u.id}", **body)
    assert r.status_code == 200, r.text
    assert r.json()["private_profile"] is expected


def test_invalid_boolean_is_400(api):
    r = api("root").get("/users?external=maybe")
    assert (r.status_code, r.json()) == (400, {"error": "external is invalid"})


# --- absent, null, unknown --------------------------------------------------------------------


def test_json_null_means_not_given(api, make):
    u = make.user(name="Kept Name", bio="kept bio")
    r = api("root").put(f"/users/{u.id}", json={"name": None, "bio": None, "location": "Lyon"})
    assert r.status_code == 200, r.text
    assert (r.json()["name"], r.json()["bio"], r.json()["location"]) == ("Kept Name", "kept bio", "Lyon")


def test_json_null_for_a_required_param_is_missing(api):
    r = api("root").post("/users", json=new_user_fields("nulled") | {"email": None})
    assert (r.status_code, r.json()) == (400, {"error": "email is missing"})


def test_unknown_params_are_ignored(api):
    r = api("root").post(
        "/users", params={"frobnicate": "x"}, json=new_user_fields("unknowns") | {"not_a_field": [1, 2]}
    )
    assert r.status_code == 201, r.text
    assert "not_a_field" not in r.json()
    assert "frobnicate" not in r.json()


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/x-www-form-urlencoded", "multipart/form-data", "text/plain", ""],
)
def test_empty_body_with_any_content_type(api, make, content_type):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/block", content=b"", headers={"Content-Type": content_type})
    assert (r.status_code, r.json()) == (201, True)


def test_get_with_json_content_type_and_no_body(api):
    # python-gitlab sends Content-Type: application/json on every request.
    r = api("root").get("/users", headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    assert [u["id"] for u in r.json()] == [1]


def test_post_with_empty_json_object(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/block", json={})
    assert (r.status_code, r.json()) == (201, True)
