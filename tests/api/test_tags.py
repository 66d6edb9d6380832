"""Repository tags: GitLab's Tags API over real repositories, one rule per test."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime

import pygit2

from tests.api.test_branches import (
    ZERO,
    add_member,
    assert_fsck_clean,
    commit_on,
    expected_commit,
    last_event,
    new_commit_object,
    push_lands_while_waiting,
    repo_path,
    tip,
)
from tests.factories.repositories import open_repository
from tests.repositories import new_project


def tags_url(project: dict, name: str | None = None) -> str:
    base = f"/projects/{project['id']}/repository/tags"
    return base if name is None else f"{base}/{name.replace('/', '%2F')}"


def tag_target(settings, project: dict, name: str) -> str | None:
    ref = open_repository(settings, project).references.get(f"refs/tags/{name}")
    return None if ref is None else str(ref.target)


def lightweight(settings, project: dict, name: str, sha: str) -> None:
    open_repository(settings, project).references.create(f"refs/tags/{name}", sha)


def annotated(settings, project: dict, name: str, sha: str, when: int) -> None:
    tagger = pygit2.Signature("Tagger", "tagger@example.com", when, 0)
    open_repository(settings, project).create_tag(
        name, sha, pygit2.enums.ObjectType.COMMIT, tagger, f"{name}\n"
    )


# ----------------------------------------------------------------------------- creating


def test_create_a_lightweight_tag_answers_201_with_the_tag(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = tip(settings, p, "main")
    r = api(u).post(tags_url(p), json={"tag_name": "v1.0.0", "ref": "main"})
    assert (r.status_code, r.json()) == (
        201,
        {
            "name": "v1.0.0",
            "message": "",
            "target": sha,
            "commit": expected_commit(settings, p, sha),
            "release": None,
            "protected": False,
            "created_at": None,
        },
    )
    assert tag_target(settings, p, "v1.0.0") == sha


def test_a_message_makes_an_annotated_tag_by_the_caller(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = tip(settings, p, "main")
    before = int(datetime.now(UTC).timestamp())
    r = api(u).post(
        tags_url(p), json={"tag_name": "release/1.0", "ref": sha, "message": "  Release 1.0\n\nNotes  "}
    )
    target = tag_target(settings, p, "release/1.0")
    tag = open_repository(settings, p)[target]
    assert isinstance(tag, pygit2.Tag)
    assert (str(tag.target), tag.name, tag.message) == (sha, "release/1.0", "Release 1.0\n\nNotes\n")
    assert (tag.tagger.name, tag.tagger.email) == (u.row.name, u.email)
    assert before <= tag.tagger.time <= before + 60
    created = datetime.fromtimestamp(tag.tagger.time, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert (r.status_code, r.json()) == (
        201,
        {
            "name": "release/1.0",
            "message": "Release 1.0\n\nNotes",
            "target": target,
            "commit": expected_commit(settings, p, sha),
            "release": None,
            "protected": False,
            "created_at": created,
        },
    )
    assert target != sha
    assert_fsck_clean(settings, p)


def test_a_blank_message_makes_a_lightweight_tag(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "v2", "ref": "main", "message": "   "})
    assert (r.status_code, r.json()["target"]) == (201, tip(settings, p, "main"))


def test_create_records_a_tag_push_event(api, make, db, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main", "message": "m"})
    event = last_event(db, p)
    assert (event.action, event.target_type, event.author_id) == ("pushed", "tag", u.id)
    assert {k: event.data[k] for k in ("ref", "ref_type", "before", "after", "action")} == {
        "ref": "refs/tags/v1",
        "ref_type": "tag",
        "before": ZERO,
        "after": r.json()["target"],
        "action": "created",
    }


def test_create_with_an_empty_ref_is_400_target_is_empty(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "v1", "ref": ""})
    assert (r.status_code, r.json()) == (400, {"message": "Target is empty"})


def test_create_without_tag_name_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"ref": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "tag_name is missing"})


def test_create_with_an_invalid_name_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    for name in ("a..b", "bad name", "-x", "v1~"):
        r = api(u).post(tags_url(p), json={"tag_name": name, "ref": "main"})
        assert (name, r.status_code, r.json()) == (name, 400, {"message": "Tag name invalid"})


def test_create_an_existing_tag_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    commit_on(settings, p, "main", "more.txt")
    r = api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    assert (r.status_code, r.json()) == (400, {"message": "Tag v1 already exists"})


def test_create_from_an_unknown_ref_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "nowhere"})
    assert (r.status_code, r.json()) == (400, {"message": "Target nowhere is invalid"})
    assert tag_target(settings, p, "v1") is None


def test_create_a_tag_named_like_an_object_id_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "b" * 40, "ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You cannot create a tag with a SHA-1 or SHA-256 tag name."},
    )


def test_create_a_tag_named_like_the_default_branch_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(tags_url(p), json={"tag_name": "main", "ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You cannot use default branch name to create a tag"},
    )


def test_reporter_may_not_create_tags(api, make, db):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, reporter, 20)
    r = api(reporter).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_developer_creates_tags(api, make, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, dev, 30)
    r = api(dev).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    assert (r.status_code, r.json()["name"]) == (201, "v1")


# ----------------------------------------------------------------------------- reading


def test_get_a_tag_by_its_encoded_name(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    created = (
        api(u).post(tags_url(p), json={"tag_name": "rel/v1.2.json", "ref": "main", "message": "x"}).json()
    )
    r = api(u).get(f"/projects/{p['id']}/repository/tags/rel%2Fv1.2.json")
    assert (r.status_code, r.json()) == (200, created)


def test_missing_tag_is_404_tag_not_found(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(tags_url(p, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Tag Not Found"})


def test_list_is_newest_first_by_default(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = tip(settings, p, "main")
    annotated(settings, p, "middle", sha, 1_500_000_000)
    annotated(settings, p, "newest", sha, 2_000_000_000)
    annotated(settings, p, "oldest", sha, 1_000_000_000)
    r = api(u).get(tags_url(p))
    assert (r.status_code, [t["name"] for t in r.json()]) == (200, ["newest", "middle", "oldest"])
    asc = api(u).get(tags_url(p) + "?sort=asc").json()
    assert [t["name"] for t in asc] == ["oldest", "middle", "newest"]


def test_lightweight_tags_sort_by_their_commits_time(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    old = commit_on(settings, p, "old", "o.txt", when=(1_000_000_000, 0))
    new = commit_on(settings, p, "new", "n.txt", when=(2_000_000_000, 0))
    lightweight(settings, p, "on-new", new)
    lightweight(settings, p, "on-old", old)
    annotated(settings, p, "between", old, 1_500_000_000)
    assert [t["name"] for t in api(u).get(tags_url(p)).json()] == ["on-new", "between", "on-old"]


def test_order_by_name_and_by_version(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = tip(settings, p, "main")
    for name in ("v1.10.0", "v1.9.0", "v1.2.0", "v2.0.0"):
        lightweight(settings, p, name, sha)

    def names(query: str) -> list[str]:
        return [t["name"] for t in api(u).get(tags_url(p) + query).json()]

    assert names("?order_by=name&sort=asc") == ["v1.10.0", "v1.2.0", "v1.9.0", "v2.0.0"]
    assert names("?order_by=version&sort=asc") == ["v1.2.0", "v1.9.0", "v1.10.0", "v2.0.0"]
    assert names("?order_by=version") == ["v2.0.0", "v1.10.0", "v1.9.0", "v1.2.0"]


def test_unknown_order_or_sort_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(tags_url(p) + "?order_by=size")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})
    r = api(u).get(tags_url(p) + "?sort=up")
    assert (r.status_code, r.json()) == (400, {"error": "sort does not have a valid value"})


def test_search_matches_a_part_a_prefix_or_a_suffix(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = tip(settings, p, "main")
    for name in ("v1-rc", "rc-v2", "stable"):
        lightweight(settings, p, name, sha)

    def names(term: str) -> list[str]:
        return sorted(t["name"] for t in api(u).get(tags_url(p), params={"search": term}).json())

    assert (names("rc"), names("^rc"), names("rc$"), names("RC")) == (
        ["rc-v2", "v1-rc"],
        ["rc-v2"],
        ["v1-rc"],
        ["rc-v2", "v1-rc"],
    )


def test_list_is_paginated_with_headers(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    for i in range(3):
        lightweight(settings, p, f"t{i}", tip(settings, p, "main"))
    r = api(u).get(tags_url(p) + "?order_by=name&sort=asc&per_page=2")
    assert [t["name"] for t in r.json()] == ["t0", "t1"]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"], r.headers["X-Total-Pages"]) == ("3", "2", "2")


def test_anonymous_reads_tags_of_a_public_project(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    r = api().get(tags_url(p))
    assert (r.status_code, [t["name"] for t in r.json()]) == (200, ["v1"])


def test_guest_of_a_private_project_may_not_read_tags(api, make, db):
    u, guest = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, guest, 10)
    r = api(guest).get(tags_url(p))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_private_project_tags_are_404_to_non_members(api, make):
    u, outsider = make.user(), make.user()
    p = new_project(api, make, u)
    r = api(outsider).get(tags_url(p, "v1"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


# ----------------------------------------------------------------------------- deleting


def test_delete_answers_204_and_removes_the_tag(api, make, db, settings):
    u = make.user()
    p = new_project(api, make, u)
    target = api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main", "message": "m"}).json()["target"]
    r = api(u).delete(tags_url(p, "v1"))
    assert (r.status_code, r.content, tag_target(settings, p, "v1")) == (204, b"", None)
    event = last_event(db, p)
    assert {k: event.data[k] for k in ("ref", "before", "after", "action")} == {
        "ref": "refs/tags/v1",
        "before": target,
        "after": ZERO,
        "action": "removed",
    }
    assert_fsck_clean(settings, p)


def test_delete_a_missing_tag_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).delete(tags_url(p, "nope"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Tag Not Found"})


def test_reporter_may_not_delete_tags(api, make, db, settings):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    add_member(db, make, p, reporter, 20)
    api(u).post(tags_url(p), json={"tag_name": "v1", "ref": "main"})
    r = api(reporter).delete(tags_url(p, "v1"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert tag_target(settings, p, "v1") is not None


def test_delete_refuses_a_tag_whose_commit_is_newer_than_if_unmodified_since(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_on(settings, p, "dated", "d.txt", when=(2_000_000_000, 0))
    lightweight(settings, p, "v1", sha)
    since = format_datetime(datetime(2020, 1, 1, tzinfo=UTC), usegmt=True)
    r = api(u).delete(tags_url(p, "v1"), headers={"If-Unmodified-Since": since})
    assert (r.status_code, r.json()) == (412, {"message": "412 Precondition Failed"})


def test_delete_racing_a_push_that_moves_the_tag_fails_and_keeps_it(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    seen = tip(settings, p, "main")
    lightweight(settings, p, "moving", seen)
    moved = new_commit_object(settings, p, seen)
    with push_lands_while_waiting(repo_path(settings, p), "refs/tags/moving", moved, seen):
        r = api(u).delete(tags_url(p, "moving"))
    assert (r.status_code, r.json()) == (400, {"message": "Failed to remove tag"})
    assert tag_target(settings, p, "moving") == moved
    assert_fsck_clean(settings, p)


def test_create_racing_a_push_of_the_same_tag_fails_and_keeps_the_push(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    pushed = new_commit_object(settings, p, tip(settings, p, "main"))
    with push_lands_while_waiting(repo_path(settings, p), "refs/tags/twin", pushed, None):
        r = api(u).post(tags_url(p), json={"tag_name": "twin", "ref": "main", "message": "mine"})
    assert (r.status_code, r.json()) == (400, {"message": "Tag twin already exists"})
    assert tag_target(settings, p, "twin") == pushed
