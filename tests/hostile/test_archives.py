"""Archives and symlinks, the way forges have been hurt: a symlink committed to a repository is
served as the link it is, never followed out of the tree; an archive holds only the
repository, under its prefix; a `path` can't climb out; and an archive git could not finish
is never answered as a whole one."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pygit2
import pytest

from kiln.services.repositories import store
from tests.asgi import exchange
from tests.factories.repositories import open_repository
from tests.repositories import new_project

LINK = pygit2.enums.FileMode.LINK
BLOB = pygit2.enums.FileMode.BLOB
ROOT = [(b"private-token", b"kiln-test-root-token")]


@pytest.fixture
def linked(api: Any, make: Any, owner: Any, settings: Any) -> dict[str, Any]:
    """A project whose main branch holds links out of the tree: to /etc/passwd, to the
    data dir's parent, and a directory link with a file name behind it."""
    project = new_project(api, make, owner)
    repo = open_repository(settings, project)
    tip = repo.references["refs/heads/main"].target
    index = pygit2.Index()
    index.read_tree(repo[tip].peel(pygit2.Commit).tree)
    for path, target in {"passwd": "/etc/passwd", "up": "../../../..", "etc": "/etc"}.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(target.encode()), LINK))
    index.add(pygit2.IndexEntry("docs/readme.txt", repo.create_blob(b"inside\n"), BLOB))
    tree = index.write_tree(repo)
    who = pygit2.Signature("Setup Bot", "bot@example.com")
    repo.create_commit("refs/heads/main", who, who, "links", tree, [tip])
    return project


def _archive(api: Any, owner: Any, project: dict[str, Any], query: str = "") -> Any:
    return api(owner).get(f"/projects/{project['id']}/repository/archive.tar{query}")


def test_a_symlink_is_served_as_its_target_text_not_followed(api, owner, linked):
    r = api(owner).get(f"/projects/{linked['id']}/repository/files/passwd/raw?ref=main")
    assert r.status_code == 200
    assert r.content == b"/etc/passwd"
    meta = api(owner).get(f"/projects/{linked['id']}/repository/files/passwd?ref=main").json()
    assert meta["size"] == len("/etc/passwd")


@pytest.mark.parametrize("path", ["etc%2Fpasswd", "up%2Fetc%2Fpasswd", "etc%2Fgroup"])
def test_a_path_through_a_symlinked_directory_is_not_found(api, owner, linked, path):
    r = api(owner).get(f"/projects/{linked['id']}/repository/files/{path}/raw?ref=main")
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


def test_a_path_climbing_out_through_a_symlink_is_invalid(api, owner, linked):
    r = api(owner).get(f"/projects/{linked['id']}/repository/files/up%2F..%2Fetc/raw?ref=main")
    assert (r.status_code, r.json()) == (400, {"error": "file_path should be a valid file path"})


def test_an_archive_holds_links_as_links_and_only_under_its_prefix(api, owner, linked):
    r = _archive(api, owner, linked)
    assert r.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        members = {m.name: m for m in tar.getmembers() if m.name != "pax_global_header"}
        prefix = r.headers["content-disposition"].split('filename="', 1)[1].split(".tar", 1)[0]
        assert all(name == prefix or name.startswith(prefix + "/") for name in members)
        assert all(".." not in Path(name).parts for name in members)
        link = members[f"{prefix}/passwd"]
        assert link.issym()
        assert link.linkname == "/etc/passwd"
        assert b"root:" not in r.content


@pytest.mark.parametrize("path", ["..", "../..", "docs/../..", "etc/passwd", "up/x", "up/..", "%2E%2E"])
def test_an_archive_path_that_leaves_the_tree_is_not_found(api, owner, linked, path):
    r = _archive(api, owner, linked, f"?path={path}")
    assert r.status_code == 404, r.text


def test_an_archive_of_a_directory_holds_that_directory_only(api, owner, linked):
    r = _archive(api, owner, linked, "?path=docs")
    assert r.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(r.content)) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    assert [n.split("/", 1)[1] for n in names] == ["docs/readme.txt"]


def test_an_archive_git_could_not_finish_is_cut_off_not_answered_whole(client, api, owner, linked, settings):
    """A blob gone from the repository (a disk fault) stops `git archive` part way: the
    answer must end broken, so no client takes the part for the whole."""
    repo = open_repository(settings, linked)
    tip = repo.references["refs/heads/main"].target
    index = pygit2.Index()
    index.read_tree(repo[tip].peel(pygit2.Commit).tree)
    index.add(pygit2.IndexEntry("a-first.bin", repo.create_blob(bytes(range(256)) * 8192), BLOB))
    lost = repo.create_blob(b"this blob goes missing\n")
    index.add(pygit2.IndexEntry("z-last.txt", lost, BLOB))
    who = pygit2.Signature("Setup Bot", "bot@example.com")
    repo.create_commit("refs/heads/main", who, who, "big then lost", index.write_tree(repo), [tip])
    loose = store(settings).path(linked["id"]) / "objects" / str(lost)[:2] / str(lost)[2:]
    kept = loose.with_name(loose.name + ".kept")
    shutil.move(loose, kept)
    try:
        seen = exchange(
            client,
            "GET",
            f"/api/v4/projects/{linked['id']}/repository/archive",
            [(b"private-token", owner.token.encode())],
            query=b"format=tar",
        )
    finally:
        shutil.move(kept, loose)
    assert seen.status == 200
    assert len(seen.body) > 0
    assert not seen.ended
    assert seen.raised is not None
