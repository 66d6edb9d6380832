"""Impersonation tokens (spec part 1 "Authentication" 6): administrators make them for a user;
they work like personal access tokens until revoked or until the operator switches them off."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from tests.bodies import IMPERSONATION_DISABLED as DISABLED
from tests.bodies import REVOKED, TOKEN_KEYS, UNAUTHORIZED

FORBIDDEN = {"message": "403 Forbidden"}
ENTITY_KEYS = [*TOKEN_KEYS, "impersonation"]


def today() -> date:
    return datetime.now(UTC).date()


def create(api, user_id: int, **fields):
    body = {"name": "impersonate", "scopes": ["api"], **fields}
    return api("root").post(f"/users/{user_id}/impersonation_tokens", json=body)


def test_admin_creates_impersonation_token(api, make):
    u = make.user()
    r = create(api, u.id, scopes=["api", "read_user"], description="support")
    assert r.status_code == 201
    body = r.json()
    assert list(body) == [*ENTITY_KEYS, "token"]
    assert (body["impersonation"], body["user_id"], body["name"]) == (True, u.id, "impersonate")
    assert (body["scopes"], body["description"], body["active"], body["revoked"]) == (
        ["api", "read_user"],
        "support",
        True,
        False,
    )
    assert body["expires_at"] == (today() + timedelta(days=365)).isoformat()
    assert isinstance(body["token"], str)
    assert body["token"]


def test_impersonation_token_acts_as_the_user(api, make):
    u = make.user()
    token = create(api, u.id).json()["token"]
    r = api(token).get("/user")
    assert (r.status_code, r.json()["id"], r.json()["username"]) == (200, u.id, u.username)


def test_impersonation_token_with_expires_at(api, make):
    u = make.user()
    when = (today() + timedelta(days=3)).isoformat()
    r = create(api, u.id, expires_at=when)
    assert (r.status_code, r.json()["expires_at"]) == (201, when)


def test_impersonation_token_comma_separated_scopes(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/impersonation_tokens", data={"name": "x", "scopes": "read_api,read_user"}
    )
    assert (r.status_code, r.json()["scopes"]) == (201, ["read_api", "read_user"])


def test_impersonation_token_requires_name(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/impersonation_tokens", json={"scopes": ["api"]})
    assert (r.status_code, r.json()) == (400, {"error": "name is missing"})


def test_impersonation_token_without_scopes_is_400(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/impersonation_tokens", json={"name": "x"})
    assert (r.status_code, r.json()) == (400, {"message": {"scopes": ["can't be blank"]}})


def test_impersonation_token_with_unknown_scope_is_400(api, make):
    u = make.user()
    r = create(api, u.id, scopes=["api", "everything"])
    assert (r.status_code, r.json()) == (400, {"message": {"scopes": ["can only contain available scopes"]}})


def test_impersonation_token_cannot_carry_admin_mode(api, make):
    u = make.user()
    r = create(api, u.id, scopes=["api", "admin_mode"])
    assert (r.status_code, r.json()) == (400, {"message": {"scopes": ["can only contain available scopes"]}})


def test_create_impersonation_token_by_non_admin_is_403(api, make):
    u = make.user()
    r = api(u).post(f"/users/{u.id}/impersonation_tokens", json={"name": "x", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_create_impersonation_token_anonymously_is_401(api, make):
    u = make.user()
    r = api().post(f"/users/{u.id}/impersonation_tokens", json={"name": "x", "scopes": ["api"]})
    assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_create_impersonation_token_for_unknown_user_is_404(api):
    r = create(api, 99999)
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_create_still_works_when_impersonation_is_disabled(api, make, configure):
    configure(impersonation_enabled=False)
    u = make.user()
    r = create(api, u.id)
    assert (r.status_code, r.json()["impersonation"]) == (201, True)


def test_list_impersonation_tokens(api, make):
    u = make.user()
    first = create(api, u.id, name="first").json()
    second = create(api, u.id, name="second").json()
    r = api("root").get(f"/users/{u.id}/impersonation_tokens")
    assert r.status_code == 200
    assert [t["id"] for t in r.json()] == [first["id"], second["id"]]
    assert [list(t) for t in r.json()] == [ENTITY_KEYS, ENTITY_KEYS]
    assert r.headers["x-total"] == "2"


def test_list_impersonation_tokens_excludes_personal_tokens(api, make):
    u = make.user()
    r = api("root").get(f"/users/{u.id}/impersonation_tokens")
    assert (r.status_code, r.json()) == (200, [])


def test_list_impersonation_tokens_by_state(api, make):
    u = make.user()
    live = create(api, u.id, name="live").json()
    dead = create(api, u.id, name="dead").json()
    assert api("root").delete(f"/users/{u.id}/impersonation_tokens/{dead['id']}").status_code == 204
    make.token(u, name="expired", impersonation=True, expires_at=today() - timedelta(days=1))

    def names(state: str | None) -> list[str]:
        params = {"state": state} if state else {}
        r = api("root").get(f"/users/{u.id}/impersonation_tokens", params=params)
        assert r.status_code == 200
        return [t["name"] for t in r.json()]

    assert names(None) == ["live", "dead", "expired"]
    assert names("all") == ["live", "dead", "expired"]
    assert names("active") == [live["name"]]
    assert names("inactive") == ["dead", "expired"]


def test_list_impersonation_tokens_bad_state_is_400(api, make):
    u = make.user()
    r = api("root").get(f"/users/{u.id}/impersonation_tokens", params={"state": "asleep"})
    assert (r.status_code, r.json()) == (400, {"error": "state does not have a valid value"})


def test_list_impersonation_tokens_by_non_admin_is_403(api, make):
    u = make.user()
    r = api(u).get(f"/users/{u.id}/impersonation_tokens")
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_list_impersonation_tokens_of_unknown_user_is_404(api):
    r = api("root").get("/users/99999/impersonation_tokens")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_get_impersonation_token(api, make):
    u = make.user()
    made = create(api, u.id).json()
    r = api("root").get(f"/users/{u.id}/impersonation_tokens/{made['id']}")
    assert r.status_code == 200
    expected = {k: v for k, v in made.items() if k != "token"}
    assert r.json() == expected
    assert list(r.json()) == ENTITY_KEYS


def test_get_missing_impersonation_token_is_404(api, make):
    u = make.user()
    r = api("root").get(f"/users/{u.id}/impersonation_tokens/99999")
    assert (r.status_code, r.json()) == (404, {"message": "404 Impersonation Token Not Found"})


def test_get_personal_token_as_impersonation_token_is_404(api, make, db):
    from kiln.auth.tokens import digest
    from kiln.models import PersonalAccessToken

    u = make.user()
    pat_id = db.query(PersonalAccessToken).filter(PersonalAccessToken.digest == digest(u.token)).one().id
    r = api("root").get(f"/users/{u.id}/impersonation_tokens/{pat_id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Impersonation Token Not Found"})


def test_get_impersonation_token_of_another_user_is_404(api, make):
    u = make.user()
    other = make.user()
    made = create(api, u.id).json()
    r = api("root").get(f"/users/{other.id}/impersonation_tokens/{made['id']}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Impersonation Token Not Found"})


def test_get_impersonation_token_by_non_admin_is_403(api, make):
    u = make.user()
    made = create(api, u.id).json()
    r = api(u).get(f"/users/{u.id}/impersonation_tokens/{made['id']}")
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_revoke_impersonation_token(api, make):
    u = make.user()
    made = create(api, u.id).json()
    assert api(made["token"]).get("/user").status_code == 200
    r = api("root").delete(f"/users/{u.id}/impersonation_tokens/{made['id']}")
    assert (r.status_code, r.content) == (204, b"")
    refused = api(made["token"]).get("/user")
    assert (refused.status_code, refused.json()) == (401, REVOKED)
    shown = api("root").get(f"/users/{u.id}/impersonation_tokens/{made['id']}")
    assert (shown.json()["revoked"], shown.json()["active"]) == (True, False)


def test_revoke_missing_impersonation_token_is_404(api, make):
    u = make.user()
    r = api("root").delete(f"/users/{u.id}/impersonation_tokens/99999")
    assert (r.status_code, r.json()) == (404, {"message": "404 Impersonation Token Not Found"})


def test_revoke_impersonation_token_by_non_admin_is_403(api, make):
    u = make.user()
    made = create(api, u.id).json()
    r = api(u).delete(f"/users/{u.id}/impersonation_tokens/{made['id']}")
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert api(made["token"]).get("/user").status_code == 200


def test_disabled_impersonation_refuses_the_token(api, make, configure):
    u = make.user()
    token = create(api, u.id).json()["token"]
    configure(impersonation_enabled=False)
    r = api(token).get("/user")
    assert (r.status_code, r.json()) == (401, DISABLED)
    assert api(u).get("/user").status_code == 200


def test_disabled_impersonation_refuses_the_token_as_bearer(api, make, configure):
    u = make.user()
    token = create(api, u.id).json()["token"]
    configure(impersonation_enabled=False)
    r = api().get("/version", headers={"Authorization": f"Bearer {token}"})
    assert (r.status_code, r.json()) == (401, DISABLED)


def test_impersonation_token_is_a_personal_access_token_for_self(api, make):
    u = make.user()
    made = create(api, u.id, scopes=["read_user"]).json()
    r = api(made["token"]).get("/personal_access_tokens/self")
    assert (r.status_code, r.json()["id"], r.json()["impersonation"]) == (200, made["id"], True)


def test_impersonation_token_scopes_apply(api, make):
    u = make.user()
    token = create(api, u.id, scopes=["read_user"]).json()["token"]
    r = api(token).put("/user/status", json={"message": "x"})
    assert (r.status_code, r.json()["error"]) == (403, "insufficient_scope")


def test_admin_sees_impersonation_tokens_in_token_list(api, make):
    u = make.user()
    made = create(api, u.id).json()
    r = api("root").get("/personal_access_tokens", params={"user_id": u.id})
    assert made["id"] in [t["id"] for t in r.json()]


def test_non_admin_with_bad_parameters_gets_403_before_400(api, make):
    u = make.user()
    r = api(u).post(f"/users/{u.id}/impersonation_tokens", json={})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
