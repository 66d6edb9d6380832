"""python-gitlab, as published, against a running `kiln serve`: the client is the judge of
compatibility (its URL building, pagination, error mapping and object model)."""

from __future__ import annotations

import warnings
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import gitlab
import httpx
import pytest
from gitlab.exceptions import (
    GitlabAuthenticationError,
    GitlabCreateError,
    GitlabGetError,
    GitlabHttpError,
)
from gitlab.v4.objects import User

from kiln import COMPATIBLE_GITLAB_VERSION, __version__
from tests.e2e.conftest import ROOT_PASSWORD, ROOT_TOKEN

pytestmark = pytest.mark.e2e

USER_PASSWORD = "e2e-user-password-123"


def create_user(gl: gitlab.Gitlab, username: str, **fields: Any) -> User:
    data = {
        "username": username,
        "email": f"{username}@example.com",
        "name": f"Name {username}",
        "password": USER_PASSWORD,
        "skip_confirmation": True,
        **fields,
    }
    return gl.users.create(data)  # type: ignore[return-value]


def token_for(gl: gitlab.Gitlab, user: User, scopes: list[str] | None = None) -> str:
    made = user.personal_access_tokens.create({"name": "e2e", "scopes": scopes or ["api"]})
    return str(made.token)


def client_of(base_url: str, token: str) -> gitlab.Gitlab:
    return gitlab.Gitlab(base_url, private_token=token)


def password_grant(base_url: str, username: str, password: str) -> httpx.Response:
    return httpx.post(
        f"{base_url}/oauth/token",
        data={"grant_type": "password", "username": username, "password": password},
    )


# --- authentication --------------------------------------------------------------------


def test_private_token_auth_loads_root_without_url_warning(root):
    with warnings.catch_warnings():
        # python-gitlab warns when web_url does not start with the configured URL.
        warnings.simplefilter("error")
        root.auth()

    assert (root.user.id, root.user.username, root.user.is_admin) == (1, "root", True)


def test_version_is_the_compatible_gitlab_version(root):
    assert root.version() == (COMPATIBLE_GITLAB_VERSION, f"kiln-{__version__}")


def test_oauth_password_grant_token_authenticates_the_user(root, base_url, unique):
    user = create_user(root, unique("user"))

    r = password_grant(base_url, user.username, USER_PASSWORD)

    assert r.status_code == 200
    body = r.json()
    assert (body["token_type"], body["expires_in"], body["scope"]) == ("Bearer", 7200, "api")
    gl = gitlab.Gitlab(base_url, oauth_token=body["access_token"])
    gl.auth()
    assert (gl.user.id, gl.user.username) == (user.id, user.username)


def test_oauth_password_grant_works_for_root(base_url):
    r = password_grant(base_url, "root", ROOT_PASSWORD)

    assert r.status_code == 200
    gl = gitlab.Gitlab(base_url, oauth_token=r.json()["access_token"])
    gl.auth()
    assert gl.user.username == "root"


def test_oauth_password_grant_refuses_a_wrong_password(root, base_url, unique):
    user = create_user(root, unique("user"))

    r = password_grant(base_url, user.username, "not-the-password")

    assert r.status_code == 400
    assert r.json()["error"] == "invalid_grant"


def test_unknown_token_raises_authentication_error(base_url):
    gl = client_of(base_url, "no-such-token")

    with pytest.raises(GitlabAuthenticationError) as err:
        gl.auth()

    assert err.value.response_code == 401


# --- users -----------------------------------------------------------------------------


def test_create_then_get_user(root, unique):
    created = create_user(root, unique("user"), bio="likes kilns")

    got = root.users.get(created.id)

    assert (got.id, got.username, got.email, got.name, got.state, got.bio) == (
        created.id,
        created.username,
        f"{created.username}@example.com",
        f"Name {created.username}",
        "active",
        "likes kilns",
    )
    assert got.web_url == f"{root.url}/{created.username}"


def test_list_get_all_walks_every_page_once(root, unique):
    prefix = unique("pager")
    made = {create_user(root, f"{prefix}-{i:02d}").id for i in range(25)}

    everyone = root.users.list(get_all=True, per_page=10)
    searched = root.users.list(search=prefix, get_all=True, per_page=10)

    seen = Counter(u.id for u in everyone)
    assert {uid: seen[uid] for uid in made} == dict.fromkeys(made, 1)
    assert len(everyone) == len(seen)
    assert sorted(u.id for u in searched) == sorted(made)


def test_list_iterator_reports_totals_and_follows_links(root, unique):
    prefix = unique("lazy")
    made = [create_user(root, f"{prefix}-{i:02d}").id for i in range(12)]

    listing = root.users.list(search=prefix, iterator=True, per_page=5)

    assert (listing.total, listing.total_pages, listing.per_page) == (12, 3, 5)
    assert sorted(u.id for u in listing) == sorted(made)


def test_list_keyset_pagination_walks_every_page_once(root, unique):
    prefix = unique("keyset")
    made = [create_user(root, f"{prefix}-{i:02d}").id for i in range(7)]

    listing = root.users.list(
        search=prefix, pagination="keyset", order_by="id", sort="asc", per_page=3, get_all=True
    )

    assert [u.id for u in listing] == sorted(made)


def test_list_by_username_finds_exactly_that_user(root, unique):
    user = create_user(root, unique("user"))
    create_user(root, f"{user.username}x")

    found = root.users.list(username=user.username)

    assert [u.id for u in found] == [user.id]


def test_list_search_matches_name_and_email(root, unique):
    user = create_user(root, unique("user"), name="Zebulon Quixote")

    by_name = root.users.list(search="Zebulon Quix", get_all=True)
    by_email = root.users.list(search=f"{user.username}@example.com", get_all=True)

    assert user.id in {u.id for u in by_name}
    assert [u.id for u in by_email] == [user.id]


def test_save_updates_the_user(root, unique):
    user = create_user(root, unique("user"))

    user.name = "Renamed Person"
    user.location = "Kiln Town"
    user.save()

    got = root.users.get(user.id)
    assert (user.name, got.name, got.location) == ("Renamed Person", "Renamed Person", "Kiln Town")


def test_block_and_unblock(root, unique, base_url):
    user = create_user(root, unique("user"))
    token = token_for(root, user)

    assert user.block() is True
    assert user.state == "blocked"
    assert root.users.get(user.id).state == "blocked"
    with pytest.raises(GitlabGetError) as err:
        client_of(base_url, token).auth()
    assert (err.value.response_code, err.value.error_message) == (
        403,
        "403 Forbidden - Your account has been blocked.",
    )

    assert user.unblock() is True
    assert user.state == "active"
    assert root.users.get(user.id).state == "active"
    gl = client_of(base_url, token)
    gl.auth()
    assert gl.user.id == user.id


def test_delete_user_then_get_is_404(root, unique):
    user = create_user(root, unique("user"))

    user.delete()

    with pytest.raises(GitlabGetError) as err:
        root.users.get(user.id)
    assert (err.value.response_code, err.value.error_message) == (404, "404 User Not Found")


def test_hard_delete_user(root, unique):
    user = create_user(root, unique("user"))

    root.users.delete(user.id, hard_delete=True)

    with pytest.raises(GitlabGetError) as err:
        root.users.get(user.id)
    assert err.value.response_code == 404
    assert root.users.list(username=user.username) == []


def test_get_unknown_user_is_404(root):
    with pytest.raises(GitlabGetError) as err:
        root.users.get(987654321)

    assert (err.value.response_code, err.value.error_message) == (404, "404 User Not Found")


def test_duplicate_username_is_409(root, unique):
    user = create_user(root, unique("user"))

    with pytest.raises(GitlabCreateError) as err:
        root.users.create(
            {
                "username": user.username.upper(),
                "email": f"other-{user.username}@example.com",
                "name": "Other",
                "password": USER_PASSWORD,
            }
        )

    assert (err.value.response_code, err.value.error_message) == (409, "Username has already been taken")


def test_duplicate_email_is_409(root, unique):
    user = create_user(root, unique("user"))

    with pytest.raises(GitlabCreateError) as err:
        root.users.create(
            {
                "username": unique("other"),
                "email": f"{user.username}@EXAMPLE.com",
                "name": "Other",
                "password": USER_PASSWORD,
            }
        )

    assert (err.value.response_code, err.value.error_message) == (409, "Email has already been taken")


def test_non_admin_cannot_create_users(root, unique, base_url):
    gl = client_of(base_url, token_for(root, create_user(root, unique("user"))))

    with pytest.raises(GitlabCreateError) as err:
        gl.users.create(
            {"username": unique("x"), "email": "x@example.com", "name": "X", "password": "p" * 12}
        )

    assert (err.value.response_code, err.value.error_message) == (403, "403 Forbidden")


# --- status ----------------------------------------------------------------------------


def test_current_user_status_get_and_save(root, unique, base_url):
    user = create_user(root, unique("user"))
    gl = client_of(base_url, token_for(root, user))
    gl.auth()

    status = gl.user.status.get()
    assert (status.emoji, status.message) == (None, None)
    status.emoji = "coffee"
    status.message = "brewing"
    status.save()

    mine = gl.user.status.get()
    theirs = root.users.get(user.id).status.get()
    assert (mine.emoji, mine.message) == ("coffee", "brewing")
    assert (theirs.emoji, theirs.message) == ("coffee", "brewing")


# --- personal access tokens ------------------------------------------------------------


def test_admin_created_personal_access_token_works(root, unique, base_url):
    user = create_user(root, unique("user"))

    expires = (datetime.now(UTC).date() + timedelta(days=30)).isoformat()

    made = user.personal_access_tokens.create(
        {"name": "deploy", "scopes": ["read_api", "read_user"], "expires_at": expires}
    )

    assert (made.name, made.scopes, made.expires_at, made.user_id, made.active, made.revoked) == (
        "deploy",
        ["read_api", "read_user"],
        expires,
        user.id,
        True,
        False,
    )
    gl = client_of(base_url, made.token)
    gl.auth()
    assert gl.user.username == user.username


def test_personal_access_tokens_list_shows_own_and_admin_filter(root, unique, base_url):
    user = create_user(root, unique("user"))
    token = user.personal_access_tokens.create({"name": "mine", "scopes": ["api"]})
    gl = client_of(base_url, token.token)

    own = gl.personal_access_tokens.list(get_all=True)
    as_admin = root.personal_access_tokens.list(user_id=user.id, get_all=True)

    assert [(t.id, t.name, t.user_id) for t in own] == [(token.id, "mine", user.id)]
    assert [t.id for t in as_admin] == [token.id]
    assert all(not hasattr(t, "token") for t in [*own, *as_admin])


def test_revoked_personal_access_token_stops_working(root, unique, base_url):
    user = create_user(root, unique("user"))
    token = user.personal_access_tokens.create({"name": "short", "scopes": ["api"]})

    root.personal_access_tokens.delete(token.id)

    assert root.personal_access_tokens.get(token.id).revoked is True
    with pytest.raises(GitlabAuthenticationError) as err:
        client_of(base_url, token.token).auth()
    assert err.value.response_code == 401


def test_impersonation_tokens_create_list_use_and_revoke(root, unique, base_url):
    user = create_user(root, unique("user"))

    made = user.impersonationtokens.create({"name": "imp", "scopes": ["api"]})

    assert (made.impersonation, made.active, made.scopes) == (True, True, ["api"])
    gl = client_of(base_url, made.token)
    gl.auth()
    assert gl.user.id == user.id
    assert [t.id for t in user.impersonationtokens.list(state="active")] == [made.id]
    assert user.impersonationtokens.get(made.id).name == "imp"

    made.delete()

    assert [t.id for t in user.impersonationtokens.list(state="inactive")] == [made.id]
    assert user.impersonationtokens.list(state="active") == []
    with pytest.raises(GitlabAuthenticationError):
        client_of(base_url, made.token).auth()


# --- sudo ------------------------------------------------------------------------------


def test_sudo_parameter_acts_as_the_user(root, unique):
    user = create_user(root, unique("user"))

    me = root.http_get("/user", sudo=user.username)

    assert isinstance(me, dict)
    assert (me["id"], me["username"]) == (user.id, user.username)
    assert "is_admin" not in me


def test_sudo_header_acts_as_the_user(base_url, unique, root):
    user = create_user(root, unique("user"))
    gl = gitlab.Gitlab(base_url, private_token=ROOT_TOKEN)
    gl.headers["Sudo"] = str(user.id)

    gl.auth()

    assert (gl.user.id, gl.user.username) == (user.id, user.username)


def test_sudo_by_a_non_admin_is_403(root, unique, base_url):
    gl = client_of(base_url, token_for(root, create_user(root, unique("user"))))

    with pytest.raises(GitlabHttpError) as err:
        gl.http_get("/user", sudo="root")

    assert (err.value.response_code, err.value.error_message) == (
        403,
        "403 Forbidden - Must be admin to use sudo",
    )
