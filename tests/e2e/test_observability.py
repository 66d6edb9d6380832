"""What an operator sees of a real `kiln serve`: JSON access lines on stderr, and
/-/metrics, right across several HTTP processes."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import ROOT_TOKEN, START_TIMEOUT, Server, free_port, kiln_command, server_env

pytestmark = pytest.mark.e2e


def access_lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"time":')]


def counter(base_url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{base_url}/-/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_access_lines_go_to_stderr_as_json_and_metrics_answer(kiln_server, base_url):
    request_id = f"e2e-{uuid.uuid4().hex}"
    r = httpx.get(
        f"{base_url}/api/v4/user?private_token={ROOT_TOKEN}",
        headers={"X-Request-Id": request_id},
        timeout=10,
    )
    assert (r.status_code, r.headers["x-request-id"]) == (200, request_id)
    deadline = time.monotonic() + 5
    while not (
        mine := [line for line in access_lines(kiln_server.output()) if line["request_id"] == request_id]
    ):
        assert time.monotonic() < deadline, kiln_server.output()[-2000:]
        time.sleep(0.05)
    [line] = mine
    assert (line["method"], line["path"], line["route"], line["status"], line["user_id"]) == (
        "GET",
        "/api/v4/user?private_token=[FILTERED]",
        "/api/v4/user",
        200,
        1,
    )
    assert ROOT_TOKEN not in kiln_server.output()
    assert counter(base_url, "kiln_http_requests_total", route="/api/v4/user", status="200") >= 1


def test_no_secret_reaches_the_server_output(kiln_server, base_url):
    """Tokens in headers and query strings, passwords in OAuth, sign-in and user creation:
    none is in what serve writes (its own logs, uvicorn's, the access lines)."""
    password = f"pw-{uuid.uuid4().hex}"
    username = f"obs-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=base_url, timeout=10) as c:
        created = c.post(
            "/api/v4/users",
            headers={"Private-Token": ROOT_TOKEN},
            json={
                "username": username,
                "email": f"{username}@example.com",
                "name": "O",
                "password": password,
            },
        )
        assert created.status_code == 201
        grant = c.post(
            "/oauth/token", data={"grant_type": "password", "username": username, "password": password}
        )
        assert grant.status_code == 200
        bearer = grant.json()["access_token"]
        assert c.get(f"/api/v4/user?access_token={bearer}").status_code == 200
        assert c.get("/api/v4/user?job_token=job-secret-e2e-1").status_code == 401
        c.post(f"/oauth/token?grant_type=password&username={username}&password={password}")
        c.post("/users/sign_in", data={"user[login]": username, "user[password]": password})
        c.post("/users/sign_in", data={"user[login]": username, "user[password]": "x" + password})
    time.sleep(0.5)  # the last access lines reach the file
    output = kiln_server.output()
    for secret in (ROOT_TOKEN, password, bearer, "job-secret-e2e-1"):
        assert secret not in output
    assert f"/oauth/token?grant_type=password&username={username}&password=[FILTERED]" in output


@pytest.fixture
def two_processes(tmp_path, new_database_url) -> Iterator[Server]:
    port = free_port()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = server_env(data_dir, new_database_url(), port)
    log, out = tmp_path / "serve.stderr", tmp_path / "serve.stdout"
    with log.open("wb") as err, out.open("wb") as stdout:
        process = subprocess.Popen(
            [*kiln_command(), "serve", "--host", "127.0.0.1", "--port", str(port), "--processes", "2"],
            env=env,
            stdout=stdout,
            stderr=err,
        )
    server = Server(f"http://127.0.0.1:{port}", port, data_dir, log, out, process, env)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert process.poll() is None, server.output()
        assert time.monotonic() < deadline, server.output()
        try:
            if httpx.get(f"{server.url}/-/liveness", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    yield server
    server.stop()


def test_metrics_add_up_across_http_processes(two_processes):
    url = two_processes.url
    before = counter(url, "kiln_http_requests_total", route="/-/health", status="200")
    with httpx.Client(base_url=url, timeout=10) as client:
        for _ in range(40):
            # A new connection each time, so that both processes take some.
            assert client.get("/-/health", headers={"Connection": "close"}).status_code == 200
    # Whichever process answers the scrape reports what both counted.
    seen = {counter(url, "kiln_http_requests_total", route="/-/health", status="200") for _ in range(6)}
    assert seen == {before + 40}
    lines = [line for line in access_lines(two_processes.output()) if line["route"] == "/-/health"]
    assert len(lines) == 40
