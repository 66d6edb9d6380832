"""Further e-mail addresses: GitLab's Users API "Emails" (/user/emails and the administrators'
/users/:id/emails), one rule per test."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kiln.models import Email
from tests.bodies import FORBIDDEN, UNAUTHORIZED
from tests.statements import count

TAKEN = {"message": {"email": ["has already been taken"]}}
EMAIL_NOT_FOUND = {"message": "404 Email Not Found"}


def add(api, caller, address: str):
    return api(caller).post("/user/emails", json={"email": address})


def email_rows(db) -> int:
    return db.scalar(select(func.count()).select_from(Email))


def test_adding_an_address_answers_it_unconfirmed(api, make):
    r = add(api, make.user(), "second@example.org")
    body = r.json()
    assert r.status_code == 201
    assert body == {"id": body["id"], "email": "second@example.org", "confirmed_at": None}


def test_the_address_is_required(api, make):
    r = api(make.user()).post("/user/emails", json={})
    assert (r.status_code, r.json()) == (400, {"error": "email is missing"})


def test_an_invalid_address_is_refused(api, make, db):
    r = add(api, make.user(), "not-an-address")
    assert (r.status_code, r.json()) == (400, {"message": {"email": ["is invalid"]}})
    assert email_rows(db) == 0


def test_a_blank_address_is_refused(api, make):
    assert add(api, make.user(), "").json() == {"message": {"email": ["can't be blank"]}}


def test_an_address_that_is_someones_primary_address_is_refused(api, make, db):
    other = make.user()
    r = add(api, make.user(), other.email.upper())
    assert (r.status_code, r.json()) == (400, TAKEN)
    assert email_rows(db) == 0


def test_ones_own_primary_address_is_refused(api, make):
    u = make.user()
    assert add(api, u, u.email).json() == TAKEN


def test_an_address_someone_added_already_is_refused_in_any_case(api, make):
    add(api, make.user(), "shared@example.org")
    assert add(api, make.user(), "Shared@Example.ORG").json() == TAKEN


def test_own_addresses_are_listed_and_shown(api, make):
    u = make.user()
    first = add(api, u, "one@example.org").json()
    second = add(api, u, "two@example.org").json()
    add(api, make.user(), "else@example.org")
    r = api(u).get("/user/emails")
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [first, second], "2")
    assert api(u).get(f"/user/emails/{first['id']}").json() == first


def test_someone_elses_address_is_not_found_under_user(api, make):
    e = add(api, make.user(), "mine@example.org").json()
    other = make.user()
    r = api(other).get(f"/user/emails/{e['id']}")
    assert (r.status_code, r.json()) == (404, EMAIL_NOT_FOUND)
    assert api(other).delete(f"/user/emails/{e['id']}").json() == EMAIL_NOT_FOUND


def test_deleting_an_own_address(api, make, db):
    u = make.user()
    e = add(api, u, "gone@example.org").json()
    assert api(u).delete(f"/user/emails/{e['id']}").status_code == 204
    assert email_rows(db) == 0
    assert add(api, make.user(), "gone@example.org").status_code == 201


def test_own_addresses_need_a_signed_in_user(api):
    assert api().get("/user/emails").json() == UNAUTHORIZED


def test_an_administrator_adds_a_confirmed_address_for_a_user(api, make):
    u = make.user()
    r = api("root").post(
        f"/users/{u.id}/emails", json={"email": "ops@example.org", "skip_confirmation": True}
    )
    assert r.status_code == 201
    assert r.json()["confirmed_at"].endswith("Z")
    assert api(u).get("/user/emails").json() == [r.json()]


def test_an_administrator_adds_an_unconfirmed_address_by_default(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/emails", json={"email": "ops@example.org"})
    assert r.json()["confirmed_at"] is None


def test_an_administrator_lists_and_deletes_a_users_addresses(api, make, db):
    u = make.user()
    e = add(api, u, "x@example.org").json()
    assert api("root").get(f"/users/{u.id}/emails").json() == [e]
    assert api("root").delete(f"/users/{u.id}/emails/{e['id']}").status_code == 204
    r = api("root").delete(f"/users/{u.id}/emails/{e['id']}")
    assert (r.status_code, r.json()) == (404, EMAIL_NOT_FOUND)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/users/{id}/emails", None),
        ("POST", "/users/{id}/emails", {"email": "z@example.org"}),
        ("DELETE", "/users/{id}/emails/1", None),
    ],
)
def test_only_administrators_manage_a_users_addresses(api, make, method, path, body):
    u = make.user()
    r = api(u).request(method, path.format(id=u.id), json=body)
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_addresses_of_an_unknown_user(api):
    r = api("root").get("/users/999999/emails")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def _insert(db, user_id: int, n: int) -> None:
    db.add_all(Email(user_id=user_id, email=f"u{user_id}-{i}@example.org") for i in range(n))
    db.commit()


@pytest.mark.parametrize(("caller", "route"), [("self", "/user/emails"), ("root", "/users/{id}/emails")])
def test_address_lists_cost_the_same_for_2_and_12_addresses(api, make, db, runtime, caller, route):
    few, many = make.user(), make.user()
    _insert(db, few.id, 2)
    _insert(db, many.id, 12)
    costs = [
        count(
            runtime,
            lambda u=u: api(u if caller == "self" else "root").get(
                route.format(id=u.id), params={"per_page": 50}
            ),
            leaving_out=("application_settings",),  # read by the rate limits' settings check, not the route
        )
        for u in (few, many)
    ]
    assert costs[0] == costs[1]
    assert costs[0] <= 4
    sizes = [
        len(api(u if caller == "self" else "root").get(route.format(id=u.id), params={"per_page": 50}).json())
        for u in (few, many)
    ]
    assert sizes == [2, 12]


def test_a_deleted_addresss_id_is_never_handed_out_again(api, make):
    u = make.user()
    newest = add(api, u, "first@example.net").json()
    assert api(u).delete(f"/user/emails/{newest['id']}").status_code == 204
    again = add(api, u, "second@example.net")
    assert again.status_code == 201
    assert again.json()["id"] > newest["id"]
