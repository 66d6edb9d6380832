"""The test set-up tells the truth: a project the repository factory writes is what the API
would have made, and every test starts from root alone."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from kiln.git.layout import repository_path
from kiln.models import Event, ProtectedBranch, User
from tests.repositories import fsck_errors

# What differs between any two projects, however they were made.
_OWN = {"id", "name", "path", "path_with_namespace", "name_with_namespace", "created_at", "updated_at"}
_OWN |= {
    "last_activity_at",
    "web_url",
    "http_url_to_repo",
    "ssh_url_to_repo",
    "readme_url",
    "_links",
    "runners_token",
}


def view(api: Any, owner: Any, project_id: int) -> dict[str, Any]:
    r = api(owner).get(f"/projects/{project_id}")
    assert r.status_code == 200, r.text
    return {k: v for k, v in r.json().items() if k not in _OWN}


def kept(db: Any, project_id: int) -> tuple[list[str], list[tuple[str, str]]]:
    branches = db.scalars(select(ProtectedBranch.name).where(ProtectedBranch.project_id == project_id)).all()
    events = db.execute(select(Event.action, Event.target_type).where(Event.project_id == project_id)).all()
    return list(branches), [tuple(e) for e in events]


def test_a_made_project_with_a_readme_is_what_the_api_creates(api, make, db, settings):
    owner = make.user(name="Owner Person")
    created = api(owner).post("/projects", json={"name": "created", "initialize_with_readme": True}).json()
    made = make.project_with_repository(owner=owner, path="made")
    assert view(api, owner, made.id) == view(api, owner, created["id"])
    assert kept(db, made.id) == kept(db, created["id"])
    files = [
        api(owner).get(f"/projects/{pid}/repository/files/README.md/raw", params={"ref": "main"}).content
        for pid in (created["id"], made.id)
    ]
    assert files == [b"# created\n", b"# made\n"]
    first = [
        {k: c[k] for k in ("title", "author_name", "author_email", "committer_name", "parent_ids")}
        for pid in (created["id"], made.id)
        for c in api(owner).get(f"/projects/{pid}/repository/commits").json()
    ]
    assert first[0] == first[1]


def test_a_made_empty_project_is_what_the_api_creates(api, make):
    owner = make.user()
    created = api(owner).post("/projects", json={"name": "created"}).json()
    made = make.project_with_repository(owner=owner, path="made", readme=False)
    assert view(api, owner, made.id) == view(api, owner, created["id"])


def test_made_commits_are_sound_and_seen_by_the_api(api, make, settings):
    owner = make.user()
    project = make.project_with_repository(owner=owner)
    first = make.commit(project, {"docs/a.md": "a\n", "run.sh": b"#!/bin/sh\n"}, executable=("run.sh",))
    second = make.commit(project, {"docs/a.md": None}, branch="topic", start="main", message="drop a")
    r = api(owner).get(f"/projects/{project.id}/repository/commits", params={"ref_name": "topic"})
    assert [c["id"] for c in r.json()[:2]] == [second, first]
    tree = api(owner).get(
        f"/projects/{project.id}/repository/tree", params={"ref": "main", "recursive": True}
    )
    assert {(e["path"], e["mode"]) for e in tree.json() if e["type"] == "blob"} == {
        ("README.md", "100644"),
        ("docs/a.md", "100644"),
        ("run.sh", "100755"),
    }
    assert fsck_errors(repository_path(settings.data_dir / "repositories", project.id)) == ""


@pytest.mark.parametrize("run", [1, 2])
def test_every_test_starts_from_root_alone(db, make, run):
    # Each run writes a user; the other run, whichever comes second, must not see it.
    assert db.scalars(select(User.id)).all() == [1]
    assert make.user().id == 2
