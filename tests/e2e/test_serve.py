"""The contract of the `kiln serve` process itself: first start and restarts, root's
credentials, health, and what only a real socket shows (HEAD framing, raw paths)."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import ROOT_PASSWORD, ROOT_TOKEN, Server, start_server

pytestmark = pytest.mark.e2e

ROOT = {"Private-Token": ROOT_TOKEN}
PASSWORD_LINE = re.compile(r"kiln: root credentials: root / ([^\s(]\S*)")


@pytest.fixture
def serve(tmp_path: Path, new_database_url: Callable[[], str | None]) -> Iterator[Callable[..., Server]]:
    """Start servers of this test's own on one data dir and one fresh database (so restarts
    see the same state); every one still running is stopped at the end."""
    database_url = new_database_url()
    started: list[Server] = []

    def start(**env: str | None) -> Server:
        server = start_server(tmp_path / "data", database_url, tmp_path / "logs", **env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def unset_password_server(
    tmp_path_factory: pytest.TempPathFactory, new_database_url: Callable[[], str | None]
) -> Iterator[Server]:
    """A first start with no KILN_ROOT_PASSWORD; shared by the tests that only read from it."""
    base = tmp_path_factory.mktemp("generated")
    server = start_server(base / "data", new_database_url(), base, KILN_ROOT_PASSWORD=None)
    yield server
    server.stop()


def stopped_cleanly(server: Server) -> bool:
    """uvicorn re-raises the SIGTERM it handled once shutdown is done, so a clean stop ends
    by that signal (or 0), with no traceback logged."""
    return server.process.returncode in (0, -signal.SIGTERM) and "Traceback" not in server.output()


def sign_in(url: str, login: str, password: str) -> httpx.Response:
    return httpx.post(
        f"{url}/users/sign_in",
        data={"user[login]": login, "user[password]": password},
        follow_redirects=False,
    )


def raw_exchange(port: int, request: bytes) -> tuple[str, dict[str, str], bytes]:
    """Send bytes, read until the server closes: status line, headers, and exactly the
    bytes that followed the header block."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return status, headers, body


def get_raw_path(server: Server, raw_path: str, **headers: str) -> tuple[int, Any]:
    """GET a path exactly as written: http.client sends it without re-encoding."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        conn.request("GET", raw_path, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


# --- first start and restarts ----------------------------------------------------------


def test_first_start_without_root_password_prints_and_keeps_a_generated_one(unset_password_server):
    server = unset_password_server

    printed = PASSWORD_LINE.findall(server.output())
    saved = server.data_dir / "initial_root_password"
    assert len(printed) == 1
    assert saved.read_text() == printed[0] + "\n"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert len(printed[0]) >= 12
    assert printed[0] not in server.stdout.read_text()


def test_generated_root_password_signs_in(unset_password_server):
    server = unset_password_server
    password = (server.data_dir / "initial_root_password").read_text().strip()

    r = sign_in(server.url, "root", password)

    assert r.status_code == 302
    assert r.headers["location"] == f"{server.url}/"
    cookie = r.cookies.get("_service_session")
    assert cookie
    me = httpx.get(f"{server.url}/api/v4/user", cookies={"_service_session": cookie})
    assert (me.status_code, me.json()["id"], me.json()["username"]) == (200, 1, "root")


def test_wrong_root_password_does_not_sign_in(unset_password_server):
    r = sign_in(unset_password_server.url, "root", "certainly-not-it")

    assert r.status_code == 401
    assert "_service_session" not in r.cookies


def test_given_root_password_is_not_printed_or_saved(kiln_server):
    assert PASSWORD_LINE.findall(kiln_server.output()) == []
    assert "kiln: root credentials: root / (KILN_ROOT_PASSWORD)" in kiln_server.output()
    assert not (kiln_server.data_dir / "initial_root_password").exists()
    assert sign_in(kiln_server.url, "root", ROOT_PASSWORD).status_code == 302


def test_root_token_authenticates_as_root(base_url):
    r = httpx.get(f"{base_url}/api/v4/user", headers=ROOT)

    assert r.status_code == 200
    assert (r.json()["id"], r.json()["username"], r.json()["is_admin"]) == (1, "root", True)


def test_sigterm_then_restart_keeps_users_and_creates_root_once(serve):
    first = serve(KILN_ROOT_PASSWORD=None)
    password = (first.data_dir / "initial_root_password").read_text().strip()
    created = httpx.post(
        f"{first.url}/api/v4/users",
        headers=ROOT,
        json={
            "username": "survivor",
            "email": "survivor@example.com",
            "name": "Survivor",
            "password": "x" * 12,
        },
    )
    assert created.status_code == 201

    first.stop()  # SIGTERM
    assert stopped_cleanly(first)
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{first.url}/-/liveness", timeout=2)

    second = serve(KILN_ROOT_PASSWORD=None)

    users = httpx.get(f"{second.url}/api/v4/users", headers=ROOT, params={"per_page": 100})
    assert users.status_code == 200
    assert sorted((u["id"], u["username"]) for u in users.json()) == [
        (1, "root"),
        (created.json()["id"], "survivor"),
    ]
    assert PASSWORD_LINE.findall(second.output()) == [password]
    assert (second.data_dir / "initial_root_password").read_text().strip() == password
    assert sign_in(second.url, "root", password).status_code == 302
    second.stop()
    assert stopped_cleanly(second)


# --- health ----------------------------------------------------------------------------


def test_readiness_is_200_when_serving(base_url):
    r = httpx.get(f"{base_url}/-/readiness")

    assert r.status_code == 200
    assert r.json() == {
        "status": "ok",
        "master_check": [{"status": "ok"}],
        "db_check": [{"status": "ok"}],
    }


def test_version_answers_anonymously(base_url):
    r = httpx.get(f"{base_url}/api/v4/version")

    assert r.status_code == 200
    assert r.json()["revision"].startswith("kiln-")


# --- what a real socket shows ----------------------------------------------------------


def test_head_returns_the_get_headers_and_no_body(kiln_server):
    port = kiln_server.port
    request = "{} /api/v4/user HTTP/1.1\r\nHost: 127.0.0.1\r\nPrivate-Token: {}\r\nConnection: close\r\n\r\n"

    get_status, get_headers, get_body = raw_exchange(port, request.format("GET", ROOT_TOKEN).encode())
    status, headers, body = raw_exchange(port, request.format("HEAD", ROOT_TOKEN).encode())

    assert get_status == status == "HTTP/1.1 200 OK"
    assert body == b""
    assert headers["content-type"].startswith("application/json")
    assert int(headers["content-length"]) == len(get_body) > 0
    assert get_headers["content-length"] == headers["content-length"]


def test_head_of_a_missing_auth_is_401_without_body(kiln_server):
    request = b"HEAD /api/v4/user HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"

    status, headers, body = raw_exchange(kiln_server.port, request)

    assert status == "HTTP/1.1 401 Unauthorized"
    assert body == b""
    assert int(headers["content-length"]) == len(b'{"message":"401 Unauthorized"}')


def test_escaped_slash_stays_inside_one_path_segment(kiln_server):
    status, body = get_raw_path(kiln_server, "/api/v4/users/a%2Fb/status", **ROOT)

    assert (status, body) == (404, {"message": "404 User Not Found"})


def test_other_escapes_in_the_path_are_decoded(kiln_server):
    status, body = get_raw_path(kiln_server, "/api/v4/users/%72%6Fot/status", **ROOT)

    assert status == 200
    assert set(body) >= {"emoji", "message", "availability"}


def test_escaped_percent_is_not_decoded_twice(kiln_server):
    # %252F is "%2F" literally, never "/": one segment that names no user.
    status, body = get_raw_path(kiln_server, "/api/v4/users/root%252Fx/status", **ROOT)

    assert (status, body) == (404, {"message": "404 User Not Found"})
