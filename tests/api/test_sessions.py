"""Web sign-in (spec part 1 "Authentication" 4): POST /users/sign_in sets the `_service_session`
cookie; the API accepts it for reads, and for writes only with the session's X-CSRF-Token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, text, update

from kiln.db import transaction
from kiln.models import User, WebSession
from kiln.services import instance_settings
from tests.conftest import ROOT_PASSWORD
from tests.statements import count

COOKIE = "_service_session"
UNAUTHORIZED = {"message": "401 Unauthorized"}


def sign_in(client, login: str = "root", password: str = ROOT_PASSWORD):
    return client.post(
        "/users/sign_in", data={"user[login]": login, "user[password]": password}, follow_redirects=False
    )


def status_body(message: str = "busy") -> dict[str, str]:
    return {"message": message}


def test_sign_in_with_username_sets_cookie_and_redirects(client):
    r = sign_in(client)
    assert r.status_code == 302
    assert r.headers["location"] == "http://kiln.test/"
    assert r.cookies.get(COOKIE)
    set_cookie = r.headers["set-cookie"].lower()
    assert f"{COOKIE}=" in set_cookie
    assert "httponly" in set_cookie
    assert "path=/" in set_cookie
    assert r.headers["x-csrf-token"]
    assert r.json()["csrf_token"] == r.headers["x-csrf-token"]


def test_sign_in_with_email(client, make):
    u = make.user()
    r = sign_in(client, u.email, u.password)
    assert r.status_code == 302
    me = client.get("/api/v4/user")
    assert (me.status_code, me.json()["id"]) == (200, u.id)


def test_sign_in_with_json_nested_fields(client):
    r = client.post(
        "/users/sign_in", json={"user": {"login": "root", "password": ROOT_PASSWORD}}, follow_redirects=False
    )
    assert r.status_code == 302
    assert client.get("/api/v4/user").json()["id"] == 1


def test_sign_in_wrong_password_is_401(client):
    r = sign_in(client, password="wrong-password")
    assert (r.status_code, r.json()) == (401, {"message": "Invalid login or password."})
    assert COOKIE not in r.cookies
    assert client.get("/api/v4/user").status_code == 401


def test_sign_in_unknown_user_is_401(client):
    r = sign_in(client, "nobody", "whatever-password")
    assert (r.status_code, r.json()) == (401, {"message": "Invalid login or password."})


def test_sign_in_blocked_user_is_401(client, make):
    u = make.user(state="blocked")
    r = sign_in(client, u.username, u.password)
    assert (r.status_code, r.json()) == (401, {"message": "Invalid login or password."})


def test_sign_in_without_fields_is_400(client):
    r = client.post("/users/sign_in", data={}, follow_redirects=False)
    assert (r.status_code, r.json()) == (400, {"error": "user[login] is missing, user[password] is missing"})


def test_session_cookie_reads_the_api(client):
    sign_in(client)
    r = client.get("/api/v4/user")
    assert (r.status_code, r.json()["username"]) == (200, "root")


def test_session_cookie_write_without_csrf_token_is_anonymous(client):
    sign_in(client)
    r = client.put("/api/v4/user/status", json=status_body())
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_session_cookie_write_with_wrong_csrf_token_is_anonymous(client):
    sign_in(client)
    r = client.put("/api/v4/user/status", json=status_body(), headers={"X-CSRF-Token": "forged"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_session_cookie_write_with_csrf_token(client):
    csrf = sign_in(client).headers["x-csrf-token"]
    r = client.put("/api/v4/user/status", json=status_body("signed in"), headers={"X-CSRF-Token": csrf})
    assert (r.status_code, r.json()["message"]) == (200, "signed in")


def test_session_cookie_admin_write_with_csrf_token(client):
    csrf = sign_in(client).headers["x-csrf-token"]
    r = client.post(
        "/api/v4/users",
        headers={"X-CSRF-Token": csrf},
        json={"email": "x@example.com", "username": "x", "name": "X", "password": "long-enough-password"},
    )
    assert (r.status_code, r.json()["username"]) == (201, "x")


def test_csrf_token_of_another_session_is_refused(client, make):
    other = make.user()
    foreign_csrf = sign_in(client, other.username, other.password).headers["x-csrf-token"]
    sign_in(client)
    r = client.put("/api/v4/user/status", json=status_body(), headers={"X-CSRF-Token": foreign_csrf})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_sign_out_ends_the_session(client, db):
    sign_in(client)
    cookie = client.cookies.get(COOKIE)
    assert client.get("/api/v4/user").status_code == 200
    r = client.delete("/users/sign_out", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "http://kiln.test/users/sign_in")
    assert client.get("/api/v4/user").status_code == 401
    # The server forgot the session too: replaying the old cookie is anonymous.
    client.cookies.set(COOKIE, cookie)
    replay = client.get("/api/v4/user")
    assert (replay.status_code, replay.json()) == (401, UNAUTHORIZED)
    assert db.execute(text("SELECT count(*) FROM web_sessions")).scalar() == 0


def test_sign_out_without_session_redirects_to_sign_in(client):
    r = client.delete("/users/sign_out", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "http://kiln.test/users/sign_in")


def test_unknown_session_cookie_is_anonymous(client, make):
    u = make.user()
    client.cookies.set(COOKIE, "kilnses-forged")
    assert client.get("/api/v4/user").status_code == 401
    listed = client.get("/api/v4/users", params={"username": u.username})
    assert (listed.status_code, [x["id"] for x in listed.json()]) == (200, [u.id])


def test_expired_session_is_anonymous(client, db):
    sign_in(client)
    with transaction(db):
        db.execute(update(WebSession).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    r = client.get("/api/v4/user")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_sign_in_of_a_banned_user_is_401_and_changes_nothing(client, make, api):
    u = make.user(state="banned")
    assert sign_in(client, u.username, u.password).status_code == 401
    assert api("root").get(f"/users/{u.id}").json()["state"] == "banned"


def test_session_of_blocked_user_is_anonymous(client, make, api):
    u = make.user()
    sign_in(client, u.username, u.password)
    assert client.get("/api/v4/user").json()["id"] == u.id
    assert api("root").post(f"/users/{u.id}/block").status_code == 201
    assert client.get("/api/v4/user").status_code == 401


def test_session_secret_is_stored_only_as_digest(client, db):
    sign_in(client)
    cookie = client.cookies.get(COOKIE)
    rows = db.execute(text("SELECT * FROM web_sessions")).all()
    assert len(rows) == 1
    assert all(cookie not in str(value) for value in rows[0])


def test_token_wins_over_session_cookie(client, make):
    u = make.user()
    sign_in(client)
    r = client.get("/api/v4/user", headers={"Private-Token": u.token})
    assert r.json()["id"] == u.id


def test_sign_in_updates_sign_in_times(client, make, api):
    u = make.user()
    before = api("root").get(f"/users/{u.id}").json()
    assert (before["current_sign_in_at"], before["last_sign_in_at"]) == (None, None)

    sign_in(client, u.username, u.password)
    first = api("root").get(f"/users/{u.id}").json()
    assert first["current_sign_in_at"] is not None
    assert first["last_sign_in_at"] is None
    signed_at = datetime.fromisoformat(first["current_sign_in_at"].replace("Z", "+00:00"))
    assert abs(datetime.now(UTC) - signed_at) < timedelta(minutes=1)

    sign_in(client, u.username, u.password)
    second = api("root").get(f"/users/{u.id}").json()
    assert second["last_sign_in_at"] == first["current_sign_in_at"]
    assert second["current_sign_in_at"] >= first["current_sign_in_at"]


def test_failed_sign_in_leaves_sign_in_times(client, make, api):
    u = make.user()
    sign_in(client, u.username, "wrong-password")
    view = api("root").get(f"/users/{u.id}").json()
    assert (view["current_sign_in_at"], view["last_sign_in_at"]) == (None, None)


def test_personal_access_token_self_with_session_is_400(client):
    csrf = sign_in(client).headers["x-csrf-token"]
    shown = client.get("/api/v4/personal_access_tokens/self")
    revoked = client.delete("/api/v4/personal_access_tokens/self", headers={"X-CSRF-Token": csrf})
    body = {"message": "400 Bad request - This endpoint requires token type to be a personal access token"}
    assert (shown.status_code, shown.json()) == (400, body)
    assert (revoked.status_code, revoked.json()) == (400, body)


def test_expired_password_needs_a_new_one(client, make):
    u = make.user(password_expires_at=datetime.now(UTC) - timedelta(days=1))
    refused = sign_in(client, u.username, u.password)
    assert (refused.status_code, refused.json()) == (
        403,
        {
            "message": "403 Forbidden - Your password expired. Sign in again with `new_password` to set a new one."
        },
    )
    assert COOKIE not in refused.cookies
    changed = client.post(
        "/users/sign_in",
        data={
            "user[login]": u.username,
            "user[password]": u.password,
            "user[new_password]": "brand-new-secret",
        },
        follow_redirects=False,
    )
    assert changed.status_code == 302
    assert client.get("/api/v4/user").json()["id"] == u.id
    assert sign_in(client, u.username, u.password).status_code == 401
    assert sign_in(client, u.username, "brand-new-secret").status_code == 302


def test_expired_password_new_one_too_short_is_400(client, make):
    u = make.user(password_expires_at=datetime.now(UTC) - timedelta(days=1))
    r = client.post(
        "/users/sign_in",
        data={"user[login]": u.username, "user[password]": u.password, "user[new_password]": "short"},
        follow_redirects=False,
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"new_password": ["is too short (minimum is 8 characters)"]}},
    )


# ---------------------------------------------------------------------------- instance settings


def test_password_sign_in_refused_when_disabled_for_web(client, db, make):
    u = make.user()
    instance_settings.update(db, {"password_authentication_enabled_for_web": False})
    r = sign_in(client, u.username, u.password)
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert COOKIE not in r.cookies
    assert db.execute(text("SELECT count(*) FROM web_sessions")).scalar() == 0
    # Unknown logins get the same answer: the refusal comes before the login is looked at.
    assert sign_in(client, "nobody", "whatever-password").status_code == 403


def test_password_sign_in_disabled_for_git_only_still_signs_in(client, db):
    instance_settings.update(db, {"password_authentication_enabled_for_git": False})
    assert sign_in(client).status_code == 302


def test_session_lasts_session_expire_delay_minutes(client, db):
    instance_settings.update(db, {"session_expire_delay": 90})
    before = datetime.now(UTC)
    r = sign_in(client)
    assert "max-age=5400" in r.headers["set-cookie"].lower()
    expires = db.scalars(select(WebSession.expires_at)).one()
    expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
    assert before + timedelta(minutes=89) < expires <= datetime.now(UTC) + timedelta(minutes=90)


def test_default_session_lasts_a_week(client):
    r = sign_in(client)
    assert f"max-age={7 * 24 * 3600}" in r.headers["set-cookie"].lower()


def test_session_past_its_delay_is_anonymous(client, db):
    instance_settings.update(db, {"session_expire_delay": 1})
    sign_in(client)
    with transaction(db):
        db.execute(update(WebSession).values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    assert client.get("/api/v4/user").status_code == 401


def test_sign_out_goes_to_after_sign_out_path(client, db):
    instance_settings.update(db, {"after_sign_out_path": "https://example.com/bye"})
    sign_in(client)
    r = client.delete("/users/sign_out", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "https://example.com/bye")
    assert client.get("/api/v4/user").status_code == 401


def test_after_sign_out_path_as_a_path_is_on_this_instance(client, db):
    instance_settings.update(db, {"after_sign_out_path": "/explore"})
    r = client.delete("/users/sign_out", follow_redirects=False)
    assert r.headers["location"] == "http://kiln.test/explore"


def test_web_root_sends_anonymous_visitors_to_sign_in(client):
    r = client.get("/", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "http://kiln.test/users/sign_in")


def test_web_root_sends_anonymous_visitors_to_home_page_url(client, db):
    instance_settings.update(db, {"home_page_url": "https://example.com/welcome"})
    r = client.get("/", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "https://example.com/welcome")


def test_home_page_url_naming_the_root_itself_is_ignored(client, db):
    instance_settings.update(db, {"home_page_url": "http://kiln.test/"})
    r = client.get("/", follow_redirects=False)
    assert r.headers["location"] == "http://kiln.test/users/sign_in"


def test_web_root_sends_signed_in_users_to_their_projects(client, db):
    instance_settings.update(db, {"home_page_url": "https://example.com/welcome"})
    sign_in(client)
    r = client.get("/", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (302, "http://kiln.test/api/v4/projects?membership=true")


def test_web_root_costs_one_statement_signed_in_or_not(client, runtime):
    assert count(runtime, lambda: client.get("/", follow_redirects=False), status=302) == 1
    sign_in(client)
    assert count(runtime, lambda: client.get("/", follow_redirects=False), status=302) == 1


def unconfirmed(db, user, age: timedelta = timedelta(0)) -> None:
    with transaction(db):
        db.execute(
            update(User)
            .where(User.id == user.id)
            .values(confirmed_at=None, created_at=datetime.now(UTC) - age)
        )


def test_hard_confirmation_refuses_an_unconfirmed_user(client, make, db):
    u = make.user()
    unconfirmed(db, u)
    instance_settings.update(db, {"email_confirmation_setting": "hard"})
    r = sign_in(client, u.username, u.password)
    assert (r.status_code, r.json()) == (
        401,
        {"message": "You have to confirm your email address before continuing."},
    )


def test_soft_confirmation_lets_an_unconfirmed_user_in_for_three_days(client, make, db):
    u = make.user()
    unconfirmed(db, u, timedelta(days=2))
    instance_settings.update(db, {"email_confirmation_setting": "soft"})
    assert sign_in(client, u.username, u.password).status_code == 302
    unconfirmed(db, u, timedelta(days=4))
    assert sign_in(client, u.username, u.password).status_code == 401


def test_without_confirmation_an_unconfirmed_user_signs_in(client, make, db):
    u = make.user()
    unconfirmed(db, u, timedelta(days=30))
    assert sign_in(client, u.username, u.password).status_code == 302
