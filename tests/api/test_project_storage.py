"""Where a project's repository is stored and a snapshot of it (GitLab's GET
/projects/:id/storage and GET /projects/:id/snapshot, administrators only)."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from kiln.models.namespaces import OWNER
from kiln.services import repositories
from tests.repositories import fsck_errors, git, new_project
from tests.statements import count


def test_storage_tells_the_hashed_path_of_the_repository(api, make, settings):
    u = make.user()
    p = make.project(owner=u)
    r = api("root").get(f"/projects/{p.id}/storage")
    assert r.status_code == 200
    digest = hashlib.sha256(str(p.id).encode()).hexdigest()
    body = r.json()
    assert body == {
        "project_id": p.id,
        "disk_path": f"@hashed/{digest[:2]}/{digest[2:4]}/{digest}",
        "created_at": body["created_at"],
        "repository_storage": "default",
    }
    assert body["created_at"].endswith("Z")
    assert (settings.data_dir / "repositories" / f"{body['disk_path']}.git").parent.name == digest[2:4]


def test_storage_names_the_project_by_path_too(api, make):
    u = make.user()
    p = make.project(owner=u, path="by-path")
    r = api("root").get(f"/projects/{u.username}%2Fby-path/storage")
    assert (r.status_code, r.json()["project_id"]) == (200, p.id)


def test_storage_of_a_missing_project_is_404(api):
    r = api("root").get("/projects/999999/storage")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


@pytest.mark.parametrize("route", ["storage", "snapshot"])
@pytest.mark.parametrize(("caller", "status"), [("anonymous", 401), ("owner", 403), ("stranger", 403)])
def test_storage_and_snapshots_are_for_administrators(api, make, route, caller, status):
    owner = make.user()
    p = make.project(owner=owner, visibility="public")
    who = {"anonymous": None, "owner": owner, "stranger": make.user()}[caller]
    r = api(who).get(f"/projects/{p.id}/{route}")
    assert r.status_code == status
    if status == 403:
        assert r.json() == {"message": "403 Forbidden"}


def test_a_group_owner_is_no_administrator_either(api, make):
    u = make.user()
    g = make.group(members={u: OWNER})
    p = make.project(namespace=g)
    assert api(u).get(f"/projects/{p.id}/storage").status_code == 403


def untar(content: bytes, into) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(content)) as tar:
        names = tar.getnames()
        tar.extractall(into, filter="data")
    return names


def test_a_snapshot_is_a_tar_of_the_bare_repository(api, make, settings, tmp_path):
    u = make.user()
    project = new_project(api, make, u)
    make.commit(project["id"], {"second.txt": "2\n"})
    head = git(repositories.store(settings).path(project["id"]), "rev-parse", "refs/heads/main").stdout
    r = api("root").get(f"/projects/{project['id']}/snapshot")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/x-tar")
    assert r.headers["content-disposition"].startswith('attachment; filename="snapshot.tar"')
    names = untar(r.content, tmp_path / "snap")
    assert "HEAD" in names
    assert "objects" in names
    assert "refs" in names
    assert "config" not in names
    snap = tmp_path / "snap"
    assert fsck_errors(snap) == ""
    assert git(snap, "rev-parse", "refs/heads/main").stdout == head
    assert git(snap, "show", "main:second.txt").stdout == b"2\n"


def test_a_snapshot_after_housekeeping_holds_the_pack(api, make, settings, tmp_path):
    u = make.user()
    project = new_project(api, make, u)
    assert api(u).post(f"/projects/{project['id']}/housekeeping").status_code == 201
    names = untar(api("root").get(f"/projects/{project['id']}/snapshot").content, tmp_path / "snap")
    assert any(n.startswith("objects/pack/") and n.endswith(".pack") for n in names)
    assert fsck_errors(tmp_path / "snap") == ""


def test_a_snapshot_of_a_missing_wiki_is_404(api, make):
    u = make.user()
    project = new_project(api, make, u)
    r = api("root").get(f"/projects/{project['id']}/snapshot?wiki=true")
    assert (r.status_code, r.json()) == (404, {"message": "404 Repository Not Found"})


def test_a_snapshot_of_a_missing_project_is_404(api):
    r = api("root").get("/projects/999999/snapshot")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_storage_costs_the_token_and_the_project(api, make, runtime):
    p = make.project()
    assert min(count(runtime, lambda: api("root").get(f"/projects/{p.id}/storage")) for _ in range(2)) <= 2
