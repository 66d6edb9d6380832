"""Personal access tokens API: list, get, self, revoke, rotate, and admin creation for a user."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from sqlalchemy import select, update

from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest
from kiln.models import PersonalAccessToken
from kiln.queries.users import row_by_id
from kiln.services import tokens
from tests.bodies import REVOKED, TOKEN_KEYS, UNAUTHORIZED
from tests.conftest import ROOT_PASSWORD

NOT_A_PAT = {"message": "400 Bad request - This endpoint requires token type to be a personal access token"}
ENTITY_KEYS = TOKEN_KEYS


def today() -> date:
    return datetime.now(UTC).date()


def token_id(db, secret: str) -> int:
    from kiln.auth.tokens import digest

    return db.query(PersonalAccessToken).filter(PersonalAccessToken.digest == digest(secret)).one().id


def oauth_token(client, username: str = "root", password: str = ROOT_PASSWORD) -> str:
    r = client.post(
        "/oauth/token", data={"grant_type": "password", "username": username, "password": password}
    )
    assert r.status_code == 200
    return str(r.json()["access_token"])


# GET /personal_access_tokens


def test_list_requires_authentication(api):
    r = api().get("/personal_access_tokens")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_list_shows_own_tokens_with_entity_fields(api, make, db):
    u = make.user()
    second = make.token(u, name="second", expires_at=today() + timedelta(days=30))
    make.token(make.user(), name="someone else's")
    r = api(u).get("/personal_access_tokens")
    assert r.status_code == 200
    body = r.json()
    assert [t["name"] for t in body] == ["test", "second"]
    assert [list(t) for t in body] == [ENTITY_KEYS, ENTITY_KEYS]
    first = body[1]
    assert first["id"] == token_id(db, second)
    assert first["user_id"] == u.id
    assert first["revoked"] is False
    assert first["active"] is True
    assert first["scopes"] == ["api"]
    assert first["description"] is None
    assert first["expires_at"] == (today() + timedelta(days=30)).isoformat()
    assert first["created_at"].endswith("Z")
    assert "token" not in first
    assert r.headers["x-total"] == "2"


def test_list_hides_impersonation_tokens_from_their_user(api, make):
    u = make.user()
    make.token(u, name="impersonation", impersonation=True)
    r = api(u).get("/personal_access_tokens")
    assert [t["name"] for t in r.json()] == ["test"]


def test_list_with_own_user_id(api, make):
    u = make.user()
    r = api(u).get("/personal_access_tokens", params={"user_id": u.id})
    assert (r.status_code, [t["user_id"] for t in r.json()]) == (200, [u.id])


def test_list_with_other_user_id_is_401_for_non_admin(api, make):
    u = make.user()
    other = make.user()
    r = api(u).get("/personal_access_tokens", params={"user_id": other.id})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_admin_lists_every_token(api, make):
    a = make.user()
    b = make.user()
    make.token(b, name="impersonation", impersonation=True)
    r = api("root").get("/personal_access_tokens", params={"per_page": 100})
    assert r.status_code == 200
    owners = sorted(t["user_id"] for t in r.json())
    assert owners == sorted([1, a.id, b.id, b.id])


def test_admin_filters_by_user_id(api, make):
    a = make.user()
    make.user()
    r = api("root").get("/personal_access_tokens", params={"user_id": a.id})
    assert (r.status_code, [t["user_id"] for t in r.json()]) == (200, [a.id])


def test_admin_unknown_user_id_is_404(api):
    r = api("root").get("/personal_access_tokens", params={"user_id": 99999})
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


@pytest.mark.parametrize("state", [None, "active"])
@pytest.mark.parametrize("admin", [False, True])
def test_the_same_list_for_two_users_shows_each_their_own_tokens(api, make, admin, state):
    """The list's statement is kept per shape: its third run is compiled, and still the
    user's own (asked by the user, or by an administrator naming them)."""
    ada, bob = make.user(), make.user()
    make.token(ada, name="adas", expires_at=today() + timedelta(days=1))
    make.token(bob, name="bobs", expires_at=today() + timedelta(days=1))
    for user, own in ((ada, ["test", "adas"]), (bob, ["test", "bobs"]), (ada, ["test", "adas"])):
        params = {"user_id": user.id} | ({"state": state} if state else {})
        r = api("root" if admin else user).get("/personal_access_tokens", params=params)
        assert [t["name"] for t in r.json()] == own


@pytest.mark.parametrize("state", ["all", "active"])
def test_the_same_impersonation_list_for_two_users_shows_each_their_own(api, make, state):
    """GET /users/:id/impersonation_tokens keeps its statement per state: the third run is
    compiled, and still the user's own."""
    ada, bob = make.user(), make.user()
    make.token(ada, name="adas", impersonation=True)
    make.token(bob, name="bobs", impersonation=True)
    for user, own in ((ada, ["adas"]), (bob, ["bobs"]), (ada, ["adas"])):
        r = api("root").get(f"/users/{user.id}/impersonation_tokens", params={"state": state})
        assert [t["name"] for t in r.json()] == own


def test_list_filter_revoked(api, make):
    u = make.user()
    make.token(u, name="gone", revoked=True)
    revoked = api(u).get("/personal_access_tokens", params={"revoked": "true"})
    live = api(u).get("/personal_access_tokens", params={"revoked": "false"})
    assert [t["name"] for t in revoked.json()] == ["gone"]
    assert [t["name"] for t in live.json()] == ["test"]


def test_list_filter_state(api, make):
    u = make.user()
    make.token(u, name="gone", revoked=True)
    make.token(u, name="old", expires_at=today() - timedelta(days=1))
    make.token(u, name="later", expires_at=today() + timedelta(days=1))
    active = api(u).get("/personal_access_tokens", params={"state": "active"})
    inactive = api(u).get("/personal_access_tokens", params={"state": "inactive"})
    assert [t["name"] for t in active.json()] == ["test", "later"]
    assert [t["name"] for t in inactive.json()] == ["gone", "old"]
    assert [t["active"] for t in inactive.json()] == [False, False]


def test_list_filter_state_invalid_is_400(api, make):
    u = make.user()
    r = api(u).get("/personal_access_tokens", params={"state": "sleeping"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})


def test_list_filter_search(api, make):
    u = make.user()
    make.token(u, name="Deploy Key")
    make.token(u, name="other")
    r = api(u).get("/personal_access_tokens", params={"search": "deploy"})
    assert [t["name"] for t in r.json()] == ["Deploy Key"]


def test_list_filter_expiry_dates(api, make):
    u = make.user()
    make.token(u, name="soon", expires_at=today() + timedelta(days=2))
    make.token(u, name="late", expires_at=today() + timedelta(days=20))
    before = api(u).get(
        "/personal_access_tokens", params={"expires_before": (today() + timedelta(days=5)).isoformat()}
    )
    after = api(u).get(
        "/personal_access_tokens", params={"expires_after": (today() + timedelta(days=5)).isoformat()}
    )
    assert [t["name"] for t in before.json()] == ["soon"]
    assert [t["name"] for t in after.json()] == ["late"]


def test_list_filter_created_and_last_used(api, make, db):
    u = make.user()
    old = make.token(u, name="old")
    with transaction(db):
        db.execute(
            update(PersonalAccessToken)
            .where(PersonalAccessToken.id == token_id(db, old))
            .values(created_at=datetime.now(UTC) - timedelta(days=10))
        )
    cut = (datetime.now(UTC) - timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    before = api(u).get("/personal_access_tokens", params={"created_before": cut})
    after = api(u).get("/personal_access_tokens", params={"created_after": cut})
    used = api(u).get("/personal_access_tokens", params={"last_used_after": cut})
    assert [t["name"] for t in before.json()] == ["old"]
    assert [t["name"] for t in after.json()] == ["test"]
    assert [t["name"] for t in used.json()] == ["test"]


def test_list_is_in_id_order_by_default(api, make):
    u = make.user()
    make.token(u, name="b")
    make.token(u, name="a")
    r = api(u).get("/personal_access_tokens")
    ids = [t["id"] for t in r.json()]
    assert ids == sorted(ids)
    assert [t["name"] for t in r.json()] == ["test", "b", "a"]


def test_list_sorts(api, make):
    u = make.user()
    make.token(u, name="b", expires_at=today() + timedelta(days=5))
    make.token(u, name="a", expires_at=today() + timedelta(days=50))

    def names(sort: str) -> list[str]:
        r = api(u).get("/personal_access_tokens", params={"sort": sort})
        assert r.status_code == 200
        return [t["name"] for t in r.json()]

    assert names("name_asc") == ["a", "b", "test"]
    assert names("name_desc") == ["test", "b", "a"]
    assert names("created_desc") == ["a", "b", "test"]
    assert names("created_asc") == ["test", "b", "a"]
    assert names("expires_asc") == ["b", "a", "test"]
    assert names("expires_desc") == ["a", "b", "test"]
    assert names("no_such_sort") == ["test", "b", "a"]


# GET /personal_access_tokens/:id


def test_get_own_token(api, make, db):
    u = make.user()
    r = api(u).get(f"/personal_access_tokens/{token_id(db, u.token)}")
    assert (r.status_code, r.json()["name"], r.json()["user_id"]) == (200, "test", u.id)
    assert list(r.json())[: len(ENTITY_KEYS)] == ENTITY_KEYS


def test_get_other_users_token_is_401_for_non_admin(api, make, db):
    u = make.user()
    other = make.user()
    r = api(u).get(f"/personal_access_tokens/{token_id(db, other.token)}")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_get_missing_token_is_401_for_non_admin(api, make):
    u = make.user()
    r = api(u).get("/personal_access_tokens/99999")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_admin_gets_other_users_token(api, make, db):
    u = make.user()
    r = api("root").get(f"/personal_access_tokens/{token_id(db, u.token)}")
    assert (r.status_code, r.json()["user_id"]) == (200, u.id)


def test_admin_get_missing_token_is_404(api):
    r = api("root").get("/personal_access_tokens/99999")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


# GET /personal_access_tokens/self


def test_self_with_personal_access_token(api, make, db):
    u = make.user(scopes=["read_repository"])
    r = api(u).get("/personal_access_tokens/self")
    assert (r.status_code, r.json()["id"], r.json()["scopes"]) == (
        200,
        token_id(db, u.token),
        ["read_repository"],
    )
    assert list(r.json()) == ENTITY_KEYS


def test_self_with_oauth_token_is_400(api, client):
    access = oauth_token(client)
    r = api().get("/personal_access_tokens/self", headers={"Authorization": f"Bearer {access}"})
    assert (r.status_code, r.json()) == (400, NOT_A_PAT)


def test_self_without_credentials_is_401(api):
    r = api().get("/personal_access_tokens/self")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


# DELETE /personal_access_tokens/:id and /self


def test_revoke_own_token(api, make, db):
    u = make.user()
    spare = make.token(u, name="spare")
    r = api(u).delete(f"/personal_access_tokens/{token_id(db, spare)}")
    assert (r.status_code, r.content) == (204, b"")
    gone = api(spare).get("/user")
    assert (gone.status_code, gone.json()) == (401, REVOKED)
    assert api(u).get("/user").status_code == 200


def test_revoke_token_with_itself(api, make, db):
    u = make.user()
    r = api(u).delete(f"/personal_access_tokens/{token_id(db, u.token)}")
    assert r.status_code == 204
    assert api(u).get("/user").status_code == 401


def test_revoke_other_users_token_is_400_for_non_admin(api, make, db):
    u = make.user()
    other = make.user()
    r = api(u).delete(f"/personal_access_tokens/{token_id(db, other.token)}")
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request"})
    assert api(other).get("/user").status_code == 200


def test_revoke_missing_token_is_404(api, make):
    u = make.user()
    r = api(u).delete("/personal_access_tokens/99999")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_admin_revokes_other_users_token(api, make, db):
    u = make.user()
    r = api("root").delete(f"/personal_access_tokens/{token_id(db, u.token)}")
    assert r.status_code == 204
    gone = api(u).get("/user")
    assert (gone.status_code, gone.json()) == (401, REVOKED)


def test_revoke_self(api, make):
    u = make.user(scopes=["read_user"])
    r = api(u).delete("/personal_access_tokens/self")
    assert (r.status_code, r.content) == (204, b"")
    gone = api(u).get("/user")
    assert (gone.status_code, gone.json()) == (401, REVOKED)


def test_revoke_self_with_oauth_token_is_400(api, client):
    access = oauth_token(client)
    r = api().delete("/personal_access_tokens/self", headers={"Authorization": f"Bearer {access}"})
    assert (r.status_code, r.json()) == (400, NOT_A_PAT)


# Rotation


def test_rotate_token(api, make, db):
    u = make.user()
    old = make.token(u, name="rotating", scopes=["read_api", "read_user"])
    old_id = token_id(db, old)
    r = api(u).post(f"/personal_access_tokens/{old_id}/rotate")
    assert r.status_code == 200
    body = r.json()
    assert list(body) == [*ENTITY_KEYS, "token"]
    assert body["id"] != old_id
    assert (body["name"], body["scopes"], body["user_id"]) == ("rotating", ["read_api", "read_user"], u.id)
    assert body["expires_at"] == (today() + timedelta(days=7)).isoformat()
    assert (body["revoked"], body["active"]) == (False, True)
    assert api(body["token"]).get("/user").json()["id"] == u.id
    refused = api(old).get("/user")
    assert (refused.status_code, refused.json()) == (401, REVOKED)
    listed = api(u).get(f"/personal_access_tokens/{old_id}")
    assert (listed.json()["revoked"], listed.json()["active"]) == (True, False)


def test_rotate_with_expires_at(api, make, db):
    u = make.user()
    when = (today() + timedelta(days=30)).isoformat()
    r = api(u).post(f"/personal_access_tokens/{token_id(db, u.token)}/rotate", json={"expires_at": when})
    assert (r.status_code, r.json()["expires_at"]) == (200, when)


def test_rotate_self(api, make, db):
    u = make.user()
    r = api(u).post("/personal_access_tokens/self/rotate")
    assert r.status_code == 200
    assert r.json()["expires_at"] == (today() + timedelta(days=7)).isoformat()
    assert api(r.json()["token"]).get("/personal_access_tokens/self").json()["id"] == r.json()["id"]
    assert api(u).get("/user").status_code == 401


def test_rotate_revoked_token_is_400(api, make, db):
    u = make.user()
    gone = make.token(u, revoked=True)
    r = api(u).post(f"/personal_access_tokens/{token_id(db, gone)}/rotate")
    assert (r.status_code, r.json()) == (400, {"message": "400 Bad request - Token already revoked"})


def test_a_token_rotated_since_it_was_read_is_not_rotated_again(api, make, db, settings):
    """Two rotations of one token, each having read it live: the second finds it revoked in
    its write and refuses, so exactly one successor exists."""
    u = make.user()
    old = make.token(u, name="once")
    stale = db.get(PersonalAccessToken, token_id(db, old))
    first = api(u).post(f"/personal_access_tokens/{stale.id}/rotate")
    actor = Actor(user=row_by_id(db, u.id), via="personal_access_token", scopes=None)

    with pytest.raises(BadRequest) as second:
        tokens.rotate(db, actor, stale, None, settings)

    named = db.scalars(select(PersonalAccessToken).where(PersonalAccessToken.name == "once")).all()
    assert (first.status_code, second.value.body()) == (
        200,
        {"message": "400 Bad request - Token already revoked"},
    )
    assert sorted((t.id, t.revoked) for t in named) == [(stale.id, True), (first.json()["id"], False)]


def test_rotate_other_users_token_is_401_for_non_admin(api, make, db):
    u = make.user()
    other = make.user()
    r = api(u).post(f"/personal_access_tokens/{token_id(db, other.token)}/rotate")
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)
    assert api(other).get("/user").status_code == 200


def test_admin_rotate_missing_token_is_404(api):
    r = api("root").post("/personal_access_tokens/99999/rotate")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})


def test_rotate_beyond_max_lifetime_is_422(api, make, db):
    u = make.user()
    limit = today() + timedelta(days=365)
    r = api(u).post(
        f"/personal_access_tokens/{token_id(db, u.token)}/rotate",
        json={"expires_at": (limit + timedelta(days=1)).isoformat()},
    )
    assert (r.status_code, r.json()) == (
        422,
        {"message": f"Expiration date must be before {limit.isoformat()}"},
    )
    assert api(u).get("/user").status_code == 200


def test_rotate_self_with_oauth_token_is_405(api, client):
    access = oauth_token(client)
    r = api().post("/personal_access_tokens/self/rotate", headers={"Authorization": f"Bearer {access}"})
    assert (r.status_code, r.json()) == (405, {"message": "405 Method Not Allowed"})


# POST /users/:user_id/personal_access_tokens


def test_admin_creates_token_for_user(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens",
        json={"name": "ci", "scopes": ["read_api", "read_repository"], "description": "for CI"},
    )
    assert r.status_code == 201
    body = r.json()
    assert list(body) == [*ENTITY_KEYS, "token"]
    assert (body["name"], body["scopes"], body["description"], body["user_id"]) == (
        "ci",
        ["read_api", "read_repository"],
        "for CI",
        u.id,
    )
    assert (body["revoked"], body["active"], body["last_used_at"]) == (False, True, None)
    assert body["expires_at"] == (today() + timedelta(days=365)).isoformat()
    assert api(body["token"]).get("/user").json()["id"] == u.id


def test_create_token_accepts_comma_separated_scopes(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", data={"name": "ci", "scopes": "api,read_user"}
    )
    assert (r.status_code, r.json()["scopes"]) == (201, ["api", "read_user"])


def test_create_token_with_form_array_scopes(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", data={"name": "ci", "scopes[]": ["api", "read_user"]}
    )
    assert (r.status_code, r.json()["scopes"]) == (201, ["api", "read_user"])


def test_create_token_with_expires_at(api, make):
    u = make.user()
    when = (today() + timedelta(days=10)).isoformat()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": ["api"], "expires_at": when}
    )
    assert (r.status_code, r.json()["expires_at"]) == (201, when)


def test_create_token_at_max_lifetime_is_allowed(api, make):
    u = make.user()
    when = (today() + timedelta(days=365)).isoformat()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": ["api"], "expires_at": when}
    )
    assert (r.status_code, r.json()["expires_at"]) == (201, when)


def test_create_token_beyond_max_lifetime_is_422(api, make):
    u = make.user()
    limit = today() + timedelta(days=365)
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens",
        json={"name": "ci", "scopes": ["api"], "expires_at": (limit + timedelta(days=1)).isoformat()},
    )
    assert (r.status_code, r.json()) == (
        422,
        {"message": f"Expiration date must be before {limit.isoformat()}"},
    )


def test_create_token_in_the_past_is_400(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens",
        json={"name": "ci", "scopes": ["api"], "expires_at": (today() - timedelta(days=1)).isoformat()},
    )
    assert r.status_code == 400
    assert r.json() == {"message": {"expires_at": ["must not be in the past"]}}


def test_create_token_requires_name_and_scopes(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens", json={})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing, scopes is missing"})


def test_create_token_requires_scopes(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"name": "ci"})
    assert (r.status_code, r.json()) == (400, {"error": "scopes is missing"})


def test_create_token_requires_name(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"scopes": ["api"]})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})


def test_create_token_with_unknown_scope_is_400(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": ["api", "root"]}
    )
    assert (r.status_code, r.json()) == (400, {"error": "scopes does not have a valid value"})


def test_create_token_by_non_admin_is_403(api, make):
    u = make.user()
    r = api(u).post(f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_create_token_for_unknown_user_is_404(api):
    r = api("root").post("/users/99999/personal_access_tokens", json={"name": "ci", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_create_token_anonymously_is_401(api, make):
    u = make.user()
    r = api().post(f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_created_tokens_are_distinct(api, make):
    u = make.user()
    first = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"name": "a", "scopes": ["api"]})
    second = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"name": "a", "scopes": ["api"]})
    assert first.json()["token"] != second.json()["token"]
    assert first.json()["id"] != second.json()["id"]


def test_create_token_with_blank_name_is_422(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"name": "", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (422, {"message": "Name can't be blank"})


def test_create_token_with_empty_scopes_is_422(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/personal_access_tokens", json={"name": "ci", "scopes": []})
    assert (r.status_code, r.json()) == (422, {"message": "Scopes can't be blank"})


def test_non_admin_creating_a_token_with_bad_parameters_gets_403_before_400(api, make):
    u = make.user()
    r = api(u).post(f"/users/{u.id}/personal_access_tokens", json={"scopes": ["nope"]})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_times_are_cut_to_milliseconds_as_when_the_token_was_made(api, make, db):
    """A read shows the same time as the write's answer: milliseconds truncated, not rounded."""
    u = make.user()
    tid = token_id(db, u.token)
    with transaction(db):
        db.execute(
            update(PersonalAccessToken)
            .where(PersonalAccessToken.id == tid)
            .values(created_at=datetime(2026, 1, 2, 3, 4, 5, 999_800, tzinfo=UTC))
        )
    assert api(u).get(f"/personal_access_tokens/{tid}").json()["created_at"] == "2026-01-02T03:04:05.999Z"
