"""What an operator sees: one JSON access-log line per request (logger kiln.access), the
request id on every answer, Prometheus metrics at /-/metrics, and no secret in any log."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from litestar import Litestar, get
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError
from sqlalchemy import event

from kiln import jobs, policy
from kiln.api._asgi import KilnASGI
from kiln.api._errors import HANDLERS
from kiln.api._observe import observe
from kiln.config import Settings
from kiln.db import transaction
from tests.conftest import EXTERNAL_URL, ROOT_PASSWORD

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def server_log(caplog) -> str:
    """Everything the server side logged, formatted, with tracebacks (the test client's own
    httpx lines, which name the URLs it requested, are not the server's)."""
    return "\n".join(
        f"{caplog.handler.format(r)} {r.args!r} {r.__dict__!r}"
        for r in caplog.records
        if not r.name.startswith(("httpx", "httpcore"))
    )


def access_lines(caplog) -> list[dict]:
    return [orjson.loads(r.getMessage()) for r in caplog.records if r.name == "kiln.access"]


@pytest.fixture
def logs(caplog):
    """Everything logged, at every level, from every logger (kiln, litestar, uvicorn, SQLAlchemy)."""
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="kiln")
    return caplog


def metrics(api) -> dict[tuple[str, tuple], float]:
    r = api().get("/-/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


# The access line


def test_one_access_line_per_request_with_its_fields(api, make, logs):
    u = make.user()
    r = api(u).get("/user")
    assert r.status_code == 200
    [line] = access_lines(logs)
    assert set(line) == {
        "time", "request_id", "method", "path", "route", "status", "duration_ms", "user_id",
        "statements", "db_ms", "bytes", "remote_ip",
    }  # fmt: skip
    assert TIME.fullmatch(line["time"])
    assert abs(datetime.fromisoformat(line["time"]) - datetime.now(UTC)) < timedelta(minutes=1)
    assert (line["method"], line["path"], line["route"], line["status"]) == (
        "GET",
        "/api/v4/user",
        "/api/v4/user",
        200,
    )
    assert line["user_id"] == u.id
    assert line["request_id"] == r.headers["x-request-id"]
    assert line["bytes"] == len(r.content)
    assert line["statements"] >= 1
    assert line["duration_ms"] >= line["db_ms"] >= 0


def test_access_line_names_the_route_template(api, make, logs):
    p = make.project()
    api("root").get(f"/projects/{p.id}")
    [line] = access_lines(logs)
    assert (line["path"], line["route"], line["user_id"]) == (
        f"/api/v4/projects/{p.id}",
        "/api/v4/projects/{id}",
        1,
    )


def test_access_line_of_an_anonymous_request_has_no_user(api, logs):
    api().get("/version")
    [line] = access_lines(logs)
    assert (line["user_id"], line["status"]) == (None, 200)


def test_access_line_of_a_refused_request(api, logs):
    r = api().get("/metadata")
    assert r.status_code == 401
    [line] = access_lines(logs)
    assert (line["status"], line["user_id"], line["bytes"]) == (401, None, len(r.content))


def test_access_line_of_no_route_is_unmatched(api, logs):
    api().get("/no/such/route")
    [line] = access_lines(logs)
    assert (line["status"], line["route"], line["path"]) == (404, "unmatched", "/api/v4/no/such/route")


def test_access_line_of_head_is_head_with_no_bytes(api, logs):
    r = api().head("/version")
    assert r.status_code == 200
    [line] = access_lines(logs)
    assert (line["method"], line["bytes"]) == ("HEAD", 0)


def test_access_line_keeps_the_path_as_sent(api, make, logs):
    p = make.project()
    assert api("root").get(f"/projects/root%2F{p.path}").status_code == 200
    [line] = access_lines(logs)
    assert line["path"] == f"/api/v4/projects/root%2F{p.path}"


def test_access_line_hides_an_upload_secret(client, logs):
    """An upload's URL holds its secret, the only thing that guards the file."""
    secret = "0123456789abcdef0123456789abcdef"
    client.get(f"/group/project/uploads/{secret}/notes.txt")
    paths = [line["path"] for line in access_lines(logs)]
    assert "/group/project/uploads/[FILTERED]/notes.txt" in paths
    assert secret not in server_log(logs)


def test_access_line_keeps_ordinary_query_parameters(api, logs):
    api("root").get("/users?per_page=2&username=root")
    [line] = access_lines(logs)
    assert line["path"] == "/api/v4/users?per_page=2&username=root"


def test_early_refusals_are_logged_too(api, logs):
    r = api("root").post("/users", content=b"x", headers={"Content-Length": "nope"})
    assert r.status_code == 400
    [line] = access_lines(logs)
    assert (line["status"], line["route"]) == (400, "unmatched")
    assert line["request_id"] == r.headers["x-request-id"]


def test_statement_count_is_what_ran(api, make, runtime, logs):
    u = make.user()
    p = make.project(owner=u)
    ran = []

    def count(*_args):
        ran.append(1)

    event.listen(runtime.engine, "before_cursor_execute", count)
    try:
        assert api(u).get(f"/projects/{p.id}").status_code == 200
    finally:
        event.remove(runtime.engine, "before_cursor_execute", count)
    [line] = access_lines(logs)
    assert line["statements"] == len(ran) > 0


# The request id


def test_request_id_is_generated_when_absent(api):
    first = api().get("/version").headers["x-request-id"]
    second = api().get("/version").headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert uuid.UUID(first).version == 4
    assert first != second


def test_request_id_sent_is_returned_and_logged(api, logs):
    r = api().get("/version", headers={"X-Request-Id": "edge-1234/abc"})
    assert r.headers["x-request-id"] == "edge-1234/abc"
    assert access_lines(logs)[0]["request_id"] == "edge-1234/abc"


@pytest.mark.parametrize("sent", ["x" * 129, "has space", "tab\there", ""])
def test_insane_request_id_is_replaced(api, sent):
    r = api().get("/version", headers={"X-Request-Id": sent})
    assert re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])


def test_request_id_is_on_every_answer(api):
    for r in (api().get("/metadata"), api().get("/nothing/here"), api().get("/-/health")):
        assert r.headers["x-request-id"]


# No secret in any log


def test_no_token_or_password_is_ever_logged(api, make, client, logs):
    u = make.user(password="user-password-secret-1")
    oauth = client.post(
        "/oauth/token", data={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    assert oauth.status_code == 200
    bearer = oauth.json()["access_token"]
    refresh = oauth.json()["refresh_token"]
    wrong = "wrong-" + u.password
    secrets = [
        u.token,
        u.password,
        wrong,
        ROOT_PASSWORD,
        bearer,
        refresh,
        "job-token-secret-9",
        "new-user-pass-secret-7",
    ]

    assert api(u).get("/user").status_code == 200  # Private-Token header
    assert api().get(f"/user?private_token={u.token}").status_code == 200
    assert api().get(f"/user?access_token={bearer}").status_code == 200
    assert api().get("/user?job_token=job-token-secret-9").status_code == 401
    assert api().get(f"/user?PRIVATE%5FTOKEN={u.token}&page=1").status_code in (200, 401)
    client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": refresh})
    client.post(f"/oauth/token?grant_type=password&username=root&password={ROOT_PASSWORD}")
    sign_in = client.post(
        "/users/sign_in",
        data={"user[login]": u.username, "user[password]": u.password},
        follow_redirects=False,
    )
    assert sign_in.status_code == 302
    client.post("/users/sign_in", data={"user[login]": u.username, "user[password]": wrong})
    created = api("root").post(
        "/users",
        json={
            "username": "newbie",
            "email": "newbie@example.com",
            "name": "N",
            "password": "new-user-pass-secret-7",
        },
    )
    assert created.status_code == 201

    logged = server_log(logs)
    assert len(access_lines(logs)) >= 10
    for secret in secrets:
        assert secret not in logged, secret
    paths = [line["path"] for line in access_lines(logs)]
    assert "/api/v4/user?private_token=[FILTERED]" in paths
    assert "/api/v4/user?access_token=[FILTERED]" in paths
    assert "/api/v4/user?job_token=[FILTERED]" in paths
    assert "/api/v4/user?PRIVATE%5FTOKEN=[FILTERED]&page=1" in paths
    assert "/oauth/token?grant_type=password&username=root&password=[FILTERED]" in paths


@get("/boom", sync_to_thread=False)
def _boom() -> None:
    raise RuntimeError("the handler failed")


def test_an_unhandled_error_is_logged_without_the_query_secrets_and_with_the_request_id(runtime, db, logs):
    app = observe(
        KilnASGI(Litestar([_boom], exception_handlers=HANDLERS, logging_config=None), 1024), runtime
    )
    with TestClient(app, base_url=EXTERNAL_URL) as c:
        r = c.get("/boom?private_token=query-secret-31&password=pw-secret-32")
    assert r.status_code == 500
    errors = [rec for rec in logs.records if rec.levelno >= logging.ERROR]
    assert errors
    assert all(rec.request_id == r.headers["x-request-id"] for rec in errors)
    assert "query-secret-31" not in server_log(logs)
    assert "pw-secret-32" not in server_log(logs)
    [line] = access_lines(logs)
    assert (line["status"], line["path"]) == (500, "/boom?private_token=[FILTERED]&password=[FILTERED]")


# Metrics


def test_metrics_parse_as_prometheus_text(api):
    names = {name for name, _ in metrics(api)}
    assert {
        "kiln_http_requests_total",
        "kiln_http_request_duration_seconds_bucket",
        "kiln_db_statement_duration_seconds_count",
        "kiln_jobs_queued",
        "kiln_jobs_due",
        "kiln_jobs_running",
        "kiln_jobs_oldest_due_age_seconds",
    } <= names


def test_request_counter_and_latency_move_after_a_request(api):
    key = ("kiln_http_requests_total", (("method", "GET"), ("route", "/api/v4/user"), ("status", "200")))
    latency = ("kiln_http_request_duration_seconds_count", (("method", "GET"), ("route", "/api/v4/user")))
    before = metrics(api)
    assert api("root").get("/user").status_code == 200
    after = metrics(api)
    assert after[key] == before.get(key, 0) + 1
    assert after[latency] == before.get(latency, 0) + 1


def test_statement_metrics_move_with_requests(api):
    key = ("kiln_db_statement_duration_seconds_count", (("origin", "request"),))
    by_route = ("kiln_http_db_statements_total", (("route", "/api/v4/user"),))
    before = metrics(api)
    api("root").get("/user")
    after = metrics(api)
    assert after[key] > before[key]
    assert after[by_route] > before.get(by_route, 0)


def test_job_queue_depth_and_age(api, db):
    assert metrics(api)[("kiln_jobs_queued", ())] == 0
    with transaction(db):
        jobs.enqueue(db, "purge", {}, run_at=datetime.now(UTC) - timedelta(minutes=5))
        jobs.enqueue(db, "purge", {}, run_at=datetime.now(UTC) + timedelta(hours=1))
    seen = metrics(api)
    assert (seen[("kiln_jobs_queued", ())], seen[("kiln_jobs_due", ())], seen[("kiln_jobs_running", ())]) == (
        2,
        1,
        0,
    )
    assert 300 <= seen[("kiln_jobs_oldest_due_age_seconds", ())] < 400


def test_git_process_time_is_measured(api):
    r = api("root").post("/projects", json={"name": "observed", "initialize_with_readme": True})
    assert r.status_code == 201
    key = ("kiln_git_process_duration_seconds_count", (("command", "log"),))
    before = metrics(api).get(key, 0)
    commits = api("root").get(f"/projects/{r.json()['id']}/repository/commits?path=README.md")
    assert commits.status_code == 200
    assert metrics(api)[key] > before


def test_metrics_answer_only_the_monitoring_allowlist(api, configure):
    assert api().get("/-/metrics").status_code == 200  # the tests' client is 127.0.0.1
    configure(monitoring_whitelist="10.0.0.0/8, 192.168.1.7")
    r = api().get("/-/metrics")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})
    configure(monitoring_whitelist="10.0.0.0/8,127.0.0.1")
    assert api().get("/-/metrics").status_code == 200


def test_the_monitoring_allowlist_is_checked_when_kiln_starts():
    with pytest.raises(ValidationError):
        Settings(monitoring_whitelist="127.0.0.0/8,not-a-network")


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # IPv4 on a dual-stack socket
        (None, True),  # a Unix socket: this machine
        ("10.1.2.3", False),
        ("2001:db8::1", False),
        ("testclient", False),  # no address at all
    ],
)
def test_the_default_monitoring_allowlist_is_this_machine(address, allowed):
    assert policy.may_scrape(address, Settings().monitoring_networks) is allowed
