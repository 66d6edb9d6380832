"""Terms of service: while the instance enforces them, a user who has not accepted the latest
version is refused on the API and on git over HTTP, administrators included, bots not;
accepting a version (GitLab's web `POST /-/users/terms/:id/accept`) lets them in again."""

from __future__ import annotations

import base64

import pytest

from kiln.db import transaction
from kiln.models import Term, User
from kiln.services import instance_settings


def add_terms(db, text: str = "Be kind.") -> int:
    with transaction(db):
        term = Term(terms=text)
        db.add(term)
        db.flush()
        return term.id


def enforce(db, text: str = "Be kind.") -> int:
    term_id = add_terms(db, text)
    instance_settings.update(db, {"enforce_terms": True, "terms": text})
    return term_id


def accepted(db, user, term_id: int | None) -> None:
    with transaction(db):
        db.get(User, user.id).accepted_term_id = term_id


def terms_refusal(username: str, url: str) -> str:
    return (
        f"You (@{username}) must accept the Terms of Service in order to perform this action. "
        f"To accept these terms, please access GitLab from a web browser at {url}."
    )


def sign_in(client, user) -> str:
    r = client.post(
        "/users/sign_in",
        data={"user[login]": user.username, "user[password]": user.password},
        follow_redirects=False,
    )
    assert r.status_code == 302
    return r.json()["csrf_token"]


@pytest.fixture
def url(runtime) -> str:
    return runtime.settings.external_url


def test_user_who_has_not_accepted_is_refused_with_gitlabs_words(api, make, db, url):
    u = make.user()
    enforce(db)
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (
        403,
        {"message": "403 Forbidden - " + terms_refusal(u.username, url)},
    )


def test_user_who_accepted_the_latest_version_is_let_in(api, make, db):
    u = make.user()
    accepted(db, u, enforce(db))
    assert api(u).get("/user").json()["username"] == u.username


def test_a_new_version_must_be_accepted_again(api, make, db, url):
    u = make.user()
    first = enforce(db, "v1")
    accepted(db, u, first)
    add_terms(db, "v2")
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (
        403,
        {"message": "403 Forbidden - " + terms_refusal(u.username, url)},
    )


def test_terms_not_enforced_refuse_nobody(api, make, db):
    u = make.user()
    add_terms(db)
    instance_settings.update(db, {"enforce_terms": False})
    assert api(u).get("/user").json()["username"] == u.username


def test_enforcing_without_any_terms_refuses_nobody(api, make, db):
    u = make.user()
    instance_settings.update(db, {"enforce_terms": True})
    assert api(u).get("/user").json()["username"] == u.username


def test_administrators_must_accept_too(api, db, url):
    enforce(db)
    r = api("root").get("/user")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - " + terms_refusal("root", url)})


def test_bots_need_not_accept(api, make, db):
    bot = make.user(user_type="project_bot")
    enforce(db)
    r = api(bot).get("/user")
    assert (r.status_code, r.json()["username"]) == (200, bot.username)


def test_pending_approval_is_told_before_the_terms(api, make, db):
    u = make.user(state="blocked_pending_approval")
    enforce(db)
    r = api(u).get("/user")
    assert r.json() == {
        "message": "403 Forbidden - Your account is pending approval from your administrator and hence blocked."
    }


def test_terms_are_told_before_deactivation(api, make, db, url):
    u = make.user(state="deactivated")
    enforce(db)
    assert api(u).get("/user").json() == {"message": "403 Forbidden - " + terms_refusal(u.username, url)}


def test_session_is_refused_until_the_terms_are_accepted(api, client, make, db, url):
    u = make.user()
    term_id = enforce(db)
    csrf = sign_in(client, u)
    r = api().get("/user")
    assert (r.status_code, r.json()) == (
        403,
        {"message": "403 Forbidden - " + terms_refusal(u.username, url)},
    )
    r = client.post(
        f"/-/users/terms/{term_id}/accept", headers={"X-CSRF-Token": csrf}, follow_redirects=False
    )
    assert r.status_code == 302
    assert r.headers["location"] == f"{url}/"
    assert api().get("/user").status_code == 200
    assert api(u).get("/user").status_code == 200


def test_accepting_records_the_version(client, make, db):
    u = make.user()
    term_id = enforce(db)
    csrf = sign_in(client, u)
    client.post(f"/-/users/terms/{term_id}/accept", headers={"X-CSRF-Token": csrf}, follow_redirects=False)
    db.expire_all()
    assert db.get(User, u.id).accepted_term_id == term_id


def test_accepting_an_unknown_version_is_404(client, make, db):
    u = make.user()
    enforce(db)
    csrf = sign_in(client, u)
    r = client.post("/-/users/terms/999999/accept", headers={"X-CSRF-Token": csrf}, follow_redirects=False)
    assert (r.status_code, r.json()) == (404, {"message": "404 Term Not Found"})
    db.expire_all()
    assert db.get(User, u.id).accepted_term_id is None


def test_accepting_takes_a_signed_in_session(client, make, db):
    u = make.user()
    term_id = enforce(db)
    r = client.post(
        f"/-/users/terms/{term_id}/accept", headers={"Private-Token": u.token}, follow_redirects=False
    )
    assert r.status_code == 401
    db.expire_all()
    assert db.get(User, u.id).accepted_term_id is None


def test_accepting_without_the_csrf_token_is_refused(client, make, db):
    u = make.user()
    term_id = enforce(db)
    sign_in(client, u)
    r = client.post(f"/-/users/terms/{term_id}/accept", follow_redirects=False)
    assert r.status_code == 401
    db.expire_all()
    assert db.get(User, u.id).accepted_term_id is None


def test_git_over_http_with_a_token_is_refused_until_accepted(api, client, make, db, url):
    owner = make.user()
    r = api(owner).post("/projects", json={"name": "terms-git", "initialize_with_readme": True})
    assert r.status_code == 201, r.text
    path = r.json()["path_with_namespace"]
    enforce(db)
    auth = {"Authorization": "Basic " + base64.b64encode(f"{owner.username}:{owner.token}".encode()).decode()}
    refused = client.get(f"/{path}.git/info/refs?service=git-upload-pack", headers=auth)
    assert (refused.status_code, refused.text) == (403, terms_refusal(owner.username, url) + "\n")
    accepted(db, owner, db.query(Term.id).order_by(Term.id.desc()).first()[0])
    allowed = client.get(f"/{path}.git/info/refs?service=git-upload-pack", headers=auth)
    assert allowed.status_code == 200


def test_git_password_users_are_judged_by_the_same_rule(make, db, runtime, url):
    from kiln.auth.credentials import require_usable_for_git
    from kiln.errors import Forbidden
    from kiln.queries.users import row_by_id

    u = make.user()
    require_usable_for_git(db, runtime.settings, row_by_id(db, u.id))
    enforce(db)
    with pytest.raises(Forbidden) as refused:
        require_usable_for_git(db, runtime.settings, row_by_id(db, u.id))
    assert str(refused.value) == terms_refusal(u.username, url)


def test_the_latest_terms_are_shown_to_anyone(client, db):
    add_terms(db, "old")
    term_id = add_terms(db, "Be kind, be brief.")
    r = client.get("/-/users/terms")
    assert (r.status_code, r.json()) == (
        200,
        {"id": term_id, "terms": "Be kind, be brief.", "accepted": None},
    )


def test_the_latest_terms_tell_a_signed_in_user_whether_they_accepted(client, make, db):
    u = make.user()
    term_id = enforce(db)
    csrf = sign_in(client, u)
    assert client.get("/-/users/terms").json()["accepted"] is False
    client.post(f"/-/users/terms/{term_id}/accept", headers={"X-CSRF-Token": csrf}, follow_redirects=False)
    assert client.get("/-/users/terms").json()["accepted"] is True


def test_no_terms_is_404(client):
    r = client.get("/-/users/terms")
    assert (r.status_code, r.json()) == (404, {"message": "404 Term Not Found"})


def test_git_over_http_with_a_password_is_refused_until_accepted(api, client, make, db, url):
    owner = make.user()
    r = api(owner).post("/projects", json={"name": "terms-git-password", "initialize_with_readme": True})
    assert r.status_code == 201, r.text
    path = r.json()["path_with_namespace"]
    enforce(db)
    auth = {
        "Authorization": "Basic " + base64.b64encode(f"{owner.username}:{owner.password}".encode()).decode()
    }
    refused = client.get(f"/{path}.git/info/refs?service=git-upload-pack", headers=auth)
    assert (refused.status_code, refused.text) == (403, terms_refusal(owner.username, url) + "\n")
    accepted(db, owner, db.query(Term.id).order_by(Term.id.desc()).first()[0])
    allowed = client.get(f"/{path}.git/info/refs?service=git-upload-pack", headers=auth)
    assert allowed.status_code == 200
