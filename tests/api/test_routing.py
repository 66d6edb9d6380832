"""Routing on the raw path: `%2F` stays inside its segment, every other escape is decoded,
`.json`/`.md` are part of a name and never a format; HEAD answers every GET route."""

from __future__ import annotations

import re
from typing import Any

import pytest
from litestar.routes import HTTPRoute

from kiln.api._asgi import decode_path

_PARAM = re.compile(r"\{(\w+):(\w+)\}")


# --- decode_path ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        (b"/api/v4/projects/group%2Fproject", "/api/v4/projects/group%2Fproject"),
        (b"/api/v4/projects/group%2fproject", "/api/v4/projects/group%2fproject"),
        (b"/api/v4/labels/Label%3Athat%20requires%3Aencoding", "/api/v4/labels/Label:that requires:encoding"),
        (b"/api/v4/files/100%25done", "/api/v4/files/100%25done"),
        (b"/api/v4/files/caf%C3%A9.md", "/api/v4/files/café.md"),
        (b"/api/v4/files/a%zz", "/api/v4/files/a%zz"),
        (b"/api/v4/users/r%6F%6Ft", "/api/v4/users/root"),
        (b"/api/v4/branches/my.branch.name", "/api/v4/branches/my.branch.name"),
        (b"/api/v4/x/a+b", "/api/v4/x/a+b"),
    ],
)
def test_decode_path_keeps_slash_and_percent_escaped(raw, decoded):
    assert decode_path(raw) == decoded


@pytest.mark.parametrize("raw", [b"/api/v4/users/%FF", b"/api/v4/users/%C3", b"/api/v4/users/\xff"])
def test_decode_path_refuses_invalid_utf8(raw):
    assert decode_path(raw) is None


# --- end to end -------------------------------------------------------------------------------


def test_encoded_slash_stays_one_segment(api):
    # Routed to /users/:id/status with id "a/b" (no such user), not to a four-segment path.
    r = api("root").get("/users/a%2Fb/status")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_encoded_slash_does_not_join_route_segments(api):
    r = api("root").get("/api%2Fv4/users")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_other_escapes_are_decoded(api):
    r = api("root").get("/users/r%6F%6Ft/status")
    assert r.status_code == 200, r.text
    assert r.json()["availability"] == "not_set"


def test_escaped_route_literal_is_decoded(api):
    r = api("root").get("/%75sers/1")
    assert (r.status_code, r.json()["username"]) == (200, "root")


@pytest.mark.parametrize("username", ["notes.md", "data.json", "first.last"])
def test_suffix_is_part_of_the_name(api, make, db, username):
    u = make.user(username=username)
    u.row.status_message = f"I am {username}"
    db.commit()
    r = api("root").get(f"/users/{username}/status")
    assert (r.status_code, r.json()["message"]) == (200, f"I am {username}")


def test_suffix_is_not_stripped_to_find_a_name(api):
    r = api("root").get("/users/root.json/status")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


@pytest.mark.parametrize("path", ["/version.json", "/user.json", "/users.json"])
def test_json_suffix_is_not_a_format(api, path):
    r = api("root").get(path)
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_numeric_id_with_suffix_is_no_route(api):
    r = api("root").get("/users/1.json")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("/users/%C2%B2", {"error": "404 Not Found"}),  # "²": a digit to str.isdigit, not to int()
        ("/projects/%C2%B2", {"message": "404 Project Not Found"}),
        ("/groups/%C2%B2", {"message": "404 Group Not Found"}),
        ("/projects/9223372036854775808", {"message": "404 Project Not Found"}),  # past BIGINT
        ("/groups/99999999999999999999", {"message": "404 Group Not Found"}),
    ],
)
def test_an_id_is_ascii_digits_within_bigint(api, path, answer):
    r = api("root").get(path)
    assert (r.status_code, r.json()) == (404, answer)


# --- HEAD -------------------------------------------------------------------------------------


def get_paths(app: Any) -> list[str]:
    """Every GET route of the app with its parameters filled in (ids of root and its token)."""
    values = {"int": "1", "str": "1", "path": "1"}
    named = {"filename": "avatar.png", "provider": "ldap"}
    paths = []
    for route in app.app.routes:
        if isinstance(route, HTTPRoute) and "GET" in route.methods:
            paths.append(_PARAM.sub(lambda m: named.get(m.group(1), values[m.group(2)]), route.path))
    return sorted(paths)


def test_the_walk_sees_the_routes(app):
    paths = get_paths(app)
    assert {
        "/api/v4/users",
        "/api/v4/users/1",
        "/api/v4/version",
        "/-/health",
        "/api/v4/openapi.json",
    } <= set(paths)


def test_head_answers_every_get_route(api, app):
    """Same status and headers as the GET, for every GET route, as root."""
    root = api("root")
    for path in get_paths(app):
        got = root.get(path)
        head = root.head(path)
        assert head.status_code == got.status_code, path
        assert head.content == b"", path
        # Content-Length may differ where a GET moves a timestamp (a token's last_used_at).
        assert _without_length(head.headers) == _without_length(got.headers), path


def _without_length(headers: Any) -> dict[str, str]:
    """Headers to compare between a GET and its HEAD: each answer has its own request id."""
    return {k.lower(): v for k, v in headers.items() if k.lower() not in ("content-length", "x-request-id")}


def test_head_on_a_list_carries_pagination_headers(api, make):
    make.user()
    r = api("root").head("/users?per_page=1")
    assert r.status_code == 200
    assert r.content == b""
    assert (r.headers["x-total"], r.headers["x-total-pages"], r.headers["x-next-page"]) == ("2", "2", "2")
    assert r.headers["content-type"] == "application/json"


def test_head_content_length_is_the_gets(api):
    got, head = api("root").get("/version"), api("root").head("/version")
    assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))
    assert head.content == b""


def test_head_needs_the_same_credentials(api):
    assert (api().head("/user").status_code, api().get("/user").status_code) == (401, 401)
