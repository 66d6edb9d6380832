"""Error answers: Grape's `{"error"}` for parameter and routing errors, GitLab's `{"message"}`
for the rest; what the client got wrong is a 4xx, never a 500; no body carries a trace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar, Request, get
from litestar.exceptions import HTTPException
from litestar.testing import TestClient

from kiln.api._errors import HANDLERS
from kiln.api._params import MALFORMED_JSON


def assert_clean(r: Any) -> None:
    """An error body is JSON with `message` or `error`, and names nothing of the code."""
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    assert isinstance(body, dict), body
    assert set(body) <= {"message", "error"}, body
    for needle in ("Traceback", 'File "', "kiln/", "sqlalchemy", "Exception"):
        assert needle not in r.text, r.text


# --- parameter errors -------------------------------------------------------------------------


def test_missing_params_are_named(api):
    r = api("root").post("/users", json={"password": "secret-pass-123"})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "email is missing, name is missing, username is missing"},
    )


def test_invalid_type(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"projects_limit": "lots"})
    assert (r.status_code, r.json()) == (400, {"error": "projects_limit is invalid"})


def test_invalid_enum_value(api):
    r = api("root").get("/users?order_by=shoe_size")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_invalid_enum_value_in_body(api, make):
    u = make.user()
    r = api(u).put("/user/status", json={"availability": "asleep"})
    assert (r.status_code, r.json()) == (400, {"error": "availability does not have a valid value"})


def test_invalid_array_member(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", json={"name": "t", "scopes": ["everything"]}
    )
    assert (r.status_code, r.json()) == (400, {"error": "scopes does not have a valid value"})


# --- bodies -----------------------------------------------------------------------------------


def test_malformed_json_is_400(api, make):
    u = make.user()
    r = api(u).put("/user/status", content=b'{"emoji": ', headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()) == (400, {"error": MALFORMED_JSON})


def test_json_array_body_is_400(api, make):
    u = make.user()
    r = api(u).put("/user/status", content=b'["emoji"]', headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()) == (400, {"error": "The request body must be a JSON object"})


def test_unsupported_content_type_with_a_body_is_400(api, make):
    u = make.user()
    r = api(u).put("/user/status", content=b"emoji=dog", headers={"Content-Type": "text/plain"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "400 Bad request - The provided content-type 'text/plain' is not supported."},
    )


def test_multipart_without_boundary_is_400(api, make):
    u = make.user()
    r = api(u).put("/user/status", content=b"--x\r\n", headers={"Content-Type": "multipart/form-data"})
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Malformed multipart body"})


# --- invalid UTF-8 ----------------------------------------------------------------------------


def test_invalid_utf8_in_query_is_400(api):
    r = api("root").get("/users?search=%FF%FE")
    assert (r.status_code, r.json()) == (
        400,
        {"message": "400 Bad request - query string is not valid UTF-8"},
    )


@pytest.mark.parametrize("content", [b"message=%FF", b"message=\xff"], ids=["escaped", "raw"])
def test_invalid_utf8_in_form_body_is_400(api, make, content):
    u = make.user()
    r = api(u).put(
        "/user/status", content=content, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - form body is not valid UTF-8"})


def test_invalid_utf8_in_json_body_is_400(api, make):
    u = make.user()
    r = api(u).put(
        "/user/status", content=b'{"message": "\xff"}', headers={"Content-Type": "application/json"}
    )
    assert (r.status_code, r.json()) == (400, {"error": MALFORMED_JSON})


def test_invalid_utf8_in_multipart_is_400(api, make):
    u = make.user()
    body = b'--b\r\nContent-Disposition: form-data; name="message"\r\n\r\n\xff\xfe\r\n--b--\r\n'
    r = api(u).put("/user/status", content=body, headers={"Content-Type": "multipart/form-data; boundary=b"})
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Malformed multipart body"})


def test_invalid_utf8_in_path_is_400(api):
    r = api("root").get("/users/%FF%FE/status")
    assert (r.status_code, r.json()) == (400, {"error": "path is not valid UTF-8"})


# --- size -------------------------------------------------------------------------------------


def test_content_length_over_the_limit_is_413(api, configure):
    configure(max_request_body_bytes=1000)
    r = api("root").post(
        "/users",
        content=json.dumps({"bio": "x" * 2000}).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert (r.status_code, r.json()) == (413, {"message": "413 Request Entity Too Large"})


def _chunks(data: bytes, size: int = 256) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_chunked_body_over_the_limit_is_413(api, configure):
    configure(max_request_body_bytes=1000)
    payload = json.dumps({"bio": "x" * 2000}).encode()
    r = api("root").post("/users", content=_chunks(payload), headers={"Content-Type": "application/json"})
    assert "content-length" not in {k.lower() for k in r.request.headers}
    assert (r.status_code, r.json()) == (413, {"message": "413 Request Entity Too Large"})


def test_chunked_body_under_the_limit_is_read(api, configure):
    configure(max_request_body_bytes=1000)
    fields = {
        "email": "c@example.com",
        "name": "Chunked",
        "username": "chunked",
        "password": "secret-pass-123",
    }
    r = api("root").post(
        "/users",
        content=_chunks(json.dumps(fields).encode(), 16),
        headers={"Content-Type": "application/json"},
    )
    assert (r.status_code, r.json()["username"]) == (201, "chunked")


def test_invalid_content_length_is_400(app, db):
    # httpx always writes a correct Content-Length, so speak ASGI directly.
    import asyncio

    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v4/users",
        "raw_path": b"/api/v4/users",
        "query_string": b"",
        "headers": [(b"content-length", b"lots")],
    }
    asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 400
    assert json.loads(sent[1]["body"]) == {"error": "Content-Length is invalid"}


# --- routing errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/v4/nothing/here", "/api/v4/users/1/nothing", "/nothing", "/api/v5/users"]
)
def test_unknown_route_is_404(api, path):
    r = api("root").get(path)
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_non_numeric_id_is_a_route_404(api):
    r = api("root").get("/users/abc")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_wrong_method_is_405_with_allow(api):
    r = api("root").delete("/version")
    assert (r.status_code, r.json()) == (405, {"error": "405 Not Allowed"})
    assert {m.strip() for m in r.headers["allow"].split(",")} >= {"GET", "HEAD"}


def test_wrong_method_on_a_parameterised_route_is_405(api):
    r = api("root").post("/users/1/status", json={})
    assert (r.status_code, r.json()) == (405, {"error": "405 Not Allowed"})


# --- no traces --------------------------------------------------------------------------------


def test_no_trace_in_any_client_error(api, make, configure):
    u = make.user()
    answers = [
        api().get("/user"),
        api("garbage-token").get("/user"),
        api(u).get("/users/999999"),
        api(u).post("/users", json={}),
        api(u).put("/user/status", content=b"{", headers={"Content-Type": "application/json"}),
        api(u).get("/users?search=%FF"),
        api(u).get("/nope"),
        api(u).delete("/version"),
        api("root").get("/users?per_page=0"),
        api("root").get("/users?pagination=keyset&order_by=name"),
    ]
    configure(max_request_body_bytes=10)
    answers.append(api(u).put("/user/status", json={"message": "far too long for the limit"}))
    assert [r.status_code for r in answers] == [401, 401, 404, 400, 400, 400, 404, 405, 400, 405, 413]
    for r in answers:
        assert_clean(r)


@pytest.fixture
def failing_client() -> Iterator[TestClient[Any]]:
    """kiln's exception table on routes that fail on the server's side."""

    @get("/boom", sync_to_thread=False)
    def boom(request: Request[Any, Any, Any]) -> None:
        raise RuntimeError("secret internals at /srv/kiln/db.py line 42")

    @get("/unavailable", sync_to_thread=False)
    def unavailable(request: Request[Any, Any, Any]) -> None:
        raise HTTPException(status_code=503, detail="pool exhausted on db-replica-3")

    app = Litestar(route_handlers=[boom, unavailable], exception_handlers=HANDLERS, logging_config=None)
    with TestClient(app) as c:
        yield c


def test_unexpected_exception_is_a_bare_500(failing_client):
    r = failing_client.get("/boom")
    assert (r.status_code, r.json()) == (500, {"message": "500 Internal Server Error"})


def test_server_side_http_error_hides_its_detail(failing_client):
    r = failing_client.get("/unavailable")
    assert (r.status_code, r.json()) == (503, {"message": "503 Service Unavailable"})


def test_out_of_range_id_is_404_not_500(api):
    r = api("root").get("/users/99999999999999999999999")
    assert r.status_code == 404


def test_out_of_range_token_id_is_404_not_500(api):
    r = api("root").get("/personal_access_tokens/99999999999999999999999")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_out_of_range_integer_parameter_is_400_not_500(api):
    r = api("root").get("/personal_access_tokens", params={"user_id": "99999999999999999999999"})
    assert (r.status_code, r.json()) == (400, {"error": "user_id is invalid"})


def test_page_far_beyond_any_offset_is_400_not_500(api):
    r = api("root").get("/users", params={"page": str(2**40)})
    assert (r.status_code, r.json()) == (400, {"error": "page is invalid"})
