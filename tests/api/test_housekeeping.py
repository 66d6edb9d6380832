"""Housekeeping on request (GitLab's POST /projects/:id/housekeeping): git maintenance run for
real, Maintainers and up, one run per repository at a time, the repository sound after it."""

from __future__ import annotations

import fcntl
import os
import time

import pytest

from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.services import repositories
from tests.repositories import fsck_errors, git, new_project


def repo_path(settings, project_id: int):
    return repositories.store(settings).path(project_id)


def packs(path) -> list[str]:
    return sorted(p.name for p in (path / "objects" / "pack").glob("*.pack"))


def loose(path) -> list[str]:
    return sorted(
        f"{d.name}{f.name}" for d in (path / "objects").iterdir() if len(d.name) == 2 for f in d.iterdir()
    )


def unreachable_blob(path, content: bytes, *, age_hours: float) -> str:
    """A loose object no ref reaches, written `age_hours` ago."""
    blob = path / "stray.txt"
    blob.write_bytes(content)
    oid = git(path, "hash-object", "-w", str(blob)).stdout.decode().strip()
    blob.unlink()
    old = time.time() - age_hours * 3600
    os.utime(path / "objects" / oid[:2] / oid[2:], (old, old))
    return oid


def test_eager_housekeeping_repacks_everything_reachable_into_one_pack(api, make, settings):
    u = make.user()
    project = new_project(api, make, u)
    for n in range(3):
        make.commit(project["id"], {f"f{n}.txt": f"{n}\n"})
    path = repo_path(settings, project["id"])
    assert loose(path)
    r = api(u).post(f"/projects/{project['id']}/housekeeping")
    assert (r.status_code, r.json()) == (201, None)
    assert len(packs(path)) == 1
    assert loose(path) == []
    assert (path / "objects" / "info" / "commit-graphs").is_dir() or (
        path / "objects" / "info" / "commit-graph"
    ).exists()
    assert fsck_errors(path) == ""
    readme = api(u).get(f"/projects/{project['id']}/repository/files/f2.txt/raw?ref=main")
    assert (readme.status_code, readme.text) == (200, "2\n")


def test_eager_housekeeping_keeps_unreachable_objects(api, make, settings):
    u = make.user()
    project = new_project(api, make, u)
    path = repo_path(settings, project["id"])
    oid = unreachable_blob(path, b"kept for now\n", age_hours=24)
    assert api(u).post(f"/projects/{project['id']}/housekeeping", json={"task": "eager"}).status_code == 201
    assert git(path, "cat-file", "-e", oid, check=False).returncode == 0
    assert fsck_errors(path) == ""


def test_prune_removes_old_unreachable_objects_and_keeps_recent_ones(api, make, settings):
    u = make.user()
    project = new_project(api, make, u)
    path = repo_path(settings, project["id"])
    old = unreachable_blob(path, b"long gone\n", age_hours=24)
    recent = unreachable_blob(path, b"a push under way\n", age_hours=0)
    r = api(u).post(f"/projects/{project['id']}/housekeeping", data={"task": "prune"})
    assert r.status_code == 201
    assert git(path, "cat-file", "-e", old, check=False).returncode != 0
    assert git(path, "cat-file", "-e", recent, check=False).returncode == 0
    assert fsck_errors(path) == ""
    assert git(path, "rev-parse", "refs/heads/main").returncode == 0


def test_an_unknown_task_is_400(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = api(u).post(f"/projects/{p.id}/housekeeping", json={"task": "gc"})
    assert (r.status_code, r.json()) == (400, {"error": "task does not have a valid value"})


def test_a_project_without_a_repository_is_housekept_at_once(api, make):
    u = make.user()
    p = make.project(owner=u)
    assert api(u).post(f"/projects/{p.id}/housekeeping").status_code == 201


def test_a_run_under_way_makes_another_409(api, make, settings):
    u = make.user()
    project = new_project(api, make, u)
    lock = repo_path(settings, project["id"]) / "kiln-housekeeping.lock"
    with lock.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        r = api(u).post(f"/projects/{project['id']}/housekeeping")
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    assert (r.status_code, r.json()) == (
        409,
        {"message": "Somebody already triggered housekeeping for this resource"},
    )
    assert api(u).post(f"/projects/{project['id']}/housekeeping").status_code == 201


@pytest.mark.parametrize(
    ("caller", "status"),
    [
        ("anonymous", 401),
        ("stranger", 404),
        ("guest", 403),
        ("reporter", 403),
        ("developer", 403),
        ("maintainer", 201),
        ("owner", 201),
        ("admin", 201),
    ],
)
def test_housekeeping_takes_a_maintainer(api, make, caller, status):
    owner = make.user()
    levels = {"guest": GUEST, "reporter": REPORTER, "developer": DEVELOPER, "maintainer": MAINTAINER}
    members = {make.user(): level for level in levels.values()}
    by_level = {level: user for user, level in members.items()}
    p = make.project(owner=owner, members=members)
    who = {"anonymous": None, "stranger": make.user(), "owner": owner, "admin": "root"}.get(caller)
    if caller in levels:
        who = by_level[levels[caller]]
    assert api(who).post(f"/projects/{p.id}/housekeeping").status_code == status
