"""Sign-up, as GitLab's web registration: `POST /users` at the root with `user[...]` fields,
within the instance's rules (sign-up on, e-mail domains, admin approval, defaults of a new
user, reserved names and the usual username, e-mail and password rules)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from kiln.errors import ValidationFailed
from kiln.models import Namespace, User
from kiln.schemas.users import UserCreate
from kiln.services import instance_settings
from kiln.services import users as user_service


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


def test_signed_up_user_signs_in_with_the_password(client, api, open_signup):
    assert sign_up(client, form("b")).status_code == 302
    r = client.post(
        "/users/sign_in",
        data={"user[login]": "signupb", "user[password]": "secret-pass-1"},
        follow_redirects=False,
    )
    assert r.status_code == 302
    assert api().get("/user").json()["username"] == "signupb"


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
    name = email.split("@")[0]
    r = sign_up(client, form(name, email=email))
    assert r.status_code == 302, r.text
    assert users_named(db, f"signup{name}") == 1


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
    assert users_named(db, "signupspam") == 0


def test_denied_domains_are_ignored_while_switched_off(client, db, open_signup):
    instance_settings.update(db, {"domain_blacklist_enabled": False, "domain_blacklist": ["spam.test"]})
    assert sign_up(client, form("spamoff", email="x@spam.test")).status_code == 302
    assert users_named(db, "signupspamoff") == 1


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
    assert users_named(db, "signupboth") == 1


# ---------------------------------------------------------------- e-mail confirmation


def confirmed_at(api, username: str):
    user = api("root").get("/users", params={"username": username}).json()[0]
    return api("root").get(f"/users/{user['id']}").json()["confirmed_at"]


def test_confirmation_off_confirms_the_address_at_once(client, api, db, open_signup):
    instance_settings.update(db, {"email_confirmation_setting": "off"})
    assert sign_up(client, form("coff")).status_code == 302
    assert confirmed_at(api, "signupcoff") is not None


@pytest.mark.parametrize("setting", ["soft", "hard"])
def test_confirmation_soft_or_hard_leaves_the_address_unconfirmed(client, api, db, open_signup, setting):
    instance_settings.update(db, {"email_confirmation_setting": setting})
    assert sign_up(client, form(f"c{setting}")).status_code == 302
    assert confirmed_at(api, f"signupc{setting}") is None


# ---------------------------------------------------------------- e-mail restrictions

RESTRICTED = {
    "message": {
        "email": ["is not allowed. Try again with a different email address, or contact your GitLab admin."]
    }
}


def test_email_restrictions_refuse_matching_addresses(client, db, open_signup):
    instance_settings.update(
        db, {"email_restrictions_enabled": True, "email_restrictions": r"^[^@]+\+[^@]+@"}
    )
    r = sign_up(client, form("plus", email="someone+alias@example.com"))
    assert (r.status_code, r.json()) == (400, RESTRICTED)
    assert users_named(db, "signupplus") == 0
    assert sign_up(client, form("noplus", email="someone@example.com")).status_code == 302


def test_email_restrictions_are_ignored_while_switched_off(client, db, open_signup):
    instance_settings.update(db, {"email_restrictions_enabled": False, "email_restrictions": "example"})
    assert sign_up(client, form("roff", email="roff@example.com")).status_code == 302
    assert users_named(db, "signuproff") == 1


def test_email_restrictions_do_not_bind_an_administrator(api, db, open_signup):
    instance_settings.update(db, {"email_restrictions_enabled": True, "email_restrictions": "example"})
    r = api("root").post(
        "/users",
        json={"username": "radmin", "email": "radmin@example.com", "name": "R", "password": "secret-pass-1"},
    )
    assert r.status_code == 201, r.text
    assert users_named(db, "radmin") == 1


def test_email_restrictions_that_do_not_compile_refuse_nothing(client, db, open_signup, caplog):
    instance_settings.update(db, {"email_restrictions_enabled": True, "email_restrictions": "(unclosed"})
    with caplog.at_level("WARNING", logger="kiln.services.users"):
        assert sign_up(client, form("rbad", email="rbad@example.com")).status_code == 302
    assert any("does not compile" in r.getMessage() for r in caplog.records)


def test_email_restrictions_that_run_away_refuse(client, db, open_signup, monkeypatch):
    # Catastrophic backtracking: stopped at the time limit, and the address is refused.
    monkeypatch.setattr(user_service, "EMAIL_RESTRICTIONS_TIMEOUT_S", 0.5)
    instance_settings.update(db, {"email_restrictions_enabled": True, "email_restrictions": "^(a+)+@"})
    r = sign_up(client, form("slow", email="a" * 40 + "!@example.com"))
    assert (r.status_code, r.json()) == (400, RESTRICTED)
    assert users_named(db, "signupslow") == 0


# ---------------------------------------------------------------- the usual rules


def test_email_with_a_trailing_newline_is_invalid(db, settings, open_signup):
    # The form trims addresses; the model check itself must match the whole address.
    p = UserCreate.model_construct(
        username="signupnl", email="nl@example.com\n", name="NL", password="secret-pass-1"
    )
    with pytest.raises(ValidationFailed) as refused:
        user_service.register(db, p, settings)
    assert refused.value.errors == {"email": ["is invalid"]}
    assert users_named(db, "signupnl") == 0


def test_reserved_username_is_refused(client, db, open_signup):
    r = sign_up(client, form("r", username="Admin"))
    assert (r.status_code, r.json()) == (400, {"message": {"username": ["Admin is a reserved name"]}})
    assert users_named(db, "Admin") == 0


def test_taken_username_and_email_are_refused(client, make, db, open_signup):
    taken = make.user()
    r = sign_up(client, form("t", username=taken.username.upper(), email=taken.email))
    assert r.status_code == 400
    assert r.json() == {
        "message": {"email": ["has already been taken"], "username": ["has already been taken"]}
    }
    assert users_named(db, taken.username.upper()) == 0


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
