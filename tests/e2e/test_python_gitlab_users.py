"""python-gitlab, as published, on a running `kiln serve`: the user states (ban and unban,
deactivate and activate, approve and reject a user who signed up) and a user's memberships."""

from __future__ import annotations

from typing import Any

import gitlab
import httpx
import pytest
from gitlab.exceptions import GitlabBanError, GitlabUserApproveError

from tests.e2e.test_python_gitlab import create_user, token_for

pytestmark = pytest.mark.e2e


def sign_up(base_url: str, username: str) -> httpx.Response:
    """GitLab's web registration form, at the root."""
    fields = {
        "user[username]": username,
        "user[email]": f"{username}@example.com",
        "user[password]": "sign-up-password-1",
        "user[name]": f"Signed Up {username}",
    }
    return httpx.post(f"{base_url}/users", data=fields, follow_redirects=False)


def own_user(base_url: str, token: str) -> httpx.Response:
    return httpx.get(f"{base_url}/api/v4/user", headers={"Private-Token": token})


def found(root: gitlab.Gitlab, username: str) -> list[Any]:
    return list(root.users.list(username=username))


def test_ban_and_unban_through_python_gitlab(root, base_url, unique):
    user = create_user(root, unique("ban"))
    token = token_for(root, user)
    assert user.ban() is True
    assert root.users.get(user.id).state == "banned"
    refused = own_user(base_url, token)
    assert (refused.status_code, refused.json()) == (
        403,
        {"message": "403 Forbidden - Your account has been blocked."},
    )
    with pytest.raises(GitlabBanError) as err:
        user.ban()
    assert err.value.response_code == 403
    assert user.unban() is True
    assert root.users.get(user.id).state == "active"
    assert own_user(base_url, token).status_code == 200


def test_deactivate_and_activate_through_python_gitlab(root, base_url, unique):
    user = create_user(root, unique("deact"))
    token = token_for(root, user)
    assert user.deactivate() is True
    assert user.state == "deactivated"
    refused = own_user(base_url, token)
    assert refused.status_code == 403
    assert "Please log back in from a web browser to reactivate your account" in refused.json()["message"]
    assert user.activate() is True
    assert root.users.get(user.id).state == "active"
    assert own_user(base_url, token).status_code == 200


def test_approve_and_reject_users_who_signed_up(root, base_url, unique):
    root.settings.update(signup_enabled=True, require_admin_approval_after_user_signup=True)
    approved_name, rejected_name = unique("approved"), unique("rejected")
    for name in (approved_name, rejected_name):
        r = sign_up(base_url, name)
        assert r.status_code == 302, r.text
    approved = found(root, approved_name)[0]
    assert approved.state == "blocked_pending_approval"
    assert approved.approve() == {"message": "Success"}
    assert root.users.get(approved.id).state == "active"
    with pytest.raises(GitlabUserApproveError) as err:
        approved.approve()
    assert err.value.response_code == 409
    rejected = found(root, rejected_name)[0]
    assert rejected.reject() == {"message": "Success"}
    assert found(root, rejected_name) == []


def test_memberships_through_http_get(root, unique):
    user = create_user(root, unique("member"))
    group = root.groups.create({"name": unique("mgroup"), "path": unique("mgroup")})
    group.members.create({"user_id": user.id, "access_level": 30})
    project = root.projects.create({"name": unique("mproject")})
    project.members.create({"user_id": user.id, "access_level": 20})
    listed = root.http_get(f"/users/{user.id}/memberships")
    assert sorted((m["source_type"], m["source_id"], m["access_level"]) for m in listed) == [
        ("Namespace", group.id, 30),
        ("Project", project.id, 20),
    ]
    only_projects = root.http_get(f"/users/{user.id}/memberships", query_data={"type": "Project"})
    assert [m["source_name"] for m in only_projects] == [project.name]
