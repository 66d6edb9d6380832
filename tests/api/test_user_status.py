"""User status (spec part 3 "User status", "Users"): GET/PUT /user/status and
GET /users/:id_or_username/status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kiln.db import transaction
from kiln.models import User

EMPTY = {
    "emoji": None,
    "message": None,
    "availability": "not_set",
    "message_html": None,
    "clear_status_at": None,
}


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_status_is_empty_before_anything_is_set(api, make):
    r = api(make.user()).get("/user/status")
    assert (r.status_code, r.json()) == (200, EMPTY)


def test_status_needs_authentication(api):
    r = api().get("/user/status")
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})
    r = api().put("/user/status", json={"message": "hi"})
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def test_set_status_with_emoji_and_message(api, make):
    u = make.user()
    r = api(u).put("/user/status", json={"emoji": "coffee", "message": "Out for coffee"})
    assert r.status_code == 200
    assert r.json() == {
        "emoji": "coffee",
        "message": "Out for coffee",
        "availability": "not_set",
        "message_html": "Out for coffee",
        "clear_status_at": None,
    }
    assert api(u).get("/user/status").json() == r.json()


def test_set_status_emoji_defaults_to_speech_balloon(api, make):
    r = api(make.user()).put("/user/status", json={"message": "hello"})
    assert r.status_code == 200
    assert (r.json()["emoji"], r.json()["message"]) == ("speech_balloon", "hello")


def test_set_status_emoji_only(api, make):
    r = api(make.user()).put("/user/status", json={"emoji": "palm_tree"})
    assert (r.status_code, r.json()["emoji"], r.json()["message"]) == (200, "palm_tree", None)


def test_status_message_html_is_rendered_markdown(api, make):
    r = api(make.user()).put("/user/status", json={"message": "**busy** with `code`"})
    assert r.status_code == 200
    assert r.json()["message_html"] == "<strong>busy</strong> with <code>code</code>"


def test_status_message_html_is_sanitised(api, make):
    r = api(make.user()).put("/user/status", json={"message": "<script>alert(1)</script>"})
    assert r.status_code == 200
    assert "<script>" not in r.json()["message_html"]
    assert r.json()["message"] == "<script>alert(1)</script>"


def test_set_status_with_both_empty_clears_it(api, make):
    u = make.user()
    api(u).put("/user/status", json={"emoji": "coffee", "message": "away"})
    r = api(u).put("/user/status", json={"emoji": "", "message": ""})
    assert (r.status_code, r.json()) == (200, EMPTY)
    assert api(u).get("/user/status").json() == EMPTY


def test_put_status_replaces_the_whole_status(api, make):
    u = make.user()
    api(u).put("/user/status", json={"emoji": "coffee", "message": "away", "clear_status_after": "1_day"})
    r = api(u).put("/user/status", json={"emoji": "rocket"})
    assert r.status_code == 200
    assert r.json() == {
        "emoji": "rocket",
        "message": None,
        "availability": "not_set",
        "message_html": None,
        "clear_status_at": None,
    }


def test_set_status_availability_busy(api, make):
    r = api(make.user()).put("/user/status", json={"availability": "busy"})
    assert r.status_code == 200
    assert (r.json()["availability"], r.json()["emoji"]) == ("busy", "speech_balloon")


def test_set_status_invalid_availability_is_400(api, make):
    r = api(make.user()).put("/user/status", json={"availability": "asleep"})
    assert (r.status_code, r.json()) == (400, {"error": "availability does not have a valid value"})


def test_clear_status_after_sets_clear_status_at(api, make):
    before = datetime.now(UTC)
    r = api(make.user()).put("/user/status", json={"message": "brb", "clear_status_after": "3_hours"})
    after = datetime.now(UTC)
    assert r.status_code == 200
    at = parse_time(r.json()["clear_status_at"])
    assert before + timedelta(hours=3) - timedelta(seconds=1) <= at <= after + timedelta(hours=3)


def test_clear_status_after_invalid_value_is_400(api, make):
    r = api(make.user()).put("/user/status", json={"message": "brb", "clear_status_after": "2_hours"})
    assert (r.status_code, r.json()) == (400, {"error": "clear_status_after does not have a valid value"})


def test_status_is_cleared_once_its_time_has_passed(api, make, db):
    u = make.user()
    api(u).put("/user/status", json={"message": "brb", "clear_status_after": "30_minutes"})
    with transaction(db):
        db.get(User, u.id).status_clear_at = datetime.now(UTC) - timedelta(seconds=1)
    assert api(u).get("/user/status").json() == EMPTY
    assert api(make.user()).get(f"/users/{u.id}/status").json() == EMPTY


def test_status_message_longer_than_100_characters_is_400(api, make):
    u = make.user()
    r = api(u).put("/user/status", json={"message": "x" * 101})
    assert r.status_code == 400
    assert r.json() == {"message": {"message": ["is too long (maximum is 100 characters)"]}}
    assert api(u).get("/user/status").json() == EMPTY
    assert api(u).put("/user/status", json={"message": "x" * 100}).status_code == 200


def test_status_emoji_too_long_is_400(api, make):
    r = api(make.user()).put("/user/status", json={"emoji": "e" * 256})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"emoji": ["is too long (maximum is 255 characters)"]}},
    )


def test_set_status_form_encoded(api, make):
    r = api(make.user()).put("/user/status", data={"emoji": "coffee", "message": "form"})
    assert (r.status_code, r.json()["emoji"], r.json()["message"]) == (200, "coffee", "form")


def test_status_of_user_by_id(api, make):
    u = make.user()
    api(u).put("/user/status", json={"emoji": "coffee", "message": "away"})
    r = api(make.user()).get(f"/users/{u.id}/status")
    assert r.status_code == 200
    assert (r.json()["emoji"], r.json()["message"], r.json()["message_html"]) == ("coffee", "away", "away")


def test_status_of_user_by_username_case_insensitive(api, make):
    u = make.user(username="Statusy")
    api(u).put("/user/status", json={"message": "here"})
    for ident in ("Statusy", "statusy", "STATUSY"):
        r = api(make.user()).get(f"/users/{ident}/status")
        assert (r.status_code, r.json()["message"]) == (200, "here")


def test_status_of_user_anonymous_is_allowed(api, make):
    u = make.user()
    api(u).put("/user/status", json={"message": "public"})
    r = api().get(f"/users/{u.username}/status")
    assert (r.status_code, r.json()["message"]) == (200, "public")


def test_status_of_unknown_user_is_404(api):
    for ident in ("9999", "nobody"):
        r = api("root").get(f"/users/{ident}/status")
        assert (r.status_code, r.json()) == (404, {"message": "404 User Not Found"})


def test_status_of_user_without_status(api, make):
    u = make.user()
    r = api(make.user()).get(f"/users/{u.id}/status")
    assert (r.status_code, r.json()) == (200, EMPTY)


def test_status_read_with_read_user_scope(api, make):
    u = make.user(scopes=["read_user"])
    assert api(u).get("/user/status").status_code == 200
    r = api(u).put("/user/status", json={"message": "nope"})
    assert r.status_code == 403
    assert r.json()["error"] == "insufficient_scope"


def test_blocked_user_cannot_set_status(api, make):
    u = make.user(state="blocked")
    r = api(u).put("/user/status", json={"message": "hi"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Your account has been blocked."})
