"""Sudo (spec part 1 "Authentication" 7 and "Errors"): an administrator's token with the
`sudo` scope acts as another user, named by id or case-insensitive username, in header or query."""

from __future__ import annotations

import pytest

from tests.bodies import HIGHER_PRIVILEGES
from tests.conftest import ROOT_PASSWORD

SUDO_SCOPE_MISSING = {"error": "insufficient_scope", "error_description": HIGHER_PRIVILEGES, "scope": "sudo"}


def sudo_admin(make, scopes=("api", "sudo")):
    return make.admin(scopes=list(scopes))


def test_sudo_header_with_user_id(api, make):
    admin = sudo_admin(make)
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()["id"], r.json()["username"]) == (200, target.id, target.username)


def test_sudo_header_with_username(api, make):
    admin = sudo_admin(make)
    target = make.user(username="alice")
    r = api(admin).get("/user", headers={"Sudo": "alice"})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_username_is_case_insensitive(api, make):
    admin = sudo_admin(make)
    target = make.user(username="Alice")
    r = api(admin).get("/user", headers={"Sudo": "aLiCe"})
    assert (r.status_code, r.json()["id"], r.json()["username"]) == (200, target.id, "Alice")


def test_sudo_query_with_user_id(api, make):
    admin = sudo_admin(make)
    target = make.user()
    r = api(admin).get("/user", params={"sudo": target.id})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_query_with_username(api, make):
    admin = sudo_admin(make)
    target = make.user(username="bob")
    r = api(admin).get("/user", params={"sudo": "BOB"})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_target_sees_no_admin_powers(api, make):
    admin = sudo_admin(make)
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": target.username})
    assert (r.status_code, r.json()["id"]) == (200, target.id)
    assert "is_admin" not in r.json()
    created = api(admin).post(
        "/users",
        headers={"Sudo": target.username},
        json={"email": "x@example.com", "username": "x", "name": "X", "password": "long-enough-password"},
    )
    assert (created.status_code, created.json()) == (403, {"message": "403 Forbidden"})


def test_sudo_writes_as_the_target(api, make):
    admin = sudo_admin(make)
    target = make.user()
    r = api(admin).put("/user/status", headers={"Sudo": str(target.id)}, json={"message": "on holiday"})
    assert r.status_code == 200
    mine = api(target).get("/user/status")
    assert mine.json()["message"] == "on holiday"
    assert api(admin).get("/user/status").json()["message"] in (None, "")


def test_sudo_by_root_token(api, make):
    target = make.user()
    r = api("root").get("/user", headers={"Sudo": target.username})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_by_non_admin_is_403(api, make):
    user = make.user(scopes=["api", "sudo"])
    target = make.user()
    r = api(user).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Must be admin to use sudo"})


def test_sudo_by_non_admin_to_unknown_user_is_still_403(api, make):
    user = make.user(scopes=["api", "sudo"])
    r = api(user).get("/user", params={"sudo": "nobody-here"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Must be admin to use sudo"})


def test_sudo_without_sudo_scope_is_403_insufficient_scope(api, make):
    admin = make.admin(scopes=["api"])
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (403, SUDO_SCOPE_MISSING)


def test_sudo_scope_alone_is_enough_under_sudo(api, make):
    admin = make.admin(scopes=["sudo"])
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_scope_alone_without_sudo_reaches_nothing(api, make):
    admin = make.admin(scopes=["sudo"])
    r = api(admin).get("/user")
    assert r.status_code == 403
    assert r.json()["error"] == "insufficient_scope"


def test_sudo_unknown_user_is_404(api, make):
    admin = sudo_admin(make)
    r = api(admin).get("/user", headers={"Sudo": "ghost-of-nobody"})
    assert (r.status_code, r.json()) == (
        404,
        {"message": "404 User with ID or username 'ghost-of-nobody' Not Found"},
    )


def test_sudo_unknown_user_id_is_404(api, make):
    admin = sudo_admin(make)
    r = api(admin).get("/user", params={"sudo": "999999"})
    assert (r.status_code, r.json()) == (404, {"message": "404 User with ID or username '999999' Not Found"})


def test_sudo_without_credentials_is_401(api, make):
    target = make.user()
    r = api().get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_sudo_without_credentials_on_anonymous_route_is_401(api, make):
    target = make.user()
    r = api().get("/version", params={"sudo": target.username})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_sudo_with_session_cookie_is_403(api, make, client):
    target = make.user()
    signed = client.post(
        "/users/sign_in",
        data={"user[login]": "root", "user[password]": ROOT_PASSWORD},
        follow_redirects=False,
    )
    assert signed.status_code == 302
    r = client.get("/api/v4/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (
        403,
        {
            "message": "403 Forbidden - Must be authenticated using an OAuth or personal access token to use sudo"
        },
    )


def test_sudo_with_oauth_token(api, make, client):
    target = make.user()
    issued = client.post(
        "/oauth/token",
        data={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD, "scope": "api sudo"},
    )
    assert issued.status_code == 200
    access = issued.json()["access_token"]
    r = api().get("/user", headers={"Authorization": f"Bearer {access}", "Sudo": target.username})
    assert (r.status_code, r.json()["id"]) == (200, target.id)


def test_sudo_with_oauth_token_without_sudo_scope_is_403(api, make, client):
    target = make.user()
    issued = client.post(
        "/oauth/token", data={"grant_type": "password", "username": "root", "password": ROOT_PASSWORD}
    )
    access = issued.json()["access_token"]
    r = api().get("/user", headers={"Authorization": f"Bearer {access}", "Sudo": target.username})
    assert (r.status_code, r.json()) == (403, SUDO_SCOPE_MISSING)


def test_sudo_with_expired_token_reports_expiry_first(api, make):
    from datetime import UTC, datetime, timedelta

    admin = make.admin()
    token = make.token(admin, scopes=["api", "sudo"], expires_at=datetime.now(UTC).date() - timedelta(days=1))
    r = api(token).get("/user", headers={"Sudo": "root"})
    assert r.status_code == 401
    assert r.json()["error"] == "invalid_token"


def test_sudo_by_blocked_admin_is_403_blocked(api, make):
    admin = make.admin(scopes=["api", "sudo"], state="blocked")
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})


def test_sudo_with_digits_names_an_id_not_a_username(api, make):
    """GitLab's UserFinder: digits are an id, even when a username is made of them."""
    admin = sudo_admin(make)
    make.user(username="12345")
    r = api(admin).get("/user", headers={"Sudo": "12345"})
    assert (r.status_code, r.json()) == (404, {"message": "404 User with ID or username '12345' Not Found"})


@pytest.mark.parametrize("ident", ["99999999999999999999", "9223372036854775808", "²"])
def test_sudo_with_an_impossible_id_is_404(api, make, ident):
    admin = sudo_admin(make)
    r = api(admin).get("/user", params={"sudo": ident})
    assert r.status_code == 404, r.text


def test_sudo_admin_mode_token_without_admin_mode_scope_is_not_admin(api, make, configure):
    configure(admin_mode=True)
    admin = make.admin(scopes=["api", "sudo"])
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Must be admin to use sudo"})


def test_sudo_admin_mode_token_with_admin_mode_scope(api, make, configure):
    configure(admin_mode=True)
    admin = make.admin(scopes=["api", "sudo", "admin_mode"])
    target = make.user()
    r = api(admin).get("/user", headers={"Sudo": str(target.id)})
    assert (r.status_code, r.json()["id"]) == (200, target.id)
