"""Version, metadata, health probes and the OpenAPI document."""

from __future__ import annotations

import re


def test_version_reports_a_gitlab_17_or_later_version(api):
    r = api("root").get("/version")
    assert r.status_code == 200
    body = r.json()
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", body["version"])
    assert match is not None, body["version"]
    assert int(match.group(1)) >= 17
    assert isinstance(body["revision"], str)
    assert body["revision"]
    assert body["kas"] == {
        "enabled": False,
        "externalUrl": None,
        "externalK8sProxyUrl": None,
        "version": None,
    }
    assert body["enterprise"] is False
    assert r.headers["content-type"] == "application/json"


def test_version_is_answered_anonymously(api):
    r = api().get("/version")
    assert (r.status_code, r.json()["version"]) == (200, api("root").get("/version").json()["version"])


def test_version_accepts_read_user_scope(api, make):
    u = make.user(scopes=["read_user"])
    assert api(u).get("/version").status_code == 200


def test_metadata_is_the_version_document(api):
    assert api("root").get("/metadata").json() == api("root").get("/version").json()


def test_metadata_needs_authentication(api):
    r = api().get("/metadata")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_health_is_plain_text(api):
    r = api().get("/-/health")
    assert (r.status_code, r.text) == (200, "kiln OK")
    assert r.headers["content-type"].startswith("text/plain")


def test_liveness(api):
    r = api().get("/-/liveness")
    assert (r.status_code, r.json()) == (200, {"status": "ok"})


def test_readiness_checks_the_database(api):
    r = api().get("/-/readiness")
    assert (r.status_code, r.json()) == (
        200,
        {"status": "ok", "master_check": [{"status": "ok"}], "db_check": [{"status": "ok"}]},
    )


def test_readiness_fails_while_not_ready(api, runtime):
    runtime.ready = False
    try:
        r = api().get("/-/readiness")
    finally:
        runtime.ready = True
    assert (r.status_code, r.json()["status"], r.json()["master_check"]) == (
        503,
        "failed",
        [{"status": "failed"}],
    )


def test_probes_ignore_credentials(api):
    assert api("garbage-token").get("/-/liveness").status_code == 200


def test_openapi_document(api):
    r = api().get("/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"] == [{"url": "http://kiln.test"}]
    users = doc["paths"]["/api/v4/users"]
    assert set(users) == {"get", "post"}
    query = {p["name"] for p in users["get"]["parameters"]}
    assert {"page", "per_page", "pagination", "order_by", "sort", "username", "custom_attributes"} <= query
    assert users["get"]["x-auth"] == "optional"
    body = users["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["email", "name", "username"]
    assert doc["paths"]["/api/v4/users/{id}"]["get"]["parameters"][0] == {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "string"},
    }
