"""GET /projects/:id/repository/archive[.format]: deterministic archives of a commit's tree."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
import time
import zipfile

import pytest

from kiln.git.refs import resolve_commit
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models import Project
from kiln.services.repositories import store

ALICE = Person("Alice", "alice@example.com")
FILES = {"README.md": None, "src/app.py": b"print('hi')\n", "docs/guide/intro.md": b"# Intro\n"}


def new_project(api, owner, name="demo", **fields):
    r = api(owner).post("/projects", json={"name": name, "initialize_with_readme": True, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def filled(api, make, settings, **fields):
    """A project whose main has README.md, src/app.py and docs/guide/intro.md."""
    u = make.user()
    p = new_project(api, u, **fields)
    repo = store(settings).open(p["id"])
    commit, _ = commit_actions(
        repo,
        branch="main",
        actions=[FileAction("create", path, data) for path, data in FILES.items() if data is not None],
        message="Files",
        author=ALICE,
        committer=ALICE,
    )
    return u, p, str(commit.id)


def archive(api, caller, project_id, suffix="", **query):
    return api(caller).get(f"/projects/{project_id}/repository/archive{suffix}", params=query)


def tar_names(data: bytes, mode: str = "r:*") -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(data), mode=mode) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def test_default_archive_is_a_tar_gz_named_after_project_ref_and_sha(api, make, settings):
    u, p, sha = filled(api, make, settings)
    r = archive(api, u, p["id"])
    assert r.status_code == 200
    prefix = f"{p['path']}-main-{sha}"
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers["Content-Disposition"].startswith(f'attachment; filename="{prefix}.tar.gz"')
    assert r.content[:2] == b"\x1f\x8b"
    assert tar_names(r.content, "r:gz") == [f"{prefix}/{name}" for name in sorted(FILES)]


def test_archive_members_hold_the_committed_content(api, make, settings):
    u, p, sha = filled(api, make, settings)
    data = archive(api, u, p["id"], ".tar").content
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.extractfile(f"{p['path']}-main-{sha}/src/app.py")
        assert member is not None
        assert member.read() == b"print('hi')\n"


def test_archives_are_byte_identical_on_every_request(api, make, settings):
    u, p, _ = filled(api, make, settings)
    suffixes = ("", ".tar.bz2", ".zip", ".tar")
    first = {suffix: archive(api, u, p["id"], suffix).content for suffix in suffixes}
    time.sleep(1.1)  # a timestamp of "now" anywhere would differ by now
    assert {suffix: archive(api, u, p["id"], suffix).content for suffix in suffixes} == first


def test_gzip_header_carries_no_timestamp_or_name(api, make, settings):
    u, p, _ = filled(api, make, settings)
    data = archive(api, u, p["id"], ".tar.gz").content
    flags, mtime = data[3], int.from_bytes(data[4:8], "little")
    assert (flags & 0x08, mtime) == (0, 0)


def test_tar_members_are_dated_by_the_commit_not_the_request(api, make, settings):
    u, p, sha = filled(api, make, settings)
    committed = resolve_commit(store(settings).open(p["id"]), sha).committer.time
    with tarfile.open(fileobj=io.BytesIO(archive(api, u, p["id"], ".tar").content)) as tar:
        assert {m.mtime for m in tar.getmembers()} == {committed}


@pytest.mark.parametrize(
    ("suffix", "extension"),
    [
        (".tar.gz", "tar.gz"),
        (".tgz", "tar.gz"),
        (".gz", "tar.gz"),
        (".tar.bz2", "tar.bz2"),
        (".tbz", "tar.bz2"),
        (".tbz2", "tar.bz2"),
        (".tb2", "tar.bz2"),
        (".bz2", "tar.bz2"),
        (".tar", "tar"),
        (".zip", "zip"),
    ],
)
def test_each_format_suffix_gives_a_valid_archive(api, make, settings, suffix, extension):
    u, p, sha = filled(api, make, settings)
    r = archive(api, u, p["id"], suffix)
    assert r.status_code == 200
    prefix = f"{p['path']}-main-{sha}"
    assert f'filename="{prefix}.{extension}"' in r.headers["Content-Disposition"]
    expected = [f"{prefix}/{name}" for name in sorted(FILES)]
    if extension == "zip":
        assert r.headers["Content-Type"] == "application/zip"
        with zipfile.ZipFile(io.BytesIO(r.content)) as z:
            assert z.testzip() is None
            assert sorted(n for n in z.namelist() if not n.endswith("/")) == expected
        return
    assert r.headers["Content-Type"] == "application/octet-stream"
    raw = {"tar.gz": gzip.decompress, "tar.bz2": bz2.decompress, "tar": bytes}[extension](r.content)
    assert tar_names(raw, "r:") == expected


def test_format_parameter_chooses_the_format_without_a_suffix(api, make, settings):
    u, p, sha = filled(api, make, settings)
    r = archive(api, u, p["id"], format="zip")
    assert (r.status_code, r.content[:2]) == (200, b"PK")
    assert f'filename="{p["path"]}-main-{sha}.zip"' in r.headers["Content-Disposition"]


def test_unknown_format_parameter_falls_back_to_tar_gz(api, make, settings):
    u, p, _ = filled(api, make, settings)
    r = archive(api, u, p["id"], format="rar")
    assert (r.status_code, r.content[:2]) == (200, b"\x1f\x8b")


def test_unknown_suffix_is_no_route(api, make, settings):
    u, p, _ = filled(api, make, settings)
    assert archive(api, u, p["id"], ".rar").status_code == 404


def test_path_limits_the_archive_to_a_subdirectory(api, make, settings):
    u, p, sha = filled(api, make, settings)
    r = archive(api, u, p["id"], ".tar", path="docs/guide")
    assert r.status_code == 200
    prefix = f"{p['path']}-main-{sha}-docs-guide"
    assert f'filename="{prefix}.tar"' in r.headers["Content-Disposition"]
    assert tar_names(r.content) == [f"{prefix}/docs/guide/intro.md"]


def test_unknown_path_is_404_file_not_found(api, make, settings):
    u, p, _ = filled(api, make, settings)
    for path in ("nope", "../etc"):
        r = archive(api, u, p["id"], path=path)
        assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"}), path


def test_sha_names_a_branch_tag_or_commit(api, make, settings):
    u, p, sha = filled(api, make, settings)
    repo = store(settings).open(p["id"])
    first = str(resolve_commit(repo, "main~1").id)
    repo.references.create("refs/heads/release/1.0", resolve_commit(repo, "main~1").id)
    r = archive(api, u, p["id"], ".tar", sha="release/1.0")
    prefix = f"{p['path']}-release-1.0-{first}"
    assert f'filename="{prefix}.tar"' in r.headers["Content-Disposition"]
    assert tar_names(r.content) == [f"{prefix}/README.md"]
    r = archive(api, u, p["id"], ".tar", sha=sha)
    assert f'filename="{p["path"]}-{sha}-{sha}.tar"' in r.headers["Content-Disposition"]


def test_unknown_sha_is_404_file_not_found(api, make, settings):
    u, p, _ = filled(api, make, settings)
    r = archive(api, u, p["id"], sha="xxx")
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


def test_empty_repository_has_no_archive(api, make):
    u = make.user()
    p = make.project(owner=u)
    r = archive(api, u, p.id)
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


def test_include_lfs_blobs_is_accepted(api, make, settings):
    u, p, _ = filled(api, make, settings)
    assert archive(api, u, p["id"], include_lfs_blobs="false").status_code == 200


def test_anonymous_downloads_a_public_project(api, make, settings):
    _, p, _ = filled(api, make, settings, visibility="public")
    r = archive(api, None, p["id"], ".zip")
    assert (r.status_code, r.content[:2]) == (200, b"PK")


def test_private_project_is_404_to_outsiders_and_403_to_guests(api, make, db, settings):
    _, p, _ = filled(api, make, settings)
    r = archive(api, None, p["id"])
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    guest = make.user()
    make.member(db.get(Project, p["id"]), guest, 10)
    r = archive(api, guest, p["id"])
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_project_path_with_dots_addressed_by_full_path(api, make, settings):
    u, p, sha = filled(api, make, settings, path="path.with.dot")
    ident = p["path_with_namespace"].replace("/", "%2F")
    r = api(u).get(f"/projects/{ident}/repository/archive.zip")
    assert r.status_code == 200
    assert f'filename="path.with.dot-main-{sha}.zip"' in r.headers["Content-Disposition"]


def test_head_answers_the_headers_without_a_body(api, make, settings):
    u, p, sha = filled(api, make, settings)
    r = api(u).head(f"/projects/{p['id']}/repository/archive.zip")
    assert (r.status_code, r.content) == (200, b"")
    assert f'filename="{p["path"]}-main-{sha}.zip"' in r.headers["Content-Disposition"]
