"""Users API (spec part 3 "User", "Users"): listing and its filters, the views, create,
update, delete, identities, block and unblock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from kiln.db import transaction
from kiln.models import Identity, User, UserCustomAttribute
from tests.conftest import ROOT_PASSWORD

# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)

BASIC_FIELDS = {"id", "username", "name", "state", "locked", "avatar_url", "web_url"}
PROFILE_FIELDS = {
    "created_at",
    "bio",
    "location",
    "public_email",
    "skype",
    "linkedin",
    "twitter",
    "website_url",
    "organization",
    "job_title",
}
ADMIN_FIELDS = {
    "email",
    "is_admin",
    "last_sign_in_at",
    "confirmed_at",
    "theme_id",
    "last_activity_on",
    "color_scheme_id",
    "projects_limit",
    "current_sign_in_at",
    "identities",
    "can_create_group",
    "can_create_project",
    "two_factor_enabled",
    "external",
    "private_profile",
    "current_sign_in_ip",
    "last_sign_in_ip",
}
PASSWORD_MODES = (
    "password, reset_password, force_random_password are missing, at least one parameter must be provided"
)


def new_user(**extra):
    n = extra.pop("n", "x")
    return {"email": f"new{n}@example.com", "name": f"New {n}", "username": f"new{n}", **extra}


def ids(response):
    return [u["id"] for u in response.json()]


def add_identity(db, user, provider, extern_uid):
    with transaction(db):
        db.add(Identity(user_id=user.id, provider=provider, extern_uid=extern_uid))


def add_custom_attribute(db, user, key, value):
    with transaction(db):
        db.add(UserCustomAttribute(user_id=user.id, key=key, value=value))


def set_created_at(db, user_id, when):
    with transaction(db):
        db.get(User, user_id).created_at = when


def sign_in(client, fields):
    """Web sign-in; the 302 is the answer, not something to follow."""
    return client.post("/users/sign_in", data=fields, follow_redirects=False)


def ghost_of(api):
    r = api("root").get("/users", params={"username": "ghost"})
    assert r.status_code == 200
    return r.json()


# ---------------------------------------------------------------- list: who may list


def test_list_anonymous_without_username_is_forbidden(api, make):
    r = api().get("/users")
    assert r.status_code == 403
    assert r.json() == {"message": "403 Forbidden - Not authorized to access /api/v4/users"}


def test_list_anonymous_with_username_finds_that_user_only(api, make):
    u = make.user(username="alice")
    make.user(username="bob")
    r = api().get("/users", params={"username": "alice"})
    assert r.status_code == 200
    assert r.json() == [
        {
            "id": u.id,
            "username": "alice",
            "name": u.row.name,
            "state": "active",
            "locked": False,
            "avatar_url": None,
            "web_url": "http://kiln.test/alice",
        }
    ]


def test_list_username_is_case_insensitive(api, make):
    u = make.user(username="Carol")
    r = api(make.user()).get("/users", params={"username": "cAROL"})
    assert r.status_code == 200
    assert ids(r) == [u.id]


def test_list_unknown_username_is_empty(api, make):
    r = api(make.user()).get("/users", params={"username": "nobody"})
    assert (r.status_code, r.json()) == (200, [])


def test_list_default_order_is_id_desc(api, make):
    a, b = make.user(), make.user()
    r = api(a).get("/users")
    assert r.status_code == 200
    assert ids(r) == [b.id, a.id, 1]


# ---------------------------------------------------------------- list: views


def test_list_non_admin_gets_basic_fields_only(api, make):
    u = make.user()
    r = api(u).get("/users")
    assert r.status_code == 200
    for item in r.json():
        assert set(item) == BASIC_FIELDS


def test_list_admin_gets_admin_fields(api, make):
    u = make.user(email="seen@example.com")
    r = api("root").get("/users")
    assert r.status_code == 200
    item = next(i for i in r.json() if i["id"] == u.id)
    assert set(item) >= BASIC_FIELDS | PROFILE_FIELDS | ADMIN_FIELDS
    assert item["email"] == "seen@example.com"
    assert item["is_admin"] is False
    root = next(i for i in r.json() if i["id"] == 1)
    assert root["is_admin"] is True


# ---------------------------------------------------------------- list: filters


def test_list_search_matches_name(api, make):
    u = make.user(name="Zebulon Quux")
    make.user(name="Other")
    r = api(make.user()).get("/users", params={"search": "bulon q"})
    assert ids(r) == [u.id]


def test_list_search_matches_username(api, make):
    u = make.user(username="searchable-one")
    make.user()
    r = api(make.user()).get("/users", params={"search": "SEARCHABLE"})
    assert ids(r) == [u.id]


def test_list_search_matches_exact_email_only(api, make):
    u = make.user(email="Precise@Example.com")
    make.user()
    r = api("root").get("/users", params={"search": "precise@example.com"})
    assert ids(r) == [u.id]
    r = api("root").get("/users", params={"search": "recise@example.co"})
    assert ids(r) == []


def test_list_search_by_private_email_only_for_admins(api, make):
    u = make.user(email="private@example.com", public_email="shown@example.com")
    me = make.user()
    assert ids(api(me).get("/users", params={"search": "private@example.com"})) == []
    assert ids(api(me).get("/users", params={"search": "Shown@example.com"})) == [u.id]
    assert ids(api("root").get("/users", params={"search": "private@example.com"})) == [u.id]


def test_list_search_ignores_a_leading_at_sign(api, make):
    u = make.user(username="handle")
    assert ids(api(make.user()).get("/users", params={"search": "@handle"})) == [u.id]


def test_list_search_treats_like_wildcards_literally(api, make):
    make.user(name="abc")
    r = api("root").get("/users", params={"search": "%"})
    assert (r.status_code, ids(r)) == (200, [])


def test_list_active_filter(api, make):
    active = make.user()
    make.user(state="blocked")
    r = api("root").get("/users", params={"active": "true"})
    assert ids(r) == [active.id, 1]


def test_list_active_filter_leaves_out_the_ghost_user(api, make):
    assert api("root").delete(f"/users/{make.user().id}").status_code == 204
    ghost = ghost_of(api)[0]
    assert ghost["state"] == "active"
    assert ids(api("root").get("/users", params={"active": "true"})) == [1]
    assert ids(api("root").get("/users", params={"blocked": "true"})) == []


def test_list_blocked_filter(api, make):
    make.user()
    blocked = make.user(state="blocked")
    r = api("root").get("/users", params={"blocked": "true"})
    assert ids(r) == [blocked.id]


def test_list_blocked_false_is_ignored(api, make):
    a = make.user()
    b = make.user(state="blocked")
    r = api("root").get("/users", params={"blocked": "false"})
    assert ids(r) == [b.id, a.id, 1]


def test_list_external_filter_works_for_non_admins(api, make):
    ext = make.user(external=True)
    me = make.user()
    r = api(me).get("/users", params={"external": "true"})
    assert ids(r) == [ext.id]


def test_list_exclude_internal_hides_the_ghost_user(api, make):
    gone = make.user()
    assert api("root").delete(f"/users/{gone.id}").status_code == 204
    ghost = ghost_of(api)
    assert len(ghost) == 1
    r = api("root").get("/users")
    assert ghost[0]["id"] in ids(r)
    r = api("root").get("/users", params={"exclude_internal": "true"})
    assert ids(r) == [1]


def test_list_created_before_and_after_for_admins(api, make, db):
    old, mid, new = make.user(), make.user(), make.user()
    now = datetime.now(UTC)
    set_created_at(db, old.id, now - timedelta(days=30))
    set_created_at(db, mid.id, now - timedelta(days=10))
    set_created_at(db, new.id, now - timedelta(days=1))
    set_created_at(db, 1, now - timedelta(days=60))
    before = (now - timedelta(days=5)).isoformat()
    after = (now - timedelta(days=20)).isoformat()
    r = api("root").get("/users", params={"created_before": before, "created_after": after})
    assert (r.status_code, ids(r)) == (200, [mid.id])


def test_list_created_filters_ignored_for_non_admins(api, make, db):
    u = make.user()
    set_created_at(db, u.id, datetime.now(UTC) - timedelta(days=30))
    before = (datetime.now(UTC) - timedelta(days=100)).isoformat()
    r = api(u).get("/users", params={"created_before": before})
    assert ids(r) == [u.id, 1]


def test_list_created_before_invalid_is_400(api):
    r = api("root").get("/users", params={"created_before": "yesterday"})
    assert (r.status_code, r.json()) == (400, {"error": "created_before is invalid"})


def test_list_extern_uid_without_provider_is_400(api):
    for params in ({"extern_uid": "x"}, {"provider": "ldap"}):
        r = api("root").get("/users", params=params)
        assert r.status_code == 400
        assert r.json() == {"error": "extern_uid, provider provide all or none of parameters"}


def test_list_extern_uid_for_non_admins_is_403(api, make):
    r = api(make.user()).get("/users", params={"extern_uid": "x", "provider": "ldap"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_list_extern_uid_and_provider_match_for_admins(api, make, db):
    u = make.user()
    other = make.user()
    add_identity(db, u, "ldapmain", "uid=u,dc=example")
    add_identity(db, other, "saml", "uid=u,dc=example")
    r = api("root").get("/users", params={"extern_uid": "uid=u,dc=example", "provider": "ldapmain"})
    assert (r.status_code, ids(r)) == (200, [u.id])
    assert r.json()[0]["identities"] == [
        {"provider": "ldapmain", "extern_uid": "uid=u,dc=example", "saml_provider_id": None}
    ]


def test_list_two_factor_filter_for_admins(api, make):
    tfa = make.user(two_factor_enabled=True)
    plain = make.user()
    r = api("root").get("/users", params={"two_factor": "enabled"})
    assert ids(r) == [tfa.id]
    r = api("root").get("/users", params={"two_factor": "disabled"})
    assert ids(r) == [plain.id, 1]


def test_list_two_factor_ignored_for_non_admins(api, make):
    tfa = make.user(two_factor_enabled=True)
    me = make.user()
    r = api(me).get("/users", params={"two_factor": "enabled"})
    assert ids(r) == [me.id, tfa.id, 1]


def test_list_two_factor_invalid_value_is_400(api):
    r = api("root").get("/users", params={"two_factor": "maybe"})
    assert (r.status_code, r.json()) == (400, {"error": "two_factor does not have a valid value"})


def test_list_admins_filter_for_admins(api, make):
    other_admin = make.admin()
    make.user()
    r = api("root").get("/users", params={"admins": "true"})
    assert ids(r) == [other_admin.id, 1]


def test_list_admins_filter_ignored_for_non_admins(api, make):
    make.admin()
    me = make.user()
    r = api(me).get("/users", params={"admins": "true"})
    assert len(r.json()) == 3


def test_list_custom_attributes_filter(api, make, db):
    a, b = make.user(), make.user()
    add_custom_attribute(db, a, "team", "red")
    add_custom_attribute(db, b, "team", "blue")
    add_custom_attribute(db, b, "tier", "gold")
    r = api("root").get("/users", params={"custom_attributes[team]": "red"})
    assert (r.status_code, ids(r)) == (200, [a.id])
    r = api("root").get(
        "/users", params={"custom_attributes[team]": "blue", "custom_attributes[tier]": "gold"}
    )
    assert ids(r) == [b.id]
    r = api("root").get(
        "/users", params={"custom_attributes[team]": "red", "custom_attributes[tier]": "gold"}
    )
    assert ids(r) == []


def test_list_custom_attributes_filter_ignored_for_non_admins(api, make, db):
    a, b = make.user(), make.user()
    add_custom_attribute(db, a, "team", "red")
    r = api(b).get("/users", params={"custom_attributes[team]": "red"})
    assert ids(r) == [b.id, a.id, 1]


def test_list_with_custom_attributes_adds_them_for_admins(api, make, db):
    a = make.user()
    add_custom_attribute(db, a, "b-key", "2")
    add_custom_attribute(db, a, "a-key", "1")
    r = api("root").get("/users", params={"with_custom_attributes": "true"})
    by_id = {u["id"]: u for u in r.json()}
    assert by_id[a.id]["custom_attributes"] == [
        {"key": "a-key", "value": "1"},
        {"key": "b-key", "value": "2"},
    ]
    assert by_id[1]["custom_attributes"] == []
    r = api("root").get("/users")
    assert "custom_attributes" not in r.json()[0]


def test_list_with_custom_attributes_not_for_non_admins(api, make, db):
    a = make.user()
    add_custom_attribute(db, a, "team", "red")
    r = api(a).get("/users", params={"with_custom_attributes": "true"})
    assert all("custom_attributes" not in u for u in r.json())


def test_get_user_with_custom_attributes(api, make, db):
    a = make.user()
    add_custom_attribute(db, a, "team", "red")
    r = api("root").get(f"/users/{a.id}", params={"with_custom_attributes": "true"})
    assert r.json()["custom_attributes"] == [{"key": "team", "value": "red"}]
    assert "custom_attributes" not in api("root").get(f"/users/{a.id}").json()


def test_list_order_by_and_sort_for_admins(api, make):
    make.user(username="mmm", name="B")
    make.user(username="aaa", name="C")
    make.user(username="zzz", name="A")
    r = api("root").get("/users", params={"order_by": "username", "sort": "asc"})
    assert [u["username"] for u in r.json()] == ["aaa", "mmm", "root", "zzz"]
    r = api("root").get("/users", params={"order_by": "username"})
    assert [u["username"] for u in r.json()] == ["zzz", "root", "mmm", "aaa"]
    r = api("root").get("/users", params={"order_by": "name", "sort": "asc"})
    assert [u["name"] for u in r.json()] == ["A", "Administrator", "B", "C"]
    r = api("root").get("/users", params={"order_by": "id", "sort": "asc"})
    assert ids(r) == sorted(ids(r))


def test_list_order_by_ignored_for_non_admins(api, make):
    a = make.user(username="aaa")
    z = make.user(username="zzz")
    r = api(a).get("/users", params={"order_by": "username", "sort": "asc"})
    assert ids(r) == [z.id, a.id, 1]


def test_list_order_by_invalid_is_400(api):
    r = api("root").get("/users", params={"order_by": "email"})
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_list_sort_invalid_is_400(api):
    r = api("root").get("/users", params={"sort": "up"})
    assert (r.status_code, r.json()) == (400, {"error": "sort does not have a valid value"})


def test_list_booleans_accept_python_gitlab_capitalisation(api, make):
    make.user(state="blocked")
    r = api("root").get("/users", params={"active": "True", "blocked": "False"})
    assert ids(r) == [1]


# ---------------------------------------------------------------- list: HEAD and pagination


def test_head_users_has_total_and_no_body(api, make):
    make.user()
    make.user()
    r = api("root").head("/users")
    assert r.status_code == 200
    assert r.headers["X-Total"] == "3"
    assert r.content == b""


def test_list_pagination_headers(api, make):
    for _ in range(4):
        make.user()
    r = api("root").get("/users", params={"per_page": 2, "page": 2})
    assert r.status_code == 200
    assert len(r.json()) == 2
    assert r.headers["X-Page"] == "2"
    assert r.headers["X-Per-Page"] == "2"
    assert r.headers["X-Total"] == "5"
    assert r.headers["X-Total-Pages"] == "3"
    assert r.headers["X-Next-Page"] == "3"
    assert r.headers["X-Prev-Page"] == "1"
    assert r.headers["Link"] == (
        '<http://kiln.test/api/v4/users?page=1&per_page=2>; rel="prev", '
        '<http://kiln.test/api/v4/users?page=3&per_page=2>; rel="next", '
        '<http://kiln.test/api/v4/users?page=1&per_page=2>; rel="first", '
        '<http://kiln.test/api/v4/users?page=3&per_page=2>; rel="last"'
    )
    last = api("root").get("/users", params={"per_page": 2, "page": 3})
    assert len(last.json()) == 1
    assert last.headers["X-Next-Page"] == ""
    seen = ids(api("root").get("/users", params={"per_page": 2, "page": 1})) + ids(r) + ids(last)
    assert seen == sorted(seen, reverse=True)
    assert len(set(seen)) == 5


def test_list_keyset_pagination(api, make):
    made = [make.user().id for _ in range(3)]
    r = api("root").get(
        "/users", params={"pagination": "keyset", "per_page": 2, "order_by": "id", "sort": "asc"}
    )
    assert (r.status_code, ids(r)) == (200, [1, made[0]])
    link = r.headers["Link"]
    assert link.endswith('>; rel="next"')
    following = api("root").get(link[1 : link.index(">")].removeprefix("http://kiln.test"))
    assert ids(following) == made[1:]
    assert "Link" not in following.headers


def test_list_per_page_zero_is_400(api):
    r = api("root").get("/users", params={"per_page": 0})
    assert (r.status_code, r.json()) == (400, {"error": "per_page has a value not allowed"})


# ---------------------------------------------------------------- single user views


def test_get_user_public_view(api, make):
    u = make.user(bio="hello", location="Mars", organization="Acme", job_title="Dev")
    r = api(make.user()).get(f"/users/{u.id}")
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= BASIC_FIELDS | PROFILE_FIELDS
    assert not set(body) & {"email", "is_admin", "current_sign_in_ip", "last_sign_in_ip", "identities"}
    assert (body["id"], body["bio"], body["location"], body["organization"]) == (
        u.id,
        "hello",
        "Mars",
        "Acme",
    )
    assert body["work_information"] == "Dev at Acme"
    assert body["created_at"].endswith("Z")


def test_get_user_private_profile_hides_profile_values(api, make):
    u = make.user(bio="secret", location="Hidden", private_profile=True)
    r = api(make.user()).get(f"/users/{u.id}")
    assert r.status_code == 200
    body = r.json()
    assert (body["bio"], body["location"], body["created_at"]) == ("", "", None)
    assert body["username"] == u.username
    # The owner and admins still see the values.
    assert api(u).get(f"/users/{u.id}").json()["bio"] == "secret"
    assert api("root").get(f"/users/{u.id}").json()["bio"] == "secret"


def test_get_user_anonymous_is_403(api, make):
    u = make.user()
    r = api().get(f"/users/{u.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Not authorized!"})


def test_get_user_non_numeric_id_is_no_route(api, make):
    make.user(username="named")
    r = api("root").get("/users/named")
    assert (r.status_code, r.json()) == (404, {"error": "404 Not Found"})


def test_get_user_unknown_is_404(api):
    r = api("root").get("/users/9999")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_get_user_admin_view(api, make):
    u = make.user()
    r = api("root").get(f"/users/{u.id}")
    assert r.status_code == 200
    body = r.json()
    assert set(body) >= BASIC_FIELDS | PROFILE_FIELDS | ADMIN_FIELDS
    assert (body["email"], body["is_admin"], body["identities"]) == (u.email, False, [])
    assert isinstance(body["namespace_id"], int)


def test_current_user_shows_its_own_identities_in_the_order_added(api, make, db):
    u, other = make.user(), make.user()
    add_identity(db, u, "saml", "uid=b")
    add_identity(db, other, "ldapmain", "uid=other")
    add_identity(db, u, "ldapmain", "uid=a")
    assert api(u).get("/user").json()["identities"] == [
        {"provider": "saml", "extern_uid": "uid=b", "saml_provider_id": None},
        {"provider": "ldapmain", "extern_uid": "uid=a", "saml_provider_id": None},
    ]


def test_current_user_self_view_has_no_sign_in_ips(api, make):
    u = make.user()
    r = api(u).get("/user")
    assert r.status_code == 200
    body = r.json()
    assert body["email"] == u.email
    assert set(body) >= BASIC_FIELDS | PROFILE_FIELDS | (
        ADMIN_FIELDS - {"is_admin", "current_sign_in_ip", "last_sign_in_ip"}
    )
    assert not set(body) & {"is_admin", "current_sign_in_ip", "last_sign_in_ip", "note"}


def test_current_user_admin_view(api):
    r = api("root").get("/user")
    assert r.status_code == 200
    body = r.json()
    assert (body["id"], body["username"], body["name"], body["is_admin"]) == (
        1,
        "root",
        "Administrator",
        True,
    )
    assert set(body) >= ADMIN_FIELDS
    assert body["web_url"] == "http://kiln.test/root"


def test_current_user_anonymous_is_401(api):
    r = api().get("/user")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_read_user_scope_reads_users_but_cannot_write(api, make):
    u = make.user(scopes=["read_user"])
    assert api(u).get("/users").status_code == 200
    assert api(u).get("/user").status_code == 200
    r = api(u).put("/user/status", json={"message": "hi"})
    assert r.status_code == 403
    assert r.json()["error"] == "insufficient_scope"


# ---------------------------------------------------------------- create


def test_create_user_returns_201_with_admin_view(api):
    r = api("root").post("/users", json=new_user(password="long-password-1", bio="b", projects_limit=5))
    assert r.status_code == 201
    body = r.json()
    assert set(body) >= BASIC_FIELDS | PROFILE_FIELDS | ADMIN_FIELDS
    assert (body["username"], body["email"], body["name"]) == ("newx", "newx@example.com", "New x")
    assert (body["bio"], body["projects_limit"], body["is_admin"], body["state"]) == ("b", 5, False, "active")
    assert api("root").get(f"/users/{body['id']}").json()["username"] == "newx"


def test_create_user_stores_email_in_lower_case(api):
    r = api("root").post("/users", json=new_user(email=" Mixed@Example.COM ", password="long-password-1"))
    assert (r.status_code, r.json()["email"]) == (201, "mixed@example.com")


def test_create_user_with_password_can_sign_in(api, client):
    r = api("root").post("/users", json=new_user(password="long-password-1"))
    assert r.status_code == 201
    signin = sign_in(client, {"user[login]": "newx", "user[password]": "long-password-1"})
    assert signin.status_code == 302


def test_create_user_with_reset_password_needs_no_password(api, client):
    r = api("root").post("/users", json=new_user(reset_password=True))
    assert r.status_code == 201
    assert r.json()["username"] == "newx"


def test_create_user_with_force_random_password_ignores_given_password(api, client):
    r = api("root").post("/users", json=new_user(force_random_password=True, password="long-password-1"))
    assert r.status_code == 201
    signin = sign_in(client, {"user[login]": "newx", "user[password]": "long-password-1"})
    assert signin.status_code == 401


def test_create_user_without_password_mode_is_400(api):
    r = api("root").post("/users", json=new_user())
    assert (r.status_code, r.json()) == (400, {"error": PASSWORD_MODES})


def test_create_user_with_both_flags_false_needs_password(api):
    r = api("root").post("/users", json=new_user(reset_password=False, force_random_password=False))
    assert (r.status_code, r.json()) == (400, {"error": "password is missing"})


def test_create_user_missing_required_fields_is_400(api):
    r = api("root").post("/users", json={"password": "long-password-1"})
    assert r.status_code == 400
    assert r.json() == {"error": "email is missing, name is missing, username is missing"}


def test_create_user_duplicate_email_is_409_case_insensitive(api, make):
    make.user(email="taken@example.com")
    r = api("root").post("/users", json=new_user(email="TAKEN@example.com", password="long-password-1"))
    assert (r.status_code, r.json()) == (409, {"message": "Email has already been taken"})


def test_create_user_duplicate_username_is_409_case_insensitive(api, make):
    make.user(username="taken")
    r = api("root").post("/users", json=new_user(username="TaKeN", password="long-password-1"))
    assert (r.status_code, r.json()) == (409, {"message": "Username has already been taken"})


def test_create_user_duplicate_wins_over_validation_errors(api, make):
    make.user(email="taken@example.com")
    r = api("root").post("/users", json=new_user(email="taken@example.com", password="short"))
    assert (r.status_code, r.json()) == (409, {"message": "Email has already been taken"})


def test_create_user_username_of_a_group_is_409(api, make):
    make.group(owners=[make.user()], path="teamspace")
    r = api("root").post("/users", json=new_user(username="TeamSpace", password="long-password-1"))
    assert (r.status_code, r.json()) == (409, {"message": "Username has already been taken"})


def test_create_user_invalid_email_is_400(api):
    r = api("root").post("/users", json=new_user(email="not-an-email", password="long-password-1"))
    assert (r.status_code, r.json()) == (400, {"message": {"email": ["is invalid"]}})


def test_create_user_bad_username_is_400(api):
    r = api("root").post("/users", json=new_user(username="bad name!", password="long-password-1"))
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "username": [
                "can contain only letters, digits, '_', '-' and '.'. "
                "Cannot start with '-' or end in '.', '.git' or '.atom'."
            ]
        }
    }


def test_create_user_short_password_is_400(api):
    r = api("root").post("/users", json=new_user(password="short"))
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"password": ["is too short (minimum is 8 characters)"]}},
    )


def test_create_user_several_model_errors_at_once(api):
    r = api("root").post(
        "/users", json=new_user(password="pass", username="test!", bio="x" * 256, projects_limit=-1)
    )
    assert r.status_code == 400
    message = r.json()["message"]
    assert message["password"] == ["is too short (minimum is 8 characters)"]
    assert message["bio"] == ["is too long (maximum is 255 characters)"]
    assert message["projects_limit"] == ["must be greater than or equal to 0"]
    assert len(message["username"]) == 1


def test_create_user_too_long_values_are_400(api):
    long = "x" * 256
    r = api("root").post(
        "/users",
        json=new_user(
            password="long-password-1",
            website_url=long,
            email=long + "@example.com",
            provider="p",
            extern_uid=long,
        ),
    )
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "email": ["is too long (maximum is 255 characters)"],
            "website_url": ["is too long (maximum is 255 characters)"],
            "extern_uid": ["is too long (maximum is 255 characters)"],
        }
    }


def test_create_user_invalid_theme_and_color_scheme_are_400(api):
    r = api("root").post("/users", json=new_user(password="long-password-1", theme_id=99, color_scheme_id=0))
    assert r.status_code == 400
    assert r.json() == {
        "message": {
            "theme_id": ["99 is not a valid theme"],
            "color_scheme_id": ["0 is not a valid color scheme"],
        }
    }


def test_create_user_with_taken_identity_is_400(api, make, db):
    add_identity(db, make.user(), "ldapmain", "cn=x")
    r = api("root").post(
        "/users", json=new_user(password="long-password-1", extern_uid="cn=x", provider="ldapmain")
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"identities.extern_uid": ["has already been taken"]}},
    )


def test_create_user_non_admin_is_403(api, make):
    r = api(make.user()).post("/users", json=new_user(password="long-password-1"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_create_user_anonymous_is_401(api):
    r = api().post("/users", json=new_user(password="long-password-1"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_create_user_form_encoded(api):
    r = api("root").post("/users", data=new_user(password="long-password-1", admin="true"))
    assert r.status_code == 201
    assert (r.json()["username"], r.json()["is_admin"]) == ("newx", True)


def test_create_user_query_string_like_python_gitlab(api):
    params = new_user(password="long-password-1", admin="True", external="False", can_create_group="False")
    r = api("root").post("/users", params=params, content=b"{}", headers={"Content-Type": "application/json"})
    assert r.status_code == 201
    body = r.json()
    assert (body["username"], body["is_admin"], body["external"], body["can_create_group"]) == (
        "newx",
        True,
        False,
        False,
    )


def test_create_user_ignores_unknown_fields(api):
    r = api("root").post("/users", json=new_user(password="long-password-1", favourite_colour="teal"))
    assert r.status_code == 201
    assert "favourite_colour" not in r.json()


def test_create_user_wrong_type_is_400(api):
    r = api("root").post("/users", json=new_user(password="long-password-1", projects_limit="abc"))
    assert (r.status_code, r.json()) == (400, {"error": "projects_limit is invalid"})


def test_create_user_private_profile_defaults_to_false(api):
    r = api("root").post("/users", json=new_user(password="long-password-1"))
    assert r.json()["private_profile"] is False


def test_create_user_with_identity(api):
    r = api("root").post(
        "/users", json=new_user(password="long-password-1", extern_uid="cn=x", provider="ldapmain")
    )
    assert r.status_code == 201
    assert r.json()["identities"] == [
        {"provider": "ldapmain", "extern_uid": "cn=x", "saml_provider_id": None}
    ]


def test_create_user_avatar_upload_is_served_without_auth(api, client):
    r = api("root").post(
        "/users",
        data=new_user(password="long-password-1"),
        files={"avatar": ("me.png", PNG)},
    )
    assert r.status_code == 201
    url = r.json()["avatar_url"]
    assert url == f"http://kiln.test/uploads/-/system/user/avatar/{r.json()['id']}/me.png"
    served = client.get(url)
    assert served.status_code == 200
    assert served.content == PNG
    assert served.headers["content-type"].startswith("image/png")


def test_create_user_avatar_wrong_format_is_400(api):
    r = api("root").post(
        "/users",
        data=new_user(password="long-password-1"),
        files={"avatar": ("me.txt", b"not an image")},
    )
    assert r.status_code == 400
    assert list(r.json()["message"]) == ["avatar"]
    assert r.json()["message"]["avatar"][0].startswith("file format is not supported")
    assert api("root").get("/users", params={"username": "newx"}).json() == []


# ---------------------------------------------------------------- update


def test_update_user_returns_200_with_changes(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"name": "Renamed", "bio": "new bio", "external": True})
    assert r.status_code == 200
    body = r.json()
    assert (body["id"], body["name"], body["bio"], body["external"]) == (u.id, "Renamed", "new bio", True)
    assert set(body) >= ADMIN_FIELDS
    assert api("root").get(f"/users/{u.id}").json()["name"] == "Renamed"


def test_update_user_renames_the_personal_namespace_too(api, make, db):
    from sqlalchemy import select

    from kiln.models import Namespace

    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"name": "New Name", "username": "new-path"})
    assert r.status_code == 200
    db.expire_all()
    ns = db.scalars(select(Namespace).where(Namespace.owner_id == u.id)).one()
    assert (ns.name, ns.path, r.json()["namespace_id"]) == ("New Name", "new-path", ns.id)


def test_update_user_with_nothing_changes_nothing(api, make):
    u = make.user(private_profile=True)
    r = api("root").put(f"/users/{u.id}", json={})
    assert r.status_code == 200
    assert (r.json()["name"], r.json()["private_profile"]) == (u.row.name, True)


def test_update_user_username_frees_the_old_one(api, make):
    u = make.user(username="before")
    r = api("root").put(f"/users/{u.id}", json={"username": "after"})
    assert (r.status_code, r.json()["username"], r.json()["web_url"]) == (
        200,
        "after",
        "http://kiln.test/after",
    )
    assert (
        api("root").post("/users", json=new_user(username="before", password="long-password-1")).status_code
        == 201
    )


def test_update_user_duplicate_email_is_404(api, make):
    make.user(email="taken@example.com")
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"email": "Taken@Example.com"})
    assert r.status_code == 404
    assert r.json() == {"message": "404 Email has already been taken"}


def test_update_user_duplicate_username_is_404(api, make):
    make.user(username="taken")
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"username": "TAKEN"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Username has already been taken"})


def test_update_user_own_email_and_username_are_fine(api, make):
    u = make.user(username="Same", email="same@example.com")
    r = api("root").put(f"/users/{u.id}", json={"username": "same", "email": "SAME@example.com"})
    assert (r.status_code, r.json()["username"]) == (200, "same")


def test_update_user_invalid_values_are_400(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"email": "nope", "password": "short"})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"email": ["is invalid"], "password": ["is too short (minimum is 8 characters)"]}
    }


def test_update_user_unknown_is_404(api):
    r = api("root").put("/users/9999", json={"name": "x"})
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_update_user_non_admin_is_403(api, make):
    u = make.user()
    r = api(u).put(f"/users/{u.id}", json={"name": "Self"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_update_user_password_forces_change_at_next_sign_in(api, make, client):
    u = make.user(username="expiring")
    r = api("root").put(f"/users/{u.id}", json={"password": "admin-set-pw-1"})
    assert r.status_code == 200
    signin = sign_in(client, {"user[login]": "expiring", "user[password]": "admin-set-pw-1"})
    assert signin.status_code == 403
    signin = sign_in(
        client,
        {
            "user[login]": "expiring",
            "user[password]": "admin-set-pw-1",
            "user[new_password]": "my-own-pw-12",
        },
    )
    assert signin.status_code == 302
    signin = sign_in(client, {"user[login]": "expiring", "user[password]": "my-own-pw-12"})
    assert signin.status_code == 302


def test_update_user_admin_flag_and_note(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", params={"admin": "True", "note": "trusted"}, json={})
    assert r.status_code == 200
    assert (r.json()["is_admin"], r.json()["note"]) == (True, "trusted")
    assert api(u).get("/users", params={"admins": "true"}).status_code == 200
    assert api(u).get("/user").json()["is_admin"] is True


def test_update_user_avatar_upload_then_empty_removes_it(api, make, client):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", files={"avatar": ("face.png", PNG)})
    assert r.status_code == 200
    url = r.json()["avatar_url"]
    assert url.endswith("/face.png")
    assert client.get(url).status_code == 200
    r = api("root").put(f"/users/{u.id}", json={"avatar": ""})
    assert (r.status_code, r.json()["avatar_url"]) == (200, None)
    assert client.get(url).status_code == 404


def test_update_user_wrong_type_is_400(api, make):
    u = make.user()
    r = api("root").put(f"/users/{u.id}", json={"theme_id": "dark"})
    assert (r.status_code, r.json()) == (400, {"error": "theme_id is invalid"})


# ---------------------------------------------------------------- delete


def test_delete_user_is_204_and_user_is_gone(api, make):
    u = make.user()
    r = api("root").delete(f"/users/{u.id}")
    assert (r.status_code, r.content) == (204, b"")
    r = api("root").get(f"/users/{u.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_delete_user_unknown_is_404(api):
    r = api("root").delete("/users/9999")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_delete_user_non_admin_is_403(api, make):
    u = make.user()
    r = api(make.user()).delete(f"/users/{u.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_delete_user_frees_username_and_email(api, make):
    u = make.user(username="reuse", email="reuse@example.com")
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    r = api("root").post(
        "/users", json=new_user(username="reuse", email="reuse@example.com", password="long-password-1")
    )
    assert r.status_code == 201


def test_a_deleted_users_id_is_never_handed_out_again(api, make):
    """Ids are never reused (GitLab's are not): clients hold them, and a user's id names its
    avatar's files, removed after the delete."""
    newest = make.user()
    assert api("root").delete(f"/users/{newest.id}?hard_delete=true").status_code == 204
    r = api("root").post("/users", json=new_user(n="after", password="long-password-1"))
    assert r.status_code == 201, r.text
    assert r.json()["id"] > newest.id


def test_soft_delete_creates_a_ghost_user_that_cannot_be_removed(api, make):
    first, second = make.user(), make.user()
    assert api("root").delete(f"/users/{first.id}").status_code == 204
    assert api("root").delete(f"/users/{second.id}").status_code == 204
    ghosts = ghost_of(api)
    assert len(ghosts) == 1
    ghost = ghosts[0]
    assert (ghost["username"], ghost["name"]) == ("ghost", "Ghost User")
    r = api("root").delete(f"/users/{ghost['id']}")
    assert r.status_code == 403
    r = api("root").post(f"/users/{ghost['id']}/block")
    assert (r.status_code, r.json()) == (403, {"message": "An internal user cannot be blocked"})
    assert len(ghost_of(api)) == 1


def test_hard_delete_creates_no_ghost_user(api, make):
    u = make.user()
    assert api("root").delete(f"/users/{u.id}", params={"hard_delete": "True"}).status_code == 204
    assert ghost_of(api) == []


def test_delete_sole_group_owner_is_409(api, make):
    u = make.user()
    make.group(owners=[u])
    r = api("root").delete(f"/users/{u.id}")
    assert r.status_code == 409
    assert r.json() == {"message": "User cannot be removed while is the sole-owner of a group"}
    assert api("root").get(f"/users/{u.id}").status_code == 200


def test_delete_co_owner_of_a_group_is_allowed(api, make, db):
    u, other = make.user(), make.user()
    group = make.group(owners=[u, other])
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    from kiln.models import Namespace

    db.expire_all()
    assert db.get(Namespace, group.id) is not None


def test_hard_delete_removes_user_and_solely_owned_group(api, make, db):
    from kiln.models import Namespace

    u = make.user()
    group = make.group(owners=[u])
    group_id, group_path = group.id, group.path
    r = api("root").delete(f"/users/{u.id}", params={"hard_delete": "true"})
    assert r.status_code == 204
    assert api("root").get(f"/users/{u.id}").status_code == 404
    db.expire_all()
    assert db.get(Namespace, group_id) is None
    # The group's path is free again.
    assert (
        api("root").post("/users", json=new_user(username=group_path, password="long-password-1")).status_code
        == 201
    )


def test_deleted_users_token_stops_working(api, make):
    u = make.user()
    assert api(u).get("/user").status_code == 200
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_delete_user_with_avatar_removes_the_file(api, make, client):
    u = make.user()
    url = api("root").put(f"/users/{u.id}", files={"avatar": ("a.png", PNG)}).json()["avatar_url"]
    assert api("root").delete(f"/users/{u.id}").status_code == 204
    assert client.get(url).status_code == 404


# ---------------------------------------------------------------- identities


def test_delete_identity_is_204(api, make, db):
    u = make.user()
    add_identity(db, u, "ldapmain", "cn=u")
    add_identity(db, u, "saml", "u@idp")
    r = api("root").delete(f"/users/{u.id}/identities/ldapmain")
    assert (r.status_code, r.content) == (204, b"")
    assert api("root").get(f"/users/{u.id}").json()["identities"] == [
        {"provider": "saml", "extern_uid": "u@idp", "saml_provider_id": None}
    ]


def test_delete_identity_unknown_provider_is_404(api, make):
    u = make.user()
    r = api("root").delete(f"/users/{u.id}/identities/ldapmain")
    assert (r.status_code, r.json()) == (404, {"message": "404 Identity Not Found"})


def test_delete_identity_unknown_user_is_404(api):
    r = api("root").delete("/users/9999/identities/ldapmain")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_delete_identity_non_admin_is_403(api, make, db):
    u = make.user()
    add_identity(db, u, "ldapmain", "cn=u")
    r = api(u).delete(f"/users/{u.id}/identities/ldapmain")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


# ---------------------------------------------------------------- block / unblock


def test_block_returns_true_then_null(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/block")
    assert (r.status_code, r.json()) == (201, True)
    r = api("root").post(f"/users/{u.id}/block")
    assert (r.status_code, r.content) == (201, b"null")
    assert api("root").get(f"/users/{u.id}").json()["state"] == "blocked"


def test_unblock_returns_true_then_false(api, make):
    u = make.user(state="blocked")
    r = api("root").post(f"/users/{u.id}/unblock")
    assert (r.status_code, r.json()) == (201, True)
    r = api("root").post(f"/users/{u.id}/unblock")
    assert (r.status_code, r.json()) == (201, False)
    assert api("root").get(f"/users/{u.id}").json()["state"] == "active"


def test_blocked_users_token_is_403(api, make):
    u = make.user()
    assert api("root").post(f"/users/{u.id}/block").status_code == 201
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})
    assert api("root").post(f"/users/{u.id}/unblock").status_code == 201
    assert api(u).get("/user").status_code == 200


def test_blocked_user_cannot_sign_in(api, make, client):
    u = make.user()
    api("root").post(f"/users/{u.id}/block")
    r = sign_in(client, {"user[login]": u.username, "user[password]": u.password})
    assert r.status_code == 401


def test_block_yourself_is_403(api, make):
    admin = make.admin()
    r = api(admin).post(f"/users/{admin.id}/block")
    assert r.status_code == 403
    assert r.json() == {"message": "403 Forbidden - The API initiating user cannot be blocked by the API"}


def test_block_non_admin_is_403(api, make):
    u = make.user()
    for action in ("block", "unblock"):
        r = api(make.user()).post(f"/users/{u.id}/{action}")
        assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_block_unknown_user_is_404(api):
    for action in ("block", "unblock"):
        r = api("root").post(f"/users/9999/{action}")
        assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_block_anonymous_is_401(api, make):
    u = make.user()
    r = api().post(f"/users/{u.id}/block")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


# ---------------------------------------------------------------- root


def test_root_is_user_one(api):
    r = api("root").get("/users/1")
    body = r.json()
    assert (r.status_code, body["username"], body["name"], body["is_admin"]) == (
        200,
        "root",
        "Administrator",
        True,
    )


def test_root_can_sign_in_with_its_password(client):
    r = sign_in(client, {"user[login]": "root", "user[password]": ROOT_PASSWORD})
    assert r.status_code == 302


def test_json_and_form_give_the_same_user(api):
    a = api("root").post(
        "/users",
        content=json.dumps(new_user(n="a", password="long-password-1")),
        headers={"Content-Type": "application/json"},
    )
    b = api("root").post("/users", data=new_user(n="b", password="long-password-1"))
    assert (a.status_code, b.status_code) == (201, 201)
    drop = {
        "id",
        "username",
        "name",
        "email",
        "web_url",
        "created_at",
        "confirmed_at",
        "namespace_id",
        "commit_email",
    }
    assert {k: v for k, v in a.json().items() if k not in drop} == {
        k: v for k, v in b.json().items() if k not in drop
    }


def test_update_private_profile_null_is_treated_as_false(api, make):
    u = make.user(private_profile=True)
    r = api("root").put(f"/users/{u.id}", json={"private_profile": None})
    assert (r.status_code, r.json()["private_profile"]) == (200, False)


def test_update_other_null_fields_mean_not_given(api, make):
    u = make.user(bio="kept")
    r = api("root").put(f"/users/{u.id}", json={"bio": None, "name": "New"})
    assert (r.status_code, r.json()["bio"], r.json()["name"]) == (200, "kept", "New")


def test_delete_with_if_unmodified_since_before_a_change_is_412(api, make):
    u = make.user()
    api("root").put(f"/users/{u.id}", json={"bio": "changed"})
    r = api("root").delete(f"/users/{u.id}", headers={"If-Unmodified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert (r.status_code, r.json()) == (412, {"message": "412 Precondition Failed"})
    assert api("root").get(f"/users/{u.id}").status_code == 200


def test_delete_with_if_unmodified_since_after_the_last_change_deletes(api, make):
    u = make.user()
    r = api("root").delete(f"/users/{u.id}", headers={"If-Unmodified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"})
    assert r.status_code == 204


def test_delete_with_an_unparseable_if_unmodified_since_ignores_it(api, make):
    u = make.user()
    r = api("root").delete(f"/users/{u.id}", headers={"If-Unmodified-Since": "yesterday-ish"})
    assert r.status_code == 204


def test_can_create_project_needs_a_projects_limit_and_an_internal_user(api, make):
    """The self and admin views (single and listed) say whether the user may create projects."""
    plain, external, limited = make.user(), make.user(external=True), make.user(projects_limit=0)
    assert api(plain).get("/user").json()["can_create_project"] is True
    assert api(external).get("/user").json()["can_create_project"] is False
    assert api(limited).get("/user").json()["can_create_project"] is False
    listed = {u["id"]: u["can_create_project"] for u in api("root").get("/users?per_page=100").json()}
    assert (listed[plain.id], listed[external.id], listed[limited.id]) == (True, False, False)


# ---------------------------------------------------------------- without_projects


def without_projects(api, *users):
    """Which of `users` the administrator's `without_projects=true` list shows."""
    r = api("root").get("/users", params={"without_projects": "true", "per_page": 100})
    assert r.status_code == 200
    listed = set(ids(r))
    return {u.id for u in users if u.id in listed}


def test_without_projects_lists_users_who_reach_no_project(api, make):
    lonely = make.user()
    assert without_projects(api, lonely) == {lonely.id}


def test_without_projects_leaves_out_owners_of_personal_projects(api, make):
    owner = make.user()
    make.project(owner=owner)
    assert without_projects(api, owner) == set()


def test_without_projects_leaves_out_project_members(api, make):
    member = make.user()
    make.project(members={member: 10})
    assert without_projects(api, member) == set()


def test_without_projects_leaves_out_members_of_groups_holding_projects(api, make):
    member, idle = make.user(), make.user()
    parent = make.group(members={member: 30})
    child = make.group(parent=parent)
    make.project(namespace=child)
    make.group(members={idle: 30})  # a group without projects gives access to none
    assert without_projects(api, member, idle) == {idle.id}


def test_without_projects_leaves_out_members_of_groups_a_project_is_shared_with(api, make, db):
    from kiln.models import ProjectGroupLink

    member = make.user()
    group = make.group(members={member: 30})
    project = make.project()
    with transaction(db):
        db.add(ProjectGroupLink(project_id=project.id, group_id=group.id, group_access=30))
    assert without_projects(api, member) == set()


def test_without_projects_ignores_access_requests_and_expired_memberships(api, make):
    from datetime import date

    requester, expired = make.user(), make.user()
    project = make.project()
    make.member(project, requester, 30, requested_at=datetime.now(UTC))
    make.member(project, expired, 30, expires_at=date(2000, 1, 1))
    assert without_projects(api, requester, expired) == {requester.id, expired.id}


def test_without_projects_is_ignored_for_non_administrators(api, make):
    owner, caller = make.user(), make.user()
    make.project(owner=owner)
    r = api(caller).get("/users", params={"without_projects": "true", "per_page": 100})
    assert owner.id in ids(r)


# ---------------------------------------------------------------- defaults of a new user


def test_new_user_takes_the_instance_defaults(api, db):
    from kiln.services import instance_settings

    instance_settings.update(db, {"default_projects_limit": 7, "can_create_group": False})
    r = api("root").post("/users", data=new_user(n="defaults", password="secret-123"))
    assert r.status_code == 201, r.text
    assert (r.json()["projects_limit"], r.json()["can_create_group"]) == (7, False)


def test_given_limits_win_over_the_instance_defaults(api, db):
    from kiln.services import instance_settings

    instance_settings.update(db, {"default_projects_limit": 7, "can_create_group": False})
    data = new_user(n="given", password="secret-123", projects_limit=3, can_create_group="true")
    r = api("root").post("/users", data=data)
    assert (r.json()["projects_limit"], r.json()["can_create_group"]) == (3, True)


def test_new_external_user_can_create_nothing(api):
    data = new_user(n="ext", password="secret-123", external="true", projects_limit=5)
    r = api("root").post("/users", data=data)
    assert (r.json()["projects_limit"], r.json()["can_create_group"]) == (0, False)


def test_administrators_create_users_outside_the_sign_up_domains(api, db):
    from kiln.services import instance_settings

    instance_settings.update(db, {"domain_whitelist": ["allowed.test"]})
    r = api("root").post("/users", data=new_user(n="outside", password="secret-123"))
    assert r.status_code == 201, r.text
