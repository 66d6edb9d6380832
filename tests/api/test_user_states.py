"""User states as GitLab's state machine has them: ban/unban, activate/deactivate,
approve/reject beside block/unblock, who may move a user between them, and what each
state means for signing in with a token, a session or a password."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from kiln.db import transaction
from kiln.models import Member, User


def state_of(api, user) -> str:
    return api("root").get(f"/users/{user.id}").json()["state"]


def set_state(db, user, state: str) -> None:
    with transaction(db):
        db.get(User, user.id).state = state


def sign_in(client, user):
    return client.post(
        "/users/sign_in",
        data={"user[login]": user.username, "user[password]": user.password},
        follow_redirects=False,
    )


@pytest.fixture
def external_url(runtime):
    return runtime.settings.external_url


# ---------------------------------------------------------------- ban / unban


def test_ban_an_active_user_answers_true(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/ban")
    assert (r.status_code, r.json()) == (201, True)
    assert state_of(api, u) == "banned"


@pytest.mark.parametrize("state", ["blocked", "deactivated", "banned", "blocked_pending_approval"])
def test_ban_refuses_a_user_who_is_not_active(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    r = api("root").post(f"/users/{u.id}/ban")
    assert (r.status_code, r.json()) == (403, {"message": f"You cannot ban {state} users."})
    assert state_of(api, u) == state


def test_unban_makes_a_banned_user_active(api, make, db):
    u = make.user()
    set_state(db, u, "banned")
    r = api("root").post(f"/users/{u.id}/unban")
    assert (r.status_code, r.json()) == (201, True)
    assert state_of(api, u) == "active"


def test_unban_refuses_a_user_who_is_not_banned(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/unban")
    assert (r.status_code, r.json()) == (403, {"message": "You cannot unban active users."})
    assert state_of(api, u) == "active"


@pytest.mark.parametrize("action", ["ban", "unban", "activate", "deactivate", "block", "unblock"])
def test_state_changes_are_for_administrators(api, make, action):
    u, other = make.user(), make.user()
    r = api(other).post(f"/users/{u.id}/{action}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert state_of(api, u) == "active"


@pytest.mark.parametrize("action", ["ban", "unban", "activate", "deactivate", "approve", "reject"])
def test_state_change_of_an_unknown_user_is_404(api, action):
    r = api("root").post(f"/users/999999/{action}")
    assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


# ---------------------------------------------------------------- activate / deactivate


def test_deactivate_a_dormant_user_answers_true(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/deactivate")
    assert (r.status_code, r.json()) == (201, True)
    assert state_of(api, u) == "deactivated"


def test_deactivate_twice_answers_null(api, make, db):
    u = make.user()
    set_state(db, u, "deactivated")
    r = api("root").post(f"/users/{u.id}/deactivate")
    assert (r.status_code, r.json()) == (201, None)
    assert state_of(api, u) == "deactivated"


def test_deactivate_refuses_a_user_active_in_the_last_90_days(api, make, db):
    u = make.user()
    with transaction(db):
        db.get(User, u.id).last_activity_on = date.today() - timedelta(days=10)
    r = api("root").post(f"/users/{u.id}/deactivate")
    assert r.status_code == 403
    assert r.json() == {
        "message": "The user you are trying to deactivate has been active in the past 90 days "
        "and cannot be deactivated"
    }
    assert state_of(api, u) == "active"


def test_deactivate_refuses_a_user_signed_in_recently(api, make, db):
    u = make.user()
    with transaction(db):
        db.get(User, u.id).current_sign_in_at = datetime.now(UTC) - timedelta(days=1)
    assert api("root").post(f"/users/{u.id}/deactivate").status_code == 403
    assert state_of(api, u) == "active"


def test_deactivate_allows_a_user_active_long_ago(api, make, db):
    u = make.user()
    with transaction(db):
        db.get(User, u.id).last_activity_on = date.today() - timedelta(days=120)
    assert api("root").post(f"/users/{u.id}/deactivate").json() is True
    assert state_of(api, u) == "deactivated"


@pytest.mark.parametrize("state", ["blocked", "banned", "blocked_pending_approval"])
def test_deactivate_refuses_a_blocked_user(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    r = api("root").post(f"/users/{u.id}/deactivate")
    assert (r.status_code, r.json()) == (
        403,
        {"message": "Error occurred. A blocked user cannot be deactivated"},
    )
    assert state_of(api, u) == state


def test_deactivate_refuses_the_ghost(api, make):
    u = make.user()
    api("root").delete(f"/users/{u.id}")
    ghost = api("root").get("/users", params={"username": "ghost"}).json()[0]
    r = api("root").post(f"/users/{ghost['id']}/deactivate")
    assert (r.status_code, r.json()) == (403, {"message": "Internal users cannot be deactivated"})


def test_activate_makes_a_deactivated_user_active(api, make, db):
    u = make.user()
    set_state(db, u, "deactivated")
    r = api("root").post(f"/users/{u.id}/activate")
    assert (r.status_code, r.json()) == (201, True)
    assert state_of(api, u) == "active"


def test_activate_an_active_user_answers_true(api, make):
    u = make.user()
    assert api("root").post(f"/users/{u.id}/activate").json() is True


@pytest.mark.parametrize("state", ["blocked", "banned", "blocked_pending_approval"])
def test_activate_refuses_a_blocked_user(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    r = api("root").post(f"/users/{u.id}/activate")
    assert r.status_code == 403
    assert r.json() == {"message": "Error occurred. A blocked user must be unblocked to be activated"}
    assert state_of(api, u) == state


# ---------------------------------------------------------------- block / unblock with the new states


@pytest.mark.parametrize("state", ["banned", "blocked_pending_approval"])
def test_block_leaves_a_banned_or_pending_user_alone(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    r = api("root").post(f"/users/{u.id}/block")
    assert (r.status_code, r.json()) == (201, None)
    assert state_of(api, u) == state


def test_block_a_deactivated_user(api, make, db):
    u = make.user()
    set_state(db, u, "deactivated")
    assert api("root").post(f"/users/{u.id}/block").json() is True
    assert state_of(api, u) == "blocked"


@pytest.mark.parametrize("state", ["banned", "blocked_pending_approval"])
def test_unblock_activates_a_banned_or_pending_user(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    assert api("root").post(f"/users/{u.id}/unblock").json() is True
    assert state_of(api, u) == "active"


def test_unblock_refuses_a_deactivated_user(api, make, db):
    u = make.user()
    set_state(db, u, "deactivated")
    r = api("root").post(f"/users/{u.id}/unblock")
    assert r.status_code == 403
    assert r.json() == {"message": "403 Forbidden - Deactivated users cannot be unblocked by the API"}


# ---------------------------------------------------------------- approve / reject


def test_approve_activates_a_pending_user(api, make, db):
    u = make.user()
    set_state(db, u, "blocked_pending_approval")
    r = api("root").post(f"/users/{u.id}/approve")
    assert (r.status_code, r.json()) == (201, {"message": "Success"})
    assert state_of(api, u) == "active"


@pytest.mark.parametrize("state", ["active", "blocked", "deactivated", "banned"])
def test_approve_refuses_a_user_not_pending(api, make, db, state):
    u = make.user()
    set_state(db, u, state)
    r = api("root").post(f"/users/{u.id}/approve")
    assert r.status_code == 409
    assert r.json() == {"message": "The user you are trying to approve is not pending approval"}
    assert state_of(api, u) == state


def test_approve_by_a_non_administrator_is_refused(api, make, db):
    u, other = make.user(), make.user()
    set_state(db, u, "blocked_pending_approval")
    r = api(other).post(f"/users/{u.id}/approve")
    assert (r.status_code, r.json()) == (403, {"message": "You are not allowed to approve a user"})
    assert state_of(api, u) == "blocked_pending_approval"


def test_reject_deletes_the_pending_user(api, make, db):
    u = make.user()
    set_state(db, u, "blocked_pending_approval")
    r = api("root").post(f"/users/{u.id}/reject")
    assert (r.status_code, r.json()) == (200, {"message": "Success"})
    assert api("root").get(f"/users/{u.id}").status_code == 404
    db.expire_all()
    assert db.get(User, u.id) is None


def test_reject_refuses_a_user_not_pending(api, make):
    u = make.user()
    r = api("root").post(f"/users/{u.id}/reject")
    assert (r.status_code, r.json()) == (409, {"message": "User does not have a pending request"})
    assert state_of(api, u) == "active"


def test_reject_by_a_non_administrator_is_refused(api, make, db):
    u, other = make.user(), make.user()
    set_state(db, u, "blocked_pending_approval")
    r = api(other).post(f"/users/{u.id}/reject")
    assert (r.status_code, r.json()) == (403, {"message": "You are not allowed to reject a user"})
    assert state_of(api, u) == "blocked_pending_approval"


# ---------------------------------------------------------------- what a state means for signing in


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ("blocked", "403 Forbidden - Your account has been blocked."),
        ("banned", "403 Forbidden - Your account has been blocked."),
        (
            "blocked_pending_approval",
            "403 Forbidden - Your account is pending approval from your administrator and hence blocked.",
        ),
    ],
)
def test_token_of_a_user_not_active_is_403(api, make, db, state, message):
    u = make.user()
    set_state(db, u, state)
    r = api(u).get("/user")
    assert (r.status_code, r.json()) == (403, {"message": message})


def test_deactivated_users_token_is_told_to_sign_in_from_a_browser(api, make, db, external_url):
    u = make.user()
    set_state(db, u, "deactivated")
    r = api(u).get("/user")
    assert r.status_code == 403
    assert r.json() == {
        "message": "403 Forbidden - Your account has been deactivated by your administrator. Please log "
        f"back in from a web browser to reactivate your account at {external_url}"
    }


@pytest.mark.parametrize("state", ["blocked", "banned", "blocked_pending_approval"])
def test_password_of_a_user_not_active_signs_nobody_in(api, client, make, db, state):
    u = make.user()
    set_state(db, u, state)
    assert sign_in(client, u).status_code == 401
    assert api().get("/user").status_code == 401
    assert state_of(api, u) == state


def test_password_of_a_deactivated_user_signs_them_in_and_reactivates_them(api, client, make, db):
    u = make.user()
    set_state(db, u, "deactivated")
    assert sign_in(client, u).status_code == 302
    assert state_of(api, u) == "active"


@pytest.mark.parametrize("state", ["blocked", "banned", "blocked_pending_approval", "deactivated"])
def test_session_of_a_user_no_longer_active_is_over(api, client, make, db, state):
    u = make.user()
    assert sign_in(client, u).status_code == 302
    assert api().get("/user").status_code == 200
    set_state(db, u, state)
    assert api().get("/user").status_code == 401


def test_unbanned_users_token_works_again(api, make):
    u = make.user()
    api("root").post(f"/users/{u.id}/ban")
    assert api(u).get("/user").status_code == 403
    api("root").post(f"/users/{u.id}/unban")
    r = api(u).get("/user")
    assert (r.status_code, r.json()["username"]) == (200, u.username)


# ---------------------------------------------------------------- the list's state filters


def test_list_filters_by_state(api, make, db):
    users = {state: make.user() for state in ("active", "blocked", "banned", "deactivated")}
    pending = make.user()
    for state, u in users.items():
        set_state(db, u, state)
    set_state(db, pending, "blocked_pending_approval")
    mine = {u.id for u in [*users.values(), pending]}

    def listed(**params):
        r = api("root").get("/users", params={"per_page": 100, **params})
        return {u["id"] for u in r.json()} & mine

    assert listed(active="true") == {users["active"].id}
    assert listed(blocked="true") == {users["blocked"].id}
    assert listed(exclude_active="true") == mine - {users["active"].id}


def test_state_is_shown_in_the_user_view(api, make, db):
    u = make.user()
    set_state(db, u, "blocked_pending_approval")
    assert api("root").get(f"/users/{u.id}").json()["state"] == "blocked_pending_approval"


def test_memberships_of_a_rejected_user_go_with_them(api, make, db):
    u = make.user()
    group = api("root").post("/groups", data={"name": "Rejected", "path": "rejected-grp"}).json()
    with transaction(db):
        db.add(Member(namespace_id=group["id"], user_id=u.id, access_level=30))
    set_state(db, u, "blocked_pending_approval")
    assert api("root").post(f"/users/{u.id}/reject").status_code == 200
    members = api("root").get(f"/groups/{group['id']}/members").json()
    assert u.id not in {m["id"] for m in members}


def test_deactivation_follows_the_instances_dormant_period(api, make, db):
    from kiln.services import instance_settings

    instance_settings.update(db, {"deactivate_dormant_users_period": 180})
    u = make.user()
    with transaction(db):
        db.get(User, u.id).last_activity_on = date.today() - timedelta(days=120)
    r = api("root").post(f"/users/{u.id}/deactivate")
    assert r.status_code == 403
    assert r.json() == {
        "message": "The user you are trying to deactivate has been active in the past 180 days "
        "and cannot be deactivated"
    }
