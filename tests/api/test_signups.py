"""Sign-up, as GitLab's web registration: `POST /users` at the root with `user[...]` fields,
within the instance's rules (sign-up on, e-mail domains, admin approval, defaults of a new
user, reserved names and the usual username, e-mail and password rules)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kiln.models import Namespace, User
from kiln.services import instance_settings


def form(n: str = "x", **fields: str) -> dict[str, str]:
    values = {
        "username": f"signup{n}",
        "email": f"signup{n}@example.com",
        "password": "secret-pass-1",
        "name": f"Sign Up {n}",
        **fields,
    }
    return {f"user[{key}]": value for key, value in values.items() if value is not None}


def sign_up(client, data):
    return client.post("/users", data=data, follow_redirects=False)


def users_named(db, username: str) -> int:
    return db.scalar(select(func.count()).select_from(User).where(User.username == username))


@pytest.fixture
def open_signup(db):
    """Sign-up on without admin approval: new users are active at once."""
    instance_settings.update(db, {"signup_enabled": True, "require_admin_approval_after_user_signup": False})


def test_sign_up_creates_an_active_user(client, api, open_signup):
    r = sign_up(client, form("a"))
    assert r.status_code == 302
    assert r.headers["location"].endswith("/users/sign_in")
    assert r.json()["message"] == "Welcome! You have signed up successfully."
    user = api("root").get("/users", params={"username": "signupa"}).json()[0]
    assert (user["state"], user["name"]) == ("active", "Sign Up a")


def test_signed_up_user_signs_in_with_the_password(client, open_signup):
    sign_up(client, form("b"))
    r = client.post(
        "/users/sign_in",
        data={"user[login]": "signupb", "user[password]": "secret-pass-1"},
        follow_redirects=False,
    )
    assert r.status_code == 302


def test_sign_up_with_first_and_last_name(client, api, open_signup):
    sign_up(client, form("c", name=None, first_name="Ada", last_name="Lovelace"))
    assert api("root").get("/users", params={"username": "signupc"}).json()[0]["name"] == "Ada Lovelace"


def test_sign_up_gives_the_user_a_namespace(client, db, open_signup):
    sign_up(client, form("d"))
    assert db.scalar(select(func.count()).select_from(Namespace).where(Namespace.path == "signupd")) == 1


def test_sign_up_off_is_404(client, db):
    instance_settings.update(db, {"signup_enabled": False})
    r = sign_up(client, form("off"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})
    assert users_named(db, "signupoff") == 0


def test_admin_approval_leaves_the_new_user_pending(client, api, db):
    instance_settings.update(db, {"signup_enabled": True, "require_admin_approval_after_user_signup": True})
    r = sign_up(client, form("p"))
    assert r.status_code == 302
    assert r.json()["message"] == (
        "You have signed up successfully. However, we could not sign you in because your account "
        "is awaiting approval from your GitLab administrator."
    )
    user = api("root").get("/users", params={"username": "signupp"}).json()[0]
    assert user["state"] == "blocked_pending_approval"
    signed_in = client.post(
        "/users/sign_in",
        data={"user[login]": "signupp", "user[password]": "secret-pass-1"},
        follow_redirects=False,
    )
    assert signed_in.status_code == 401
    assert api("root").post(f"/users/{user['id']}/approve").status_code == 201
    assert api("root").get(f"/users/{user['id']}").json()["state"] == "active"


def test_new_user_takes_the_instance_defaults(client, api, db, open_signup):
    instance_settings.update(db, {"default_projects_limit": 5, "can_create_group": False})
    sign_up(client, form("def"))
    user = api("root").get("/users", params={"username": "signupdef"}).json()[0]
    detail = api("root").get(f"/users/{user['id']}").json()
    assert (detail["projects_limit"], detail["can_create_group"]) == (5, False)


# ---------------------------------------------------------------- e-mail domains


@pytest.mark.parametrize("email", ["a@example.com", "b@sub.corp.test", "c@DEEP.SUB.CORP.TEST"])
def test_allowed_domains_let_matching_addresses_in(client, db, open_signup, email):
    instance_settings.update(db, {"domain_whitelist": ["example.com", "*.corp.test"]})
    r = sign_up(client, form(email.split("@")[0], email=email))
    assert r.status_code == 302, r.text


@pytest.mark.parametrize("email", ["a@example.org", "b@corp.test", "c@evil-example.com"])
def test_allowed_domains_keep_others_out(client, db, open_signup, email):
    instance_settings.update(db, {"domain_whitelist": ["example.com", "*.corp.test"]})
    name = email.split("@")[0]
    r = sign_up(client, form(name, email=email))
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"email": ["domain is not authorized for sign-up"]}},
    )
    assert users_named(db, f"signup{name}") == 0


def test_denied_domains_keep_their_addresses_out(client, db, open_signup):
    instance_settings.update(db, {"domain_blacklist_enabled": True, "domain_blacklist": ["*.spam.test"]})
    r = sign_up(client, form("spam", email="x@mail.spam.test"))
    assert (r.status_code, r.json()) == (400, {"message": {"email": ["is not from an allowed domain."]}})


def test_denied_domains_are_ignored_while_switched_off(client, db, open_signup):
    instance_settings.update(db, {"domain_blacklist_enabled": False, "domain_blacklist": ["spam.test"]})
    assert sign_up(client, form("spamoff", email="x@spam.test")).status_code == 302


def test_allowed_domains_win_over_denied_ones(client, db, open_signup):
    instance_settings.update(
        db,
        {
            "domain_whitelist": ["spam.test"],
            "domain_blacklist_enabled": True,
            "domain_blacklist": ["spam.test"],
        },
    )
    assert sign_up(client, form("both", email="x@spam.test")).status_code == 302


# ---------------------------------------------------------------- the usual rules


def test_reserved_username_is_refused(client, db, open_signup):
    r = sign_up(client, form("r", username="Admin"))
    assert (r.status_code, r.json()) == (400, {"message": {"username": ["Admin is a reserved name"]}})


def test_taken_username_and_email_are_refused(client, make, db, open_signup):
    taken = make.user()
    r = sign_up(client, form("t", username=taken.username.upper(), email=taken.email))
    assert r.status_code == 400
    assert r.json() == {
        "message": {"email": ["has already been taken"], "username": ["has already been taken"]}
    }


def test_short_password_is_refused(client, db, open_signup):
    r = sign_up(client, form("s", password="short"))
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"password": ["is too short (minimum is 8 characters)"]}},
    )
    assert users_named(db, "signups") == 0


def test_missing_fields_are_all_reported(client, db, open_signup):
    r = sign_up(client, {"user[username]": ""})
    assert r.status_code == 400
    errors = r.json()["message"]
    assert errors["username"] == ["can't be blank"]
    assert errors["name"] == ["can't be blank"]
    assert errors["password"] == ["can't be blank"]
    assert "email" in errors


def test_no_user_fields_is_400(client, open_signup):
    r = sign_up(client, {})
    assert (r.status_code, r.json()) == (400, {"error": "user is missing"})
