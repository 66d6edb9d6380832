"""Authentication (spec part 1 "Authentication" and "Errors"): where tokens are read, what
unknown, expired and revoked tokens answer, what each scope reaches, admin mode, blocked users."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from sqlalchemy import select, text, update

from kiln.db import transaction
from kiln.models import PersonalAccessToken
from tests.bodies import EXPIRED, HIGHER_PRIVILEGES, REVOKED, UNAUTHORIZED


def insufficient(scope: str) -> dict[str, str]:
    return {"error": "insufficient_scope", "error_description": HIGHER_PRIVILEGES, "scope": scope}


def new_user_fields(n: int = 1) -> dict[str, str]:
    return {
        "email": f"made{n}@example.com",
        "username": f"made{n}",
        "name": f"Made {n}",
        "password": "long-enough-password",
    }


def today() -> date:
    return datetime.now(UTC).date()


# Where the personal access token is read


def test_personal_access_token_in_private_token_header(api, make):
    u = make.user()
    r = api().get("/user", headers={"Private-Token": u.token})
    assert (r.status_code, r.json()["id"], r.json()["username"]) == (200, u.id, u.username)


def test_personal_access_token_in_legacy_uppercase_header(api, make):
    u = make.user()
    r = api().get("/user", headers={"PRIVATE-TOKEN": u.token})
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_personal_access_token_in_private_token_query(api, make):
    u = make.user()
    r = api().get("/user", params={"private_token": u.token})
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_personal_access_token_as_bearer(api, make):
    u = make.user()
    r = api().get("/user", headers={"Authorization": f"Bearer {u.token}"})
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_personal_access_token_as_access_token_query(api, make):
    u = make.user()
    r = api().get("/user", params={"access_token": u.token})
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_private_token_header_wins_over_bearer(api, make):
    u = make.user()
    other = make.user()
    r = api().get("/user", headers={"Private-Token": u.token, "Authorization": f"Bearer {other.token}"})
    assert (r.status_code, r.json()["id"]) == (200, u.id)


# No credentials, unknown credentials


def test_no_credentials_on_authenticated_route_is_401(api, make):
    r = api().get("/user")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_token_header_is_401_message(api, make):
    r = api("not-a-real-token").get("/user")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_token_is_401_even_on_anonymous_version(api):
    assert api().get("/version").status_code == 200
    r = api("not-a-real-token").get("/version")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_token_is_401_even_on_anonymous_user_lookup(api, make):
    u = make.user()
    anonymous = api().get("/users", params={"username": u.username})
    assert (anonymous.status_code, [x["id"] for x in anonymous.json()]) == (200, [u.id])
    r = api("not-a-real-token").get("/users", params={"username": u.username})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_token_in_query_is_401(api):
    r = api().get("/version", params={"private_token": "nope"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_bearer_is_401_message(api):
    r = api().get("/version", headers={"Authorization": "Bearer nope"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_unknown_access_token_query_is_401_message(api):
    r = api().get("/version", params={"access_token": "nope"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


# Expired and revoked


def test_expired_token_is_401_invalid_token(api, make):
    u = make.user()
    token = make.token(u, expires_at=today() - timedelta(days=1))
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, EXPIRED)


def test_token_expiring_today_is_already_expired(api, make):
    u = make.user()
    token = make.token(u, expires_at=today())
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, EXPIRED)


def test_token_expiring_tomorrow_still_works(api, make):
    u = make.user()
    token = make.token(u, expires_at=today() + timedelta(days=1))
    r = api(token).get("/user")
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_expired_token_refused_on_anonymous_route(api, make):
    u = make.user()
    token = make.token(u, expires_at=today() - timedelta(days=1))
    r = api(token).get("/version")
    assert (r.status_code, r.json()) == (401, EXPIRED)


def test_revoked_token_is_401_invalid_token(api, make):
    u = make.user()
    token = make.token(u, revoked=True)
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, REVOKED)


def test_expired_is_reported_before_revoked(api, make):
    u = make.user()
    token = make.token(u, revoked=True, expires_at=today() - timedelta(days=3))
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, EXPIRED)


def test_revoked_is_reported_before_missing_scope(api, make):
    u = make.user()
    token = make.token(u, revoked=True, scopes=["read_repository"])
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, REVOKED)


def test_revoked_bearer_token_is_401_invalid_token(api, make):
    u = make.user()
    token = make.token(u, revoked=True)
    r = api().get("/user", headers={"Authorization": f"Bearer {token}"})
    assert (r.status_code, r.json()) == (401, REVOKED)


# Scopes


def test_read_api_can_get(api, make):
    u = make.user(scopes=["read_api"])
    r = api(u).get("/user")
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_read_api_cannot_write(api, make):
    admin = make.admin(scopes=["read_api"])
    r = api(admin).post("/users", json=new_user_fields())
    assert (r.status_code, r.json()) == (403, insufficient("api read_api"))


def test_read_api_cannot_write_own_status(api, make):
    u = make.user(scopes=["read_api"])
    r = api(u).put("/user/status", json={"message": "hi"})
    assert (r.status_code, r.json()) == (403, insufficient("api read_api"))


def test_read_user_reaches_current_user(api, make):
    u = make.user(scopes=["read_user"])
    r = api(u).get("/user")
    assert (r.status_code, r.json()["id"]) == (200, u.id)


def test_read_user_reaches_user_list_and_single_user(api, make):
    u = make.user(scopes=["read_user"])
    other = make.user()
    listed = api(u).get("/users")
    single = api(u).get(f"/users/{other.id}")
    assert listed.status_code == 200
    assert {x["id"] for x in listed.json()} >= {u.id, other.id}
    assert (single.status_code, single.json()["id"]) == (200, other.id)


def test_read_user_reaches_version(api, make):
    u = make.user(scopes=["read_user"])
    r = api(u).get("/version")
    assert r.status_code == 200


def test_read_user_cannot_read_other_apis(api, make):
    u = make.user(scopes=["read_user"])
    r = api(u).get("/personal_access_tokens")
    assert (r.status_code, r.json()) == (403, insufficient("api read_api"))


def test_read_user_cannot_write_users(api, make):
    u = make.user(scopes=["read_user"])
    r = api(u).put("/user/status", json={"message": "hi"})
    assert (r.status_code, r.json()) == (403, insufficient("api read_api"))


def test_read_repository_alone_cannot_read_user(api, make):
    u = make.user(scopes=["read_repository"])
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (403, insufficient("read_user api read_api"))


def test_insufficient_scope_is_reported_on_anonymous_route_too(api, make):
    u = make.user(scopes=["read_repository"])
    r = api(u).get("/users", params={"username": u.username})
    assert (r.status_code, r.json()) == (403, insufficient("read_user api read_api"))


def test_api_scope_reaches_reads_and_writes(api, make):
    admin = make.admin(scopes=["api"])
    read = api(admin).get("/personal_access_tokens")
    created = api(admin).post("/users", json=new_user_fields())
    assert read.status_code == 200
    assert (created.status_code, created.json()["username"]) == (201, "made1")


def test_insufficient_scope_response_has_no_www_authenticate(api, make):
    u = make.user(scopes=["read_api"])
    r = api(u).put("/user/status", json={"message": "hi"})
    assert r.status_code == 403
    assert "www-authenticate" not in r.headers


# Admin mode


def test_admin_mode_off_admin_token_without_scope_acts_as_admin(api, make):
    admin = make.admin(scopes=["api"])
    r = api(admin).post("/users", json=new_user_fields())
    assert r.status_code == 201


def test_admin_mode_on_admin_token_without_admin_mode_scope_is_refused(api, make, configure):
    configure(admin_mode=True)
    admin = make.admin(scopes=["api"])
    r = api(admin).post("/users", json=new_user_fields())
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_admin_mode_on_admin_token_with_admin_mode_scope_acts_as_admin(api, make, configure):
    configure(admin_mode=True)
    admin = make.admin(scopes=["api", "admin_mode"])
    r = api(admin).post("/users", json=new_user_fields())
    assert (r.status_code, r.json()["username"]) == (201, "made1")


def test_admin_mode_scope_alone_reaches_no_route(api, make, configure):
    configure(admin_mode=True)
    admin = make.admin(scopes=["admin_mode"])
    r = api(admin).post("/users", json=new_user_fields())
    assert (r.status_code, r.json()) == (403, insufficient("api read_api"))


# Users who may not use the API


def test_blocked_user_token_is_403_blocked(api, make):
    u = make.user(state="blocked")
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})


def test_blocked_user_token_is_403_on_anonymous_route(api, make):
    u = make.user(state="blocked")
    r = api(u).get("/version")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})


def test_user_blocked_after_token_creation_is_refused(api, make):
    u = make.user()
    assert api(u).get("/user").status_code == 200
    assert api("root").post(f"/users/{u.id}/block").status_code == 201
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})


# Job tokens


def test_job_token_header_without_resolver_is_401(api):
    r = api().get("/version", headers={"JOB-TOKEN": "some-job-token"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_job_token_query_without_resolver_is_401(api):
    r = api().get("/user", params={"job_token": "some-job-token"})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


# Token bookkeeping


def test_token_use_sets_last_used_at(api, make, db):
    u = make.user()
    before = datetime.now(UTC) - timedelta(seconds=1)
    listed = api(u).get("/personal_access_tokens")
    assert listed.status_code == 200
    db.expire_all()
    token = db.scalars(select(PersonalAccessToken).where(PersonalAccessToken.user_id == u.id)).one()
    assert token.last_used_at is not None
    assert before <= token.last_used_at <= datetime.now(UTC) + timedelta(seconds=1)


def test_last_used_at_shows_in_token_view(api, make):
    u = make.user()
    api(u).get("/user")
    r = api(u).get("/personal_access_tokens/self")
    assert r.status_code == 200
    assert r.json()["last_used_at"] is not None
    assert r.json()["last_used_at"].endswith("Z")


def test_stale_last_used_at_is_refreshed(api, make, db):
    u = make.user()
    long_ago = datetime.now(UTC) - timedelta(days=2)
    with transaction(db):
        db.execute(update(PersonalAccessToken).values(last_used_at=long_ago))
    assert api(u).get("/user").status_code == 200
    db.expire_all()
    token = db.scalars(select(PersonalAccessToken).where(PersonalAccessToken.user_id == u.id)).one()
    assert token.last_used_at is not None
    assert token.last_used_at > datetime.now(UTC) - timedelta(minutes=1)


def test_token_secret_is_stored_only_as_digest(api, make, db):
    created = api("root").post("/users/1/personal_access_tokens", json={"name": "ci", "scopes": ["api"]})
    assert created.status_code == 201
    secret = created.json()["token"]
    rows = db.execute(text("SELECT * FROM personal_access_tokens")).all()
    assert rows
    for row in rows:
        for value in row:
            assert secret not in str(value)
    # And the stored digest still authenticates the secret.
    assert api(secret).get("/user").json()["id"] == 1
