"""OAuth2 (spec part 1 "Authentication" 2): the password and refresh grants, revocation,
token info, and OAuth tokens on the API (query `access_token` and `Authorization: Bearer`)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import text, update

from kiln.auth.tokens import digest
from kiln.db import transaction
from kiln.models import OAuthAccessToken
from kiln.services import instance_settings
from tests.bodies import EXPIRED, HIGHER_PRIVILEGES, REVOKED
from tests.conftest import ROOT_PASSWORD

INVALID_GRANT = {
    "error": "invalid_grant",
    "error_description": (
        "The provided authorization grant is invalid, expired, revoked, does not match the "
        "redirection URI used in the authorization request, or was issued to another client."
    ),
}
INVALID_SCOPE = {
    "error": "invalid_scope",
    "error_description": "The requested scope is invalid, unknown, or malformed.",
}


def password_grant(client, username: str = "root", password: str = ROOT_PASSWORD, **extra):
    return client.post(
        "/oauth/token", data={"grant_type": "password", "username": username, "password": password, **extra}
    )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def age_token(db, access: str, seconds: int) -> None:
    with transaction(db):
        db.execute(
            update(OAuthAccessToken)
            .where(OAuthAccessToken.digest == digest(access))
            .values(created_at=datetime.now(UTC) - timedelta(seconds=seconds))
        )


# POST /oauth/token, password grant


def test_password_grant_with_form_body(client):
    before = int(time.time())
    r = password_grant(client)
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["access_token", "token_type", "expires_in", "refresh_token", "scope", "created_at"]
    assert (body["token_type"], body["expires_in"], body["scope"]) == ("Bearer", 7200, "api")
    assert isinstance(body["access_token"], str)
    assert isinstance(body["refresh_token"], str)
    assert body["access_token"] != body["refresh_token"]
    assert before - 1 <= body["created_at"] <= int(time.time()) + 1
    assert r.headers["cache-control"] == "no-store"
    assert r.headers["pragma"] == "no-cache"
    assert r.headers["content-type"].startswith("application/json")


def test_password_grant_with_json_body(client, api):
    r = client.post(
        "/oauth/token", json={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    assert (r.status_code, r.json()["token_type"]) == (200, "Bearer")
    me = api().get("/user", headers=bearer(r.json()["access_token"]))
    assert (me.status_code, me.json()["id"]) == (200, 1)


def test_password_grant_with_query_parameters(client):
    r = client.post(
        "/oauth/token", params={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    assert (r.status_code, r.json()["scope"]) == (200, "api")


def test_password_grant_by_email(client, make, api):
    u = make.user()
    r = password_grant(client, u.email.upper(), u.password)
    assert r.status_code == 200
    assert api().get("/user", headers=bearer(r.json()["access_token"])).json()["id"] == u.id


def test_password_grant_username_is_case_insensitive(client, make):
    u = make.user(username="Carol")
    r = password_grant(client, "carol", u.password)
    assert r.status_code == 200


def test_password_grant_with_requested_scopes(client):
    r = password_grant(client, scope="read_user read_api")
    assert (r.status_code, r.json()["scope"]) == (200, "read_user read_api")


def test_password_grant_wrong_password_is_400_invalid_grant(client):
    r = password_grant(client, password="wrong-password")
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)


def test_password_grant_unknown_user_is_400_invalid_grant(client):
    r = password_grant(client, username="nobody")
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)


def test_password_grant_blocked_user_is_400_invalid_grant(client, make):
    u = make.user(state="blocked")
    r = password_grant(client, u.username, u.password)
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)


def test_password_grant_is_refused_with_passwords_off_for_git(client, make, db):
    u = make.user()
    instance_settings.update(db, {"password_authentication_enabled_for_git": False})
    r = password_grant(client, u.username, u.password)
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)
    instance_settings.update(db, {"password_authentication_enabled_for_git": True})
    assert password_grant(client, u.username, u.password).status_code == 200


def test_password_grant_bad_scope_is_400_invalid_scope(client):
    r = password_grant(client, scope="api everything")
    assert (r.status_code, r.json()) == (400, INVALID_SCOPE)


def test_unsupported_grant_type_is_400(client):
    r = client.post("/oauth/token", data={"grant_type": "implicit"})
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": "unsupported_grant_type",
            "error_description": "The authorization grant type is not supported by the authorization server.",
        },
    )


def test_missing_grant_type_is_400_invalid_request(client):
    r = client.post("/oauth/token", data={"username": "root", "password": ROOT_PASSWORD})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "invalid_request", "error_description": "Missing required parameter: grant_type."},
    )


def test_password_grant_missing_password_is_400_invalid_request(client):
    r = client.post("/oauth/token", data={"grant_type": "password", "username": "root"})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "invalid_request", "error_description": "Missing required parameter: password."},
    )


def test_oauth_secrets_are_stored_only_as_digests(client, db):
    body = password_grant(client).json()
    rows = db.execute(text("SELECT * FROM oauth_access_tokens")).all()
    assert len(rows) == 1
    for value in rows[0]:
        assert body["access_token"] not in str(value)
        assert body["refresh_token"] not in str(value)


# Refresh grant


def test_refresh_grant_gives_a_new_pair(client, api):
    first = password_grant(client, scope="read_user").json()
    r = client.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
    )
    assert r.status_code == 200
    second = r.json()
    assert list(second) == [
        "access_token",
        "token_type",
        "expires_in",
        "refresh_token",
        "scope",
        "created_at",
    ]
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]
    assert second["scope"] == "read_user"
    me = api().get("/user", headers=bearer(second["access_token"]))
    assert (me.status_code, me.json()["id"]) == (200, 1)


def test_refresh_token_works_only_once(client):
    first = password_grant(client).json()
    data = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
    assert client.post("/oauth/token", data=data).status_code == 200
    again = client.post("/oauth/token", data=data)
    assert (again.status_code, again.json()) == (400, INVALID_GRANT)


def test_unknown_refresh_token_is_invalid_grant(client):
    r = client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": "nope"})
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)


def test_refresh_cannot_widen_scope(client):
    first = password_grant(client, scope="read_user").json()
    r = client.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "scope": "api"},
    )
    assert (r.status_code, r.json()) == (400, INVALID_SCOPE)


def test_refresh_for_blocked_user_is_invalid_grant(client, make, api):
    u = make.user()
    first = password_grant(client, u.username, u.password).json()
    assert api("root").post(f"/users/{u.id}/block").status_code == 201
    r = client.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"]}
    )
    assert (r.status_code, r.json()) == (400, INVALID_GRANT)


# OAuth tokens on the API


def test_access_token_as_bearer(client, api):
    access = password_grant(client).json()["access_token"]
    r = api().get("/user", headers=bearer(access))
    assert (r.status_code, r.json()["username"]) == (200, "root")


def test_access_token_as_query_parameter(client, api):
    access = password_grant(client).json()["access_token"]
    r = api().get("/user", params={"access_token": access})
    assert (r.status_code, r.json()["username"]) == (200, "root")


def test_oauth_read_user_scope_reads_but_does_not_write(client, api):
    access = password_grant(client, scope="read_user").json()["access_token"]
    me = api().get("/user", headers=bearer(access))
    assert (me.status_code, me.json()["id"]) == (200, 1)
    r = api().post(
        "/users",
        headers=bearer(access),
        json={"email": "x@example.com", "username": "x", "name": "X", "password": "long-enough-password"},
    )
    assert (r.status_code, r.json()) == (
        403,
        {"error": "insufficient_scope", "error_description": HIGHER_PRIVILEGES, "scope": "api read_api"},
    )


def test_oauth_api_scope_writes(client, api):
    access = password_grant(client).json()["access_token"]
    r = api().post(
        "/users",
        headers=bearer(access),
        json={"email": "x@example.com", "username": "x", "name": "X", "password": "long-enough-password"},
    )
    assert (r.status_code, r.json()["username"]) == (201, "x")


def test_expired_oauth_token_is_401(client, api, db):
    access = password_grant(client).json()["access_token"]
    age_token(db, access, 7201)
    r = api().get("/user", headers=bearer(access))
    assert (r.status_code, r.json()) == (401, EXPIRED)


def test_oauth_token_just_before_expiry_works(client, api, db):
    access = password_grant(client).json()["access_token"]
    age_token(db, access, 7100)
    assert api().get("/user", headers=bearer(access)).status_code == 200


def test_oauth_token_of_blocked_user_is_403(client, api, make):
    u = make.user()
    access = password_grant(client, u.username, u.password).json()["access_token"]
    assert api("root").post(f"/users/{u.id}/block").status_code == 201
    r = api().get("/user", headers=bearer(access))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})


def test_refreshed_away_access_token_is_refused(client, api):
    first = password_grant(client).json()
    client.post("/oauth/token", data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"]})
    r = api().get("/user", headers=bearer(first["access_token"]))
    assert (r.status_code, r.json()) == (401, REVOKED)


def test_oauth_token_does_not_count_as_private_token(client, api):
    access = password_grant(client).json()["access_token"]
    r = api().get("/user", headers={"Private-Token": access})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


# POST /oauth/revoke


def test_revoke_access_token(client, api):
    access = password_grant(client).json()["access_token"]
    r = client.post("/oauth/revoke", data={"token": access})
    assert (r.status_code, r.json()) == (200, {})
    refused = api().get("/user", headers=bearer(access))
    assert (refused.status_code, refused.json()) == (401, REVOKED)


def test_revoke_by_refresh_token_kills_the_pair(client, api):
    pair = password_grant(client).json()
    r = client.post(
        "/oauth/revoke", data={"token": pair["refresh_token"], "token_type_hint": "refresh_token"}
    )
    assert (r.status_code, r.json()) == (200, {})
    assert api().get("/user", headers=bearer(pair["access_token"])).status_code == 401
    again = client.post(
        "/oauth/token", data={"grant_type": "refresh_token", "refresh_token": pair["refresh_token"]}
    )
    assert (again.status_code, again.json()) == (400, INVALID_GRANT)


def test_revoke_unknown_token_is_200(client):
    r = client.post("/oauth/revoke", data={"token": "never-issued"})
    assert (r.status_code, r.json()) == (200, {})


def test_revoke_with_json_body(client, api):
    access = password_grant(client).json()["access_token"]
    assert client.post("/oauth/revoke", json={"token": access}).status_code == 200
    assert api().get("/user", headers=bearer(access)).status_code == 401


# GET /oauth/token/info


def test_token_info(client):
    issued = password_grant(client, scope="api read_user").json()
    r = client.get("/oauth/token/info", headers=bearer(issued["access_token"]))
    assert r.status_code == 200
    body = r.json()
    assert list(body) == [
        "resource_owner_id",
        "scope",
        "expires_in",
        "application",
        "created_at",
        "scopes",
        "expires_in_seconds",
    ]
    assert body["resource_owner_id"] == 1
    assert body["scope"] == body["scopes"] == ["api", "read_user"]
    assert 7190 <= body["expires_in"] <= 7200
    assert body["expires_in_seconds"] == body["expires_in"]
    assert body["application"] == {"uid": None}
    assert body["created_at"] == issued["created_at"]


def test_token_info_with_access_token_query(client):
    access = password_grant(client).json()["access_token"]
    r = client.get("/oauth/token/info", params={"access_token": access})
    assert (r.status_code, r.json()["resource_owner_id"]) == (200, 1)


def test_token_info_unknown_token_is_401(client):
    r = client.get("/oauth/token/info", headers=bearer("nope"))
    assert (r.status_code, r.json()) == (
        401,
        {"error": "invalid_token", "error_description": "The access token is invalid"},
    )


def test_token_info_without_token_is_401(client):
    r = client.get("/oauth/token/info")
    assert (r.status_code, r.json()) == (
        401,
        {"error": "invalid_token", "error_description": "The access token is invalid"},
    )


def test_token_info_personal_access_token_is_401(client, make):
    u = make.user()
    r = client.get("/oauth/token/info", headers=bearer(u.token))
    assert (r.status_code, r.json()["error"]) == (401, "invalid_token")


def test_token_info_revoked_token_is_401(client):
    access = password_grant(client).json()["access_token"]
    client.post("/oauth/revoke", data={"token": access})
    r = client.get("/oauth/token/info", headers=bearer(access))
    assert (r.status_code, r.json()) == (
        401,
        {"error": "invalid_token", "error_description": "The access token was revoked"},
    )


def test_token_info_expired_token_is_401(client, db):
    access = password_grant(client).json()["access_token"]
    age_token(db, access, 7300)
    r = client.get("/oauth/token/info", headers=bearer(access))
    assert (r.status_code, r.json()) == (
        401,
        {"error": "invalid_token", "error_description": "The access token expired"},
    )
