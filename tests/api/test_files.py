"""Repository files API (spec part 1 "Repository files"): read, raw, blame, and one-file commits."""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select

from kiln.entities._format import iso
from kiln.git.files import STREAM_BYTES
from kiln.git.writes import STALE, Person
from kiln.models import Event, Project, ProtectedBranch
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.services.repositories import store
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import fsck_errors, git, new_project, push_with_git

BOT = Person("Setup Bot", "bot@example.com")
NOT_ON_BRANCH = "You can only create or edit files when you are on a branch"
BAD_PATH = {"error": "file_path should be a valid file path"}


# ---------------------------------------------------------------------------- helpers


def repo_path(settings, project) -> Path:
    return store(settings).path(project["id"])


def commit_files(settings, project, files: dict[str, bytes], *, branch: str = "main", message: str = "setup"):
    """Commit `files` (created or replaced) onto `branch`, written straight into the repository."""
    return write_commit(
        open_repository(settings, project),
        files,
        branch=branch,
        message=message,
        author=(BOT.name, BOT.email),
    )


def tip(settings, project, branch: str = "main") -> str | None:
    result = git(
        repo_path(settings, project), "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False
    )
    return result.stdout.decode().strip() or None


def assert_fsck_clean(settings, project) -> None:
    assert fsck_errors(repo_path(settings, project)) == ""


def files_url(project, path_enc: str, suffix: str = "") -> str:
    return f"/projects/{project['id']}/repository/files/{path_enc}{suffix}"


def write_body(**fields):
    return {"branch": "main", "commit_message": "change", **fields}


# ---------------------------------------------------------------------------- reading a file


def test_get_returns_the_file_record_with_base64_content(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_files(settings, p, {"docs/guide.md": b"# Guide\n"})
    blob_id = str(open_repository(settings, p).revparse_single(f"{sha}:docs/guide.md").id)
    r = api(u).get(files_url(p, "docs%2Fguide.md"), params={"ref": "main"})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {
        "file_name": "guide.md",
        "file_path": "docs/guide.md",
        "size": 8,
        "encoding": "base64",
        "content": base64.b64encode(b"# Guide\n").decode(),
        "content_sha256": hashlib.sha256(b"# Guide\n").hexdigest(),
        "ref": "main",
        "blob_id": blob_id,
        "commit_id": sha,
        "last_commit_id": sha,
        "execute_filemode": False,
    }


def test_last_commit_id_is_the_last_commit_touching_the_path(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = commit_files(settings, p, {"a.txt": b"a"})
    head = commit_files(settings, p, {"b.txt": b"b"})
    body = api(u).get(files_url(p, "a.txt"), params={"ref": "main"}).json()
    assert (body["commit_id"], body["last_commit_id"]) == (head, first)


def test_last_commit_id_treats_the_path_literally(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    star = commit_files(settings, p, {"*.md": b"glob-looking name"})
    commit_files(settings, p, {"other.md": b"matched by the glob, not the literal name"})
    body = api(u).get(files_url(p, "%2A.md"), params={"ref": "main"}).json()
    assert body["last_commit_id"] == star


def test_ref_may_be_a_tag_or_a_commit_sha_and_is_echoed(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    old = commit_files(settings, p, {"v.txt": b"one"})
    git(repo_path(settings, p), "tag", "v1", old)
    commit_files(settings, p, {"v.txt": b"two"})
    for ref in ("v1", old, old[:8]):
        body = api(u).get(files_url(p, "v.txt"), params={"ref": ref}).json()
        assert (body["ref"], body["commit_id"], base64.b64decode(body["content"])) == (ref, old, b"one")


def test_encoded_slashes_reach_nested_paths(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"docs/api/README.md": b"deep"})
    r = api(u).get(files_url(p, "docs%2Fapi%2FREADME.md"), params={"ref": "main"})
    assert (r.status_code, r.json()["file_path"], r.json()["file_name"]) == (
        200,
        "docs/api/README.md",
        "README.md",
    )


@pytest.mark.parametrize(
    "name", ["README.md", "data.json", "archive.tar.gz", "page.html", "notes.txt", ".gitignore"]
)
def test_a_name_with_dots_is_the_file_name_not_a_format_suffix(api, make, settings, name):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {name: b"x"})
    r = api(u).get(files_url(p, name), params={"ref": "main"})
    assert (r.status_code, r.headers["content-type"], r.json()["file_name"]) == (
        200,
        "application/json",
        name,
    )


def test_names_with_spaces_and_unicode_are_found(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"dir with space/ünïcødé 名.txt": b"u"})
    r = api(u).get(
        files_url(p, "dir%20with%20space%2F%C3%BCn%C3%AFc%C3%B8d%C3%A9%20%E5%90%8D.txt"),
        params={"ref": "main"},
    )
    assert (r.status_code, r.json()["file_path"]) == (200, "dir with space/ünïcødé 名.txt")
    assert r.headers["x-service-file-name"] == "%C3%BCn%C3%AFc%C3%B8d%C3%A9 %E5%90%8D.txt"


def test_get_without_ref_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "README.md"))
    assert (r.status_code, r.json()) == (400, {"error": "ref is missing"})


def test_get_with_blank_ref_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "README.md"), params={"ref": ""})
    assert (r.status_code, r.json()) == (400, {"error": "ref is empty"})


def test_missing_file_is_404_file_not_found(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "nope.txt"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


def test_a_directory_is_not_a_file(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"docs/a.md": b"a"})
    r = api(u).get(files_url(p, "docs"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


def test_missing_ref_is_404_commit_not_found(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "README.md"), params={"ref": "no-such-branch"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


def test_empty_repository_has_no_commit(api, make):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    r = api(u).get(files_url(p, "README.md"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


# ---------------------------------------------------------------------------- HEAD


def metadata_headers(r, prefix: str) -> dict[str, str]:
    """The response's metadata headers under `prefix`, named without it."""
    return {k.removeprefix(prefix): v for k, v in r.headers.items() if k.startswith(prefix)}


def test_head_answers_metadata_headers_and_no_body(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_files(settings, p, {"bin/run.sh": b"#!/bin/sh\n"})
    full = api(u).get(files_url(p, "bin%2Frun.sh"), params={"ref": "main"}).json()
    r = api(u).head(files_url(p, "bin%2Frun.sh"), params={"ref": "main"})
    assert (r.status_code, r.content) == (200, b"")
    assert metadata_headers(r, "x-service-") == {
        "blob-id": full["blob_id"],
        "commit-id": sha,
        "content-sha256": full["content_sha256"],
        "encoding": "base64",
        "execute-filemode": "false",
        "file-name": "run.sh",
        "file-path": "bin/run.sh",
        "last-commit-id": sha,
        "ref": "main",
        "size": "10",
    }


# The spec names them X-Service-*; GitLab's clients read X-Gitlab-*: every file read sends both.
METADATA_READS = [
    ("get", ""),
    ("head", ""),
    ("get", "/raw"),
    ("head", "/raw"),
    ("get", "/blame"),
    ("head", "/blame"),
]


@pytest.mark.parametrize(("method", "suffix"), METADATA_READS)
def test_every_metadata_header_is_also_sent_under_its_gitlab_name(api, make, settings, method, suffix):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_files(settings, p, {"bin/run.sh": b"#!/bin/sh\n"})
    full = api(u).get(files_url(p, "bin%2Frun.sh"), params={"ref": "main"}).json()
    r = getattr(api(u), method)(files_url(p, "bin%2Frun.sh", suffix), params={"ref": "main"})
    assert r.status_code == 200
    gitlab = metadata_headers(r, "x-gitlab-")
    assert gitlab == {
        "blob-id": full["blob_id"],
        "commit-id": sha,
        "content-sha256": full["content_sha256"],
        "encoding": "base64",
        "execute-filemode": "false",
        "file-name": "run.sh",
        "file-path": "bin/run.sh",
        "last-commit-id": sha,
        "ref": "main",
        "size": "10",
    }
    assert metadata_headers(r, "x-service-") == gitlab


@pytest.mark.parametrize(("method", "suffix"), METADATA_READS)
def test_a_large_files_metadata_headers_go_under_both_names(api, make, settings, method, suffix):
    """Read in pieces (over what kiln reads whole), the headers are a small file's."""
    u = make.user()
    p = new_project(api, make, u)
    data = b"y" * (STREAM_BYTES + 1)
    commit_files(settings, p, {"big.txt": data})
    r = getattr(api(u), method)(files_url(p, "big.txt", suffix), params={"ref": "main"})
    assert r.status_code == 200
    gitlab = metadata_headers(r, "x-gitlab-")
    assert (gitlab["content-sha256"], gitlab["size"]) == (hashlib.sha256(data).hexdigest(), str(len(data)))
    assert metadata_headers(r, "x-service-") == gitlab


def test_a_percent_encoded_header_value_is_the_same_under_both_names(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"dir/ü 100%.txt": b"x"})
    r = api(u).head(files_url(p, "dir%2F%C3%BC%20100%25.txt"), params={"ref": "main"})
    assert r.headers["x-gitlab-file-name"] == r.headers["x-service-file-name"] == "%C3%BC 100%25.txt"
    assert r.headers["x-gitlab-file-path"] == r.headers["x-service-file-path"] == "dir/%C3%BC 100%25.txt"


def test_blobs_by_id_send_no_metadata_headers(api, make, settings):
    """As GitLab: blobs by id have no path, ref or commit to tell."""
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"a.txt": b"a\n"})
    blob_id = api(u).get(files_url(p, "a.txt"), params={"ref": "main"}).json()["blob_id"]
    for suffix in ("", "/raw"):
        r = api(u).get(f"/projects/{p['id']}/repository/blobs/{blob_id}{suffix}")
        assert r.status_code == 200
        assert [k for k in r.headers if k.startswith(("x-gitlab-", "x-service-"))] == []


@pytest.mark.parametrize("size", [0, 1, 2, 3, 10_000])
def test_head_reports_the_length_get_sends(api, make, settings, size):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"f.bin": bytes(range(256)) * (size // 256) + b"x" * (size % 256)})
    got = api(u).get(files_url(p, "f.bin"), params={"ref": "main"})
    head = api(u).head(files_url(p, "f.bin"), params={"ref": "main"})
    assert head.headers["content-length"] == got.headers["content-length"] == str(len(got.content))


def test_get_carries_the_same_metadata_headers(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "README.md"), params={"ref": "main"})
    assert (r.headers["x-service-file-path"], r.headers["x-service-blob-id"]) == (
        "README.md",
        r.json()["blob_id"],
    )


def test_head_of_a_missing_file_is_404_without_body(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).head(files_url(p, "nope.txt"), params={"ref": "main"})
    assert (r.status_code, r.content) == (404, b"")


def test_head_without_ref_is_400_without_body(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).head(files_url(p, "README.md"))
    assert (r.status_code, r.content) == (400, b"")


# ---------------------------------------------------------------------------- raw


def test_raw_returns_the_bytes_as_plain_text(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"page.html": b"<script>alert(1)</script>\n"})
    r = api(u).get(files_url(p, "page.html", "/raw"), params={"ref": "main"})
    assert (r.status_code, r.content) == (200, b"<script>alert(1)</script>\n")
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["content-disposition"] == "inline; filename=\"page.html\"; filename*=UTF-8''page.html"
    assert r.headers["cache-control"] == "max-age=0, private, must-revalidate, no-store, no-cache"
    assert r.headers["x-service-file-path"] == "page.html"


def test_raw_binary_is_byte_exact_with_a_type_from_its_name(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))
    commit_files(settings, p, {"img/logo.png": png})
    r = api(u).get(files_url(p, "img%2Flogo.png", "/raw"), params={"ref": "main"})
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, png, "image/png")
    assert r.headers["content-length"] == str(len(png))


def test_raw_binary_without_a_known_type_is_octet_stream(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"blob.bin": b"\x00\x01\x02\xff"})
    r = api(u).get(files_url(p, "blob.bin", "/raw"), params={"ref": "main"})
    assert (r.content, r.headers["content-type"]) == (b"\x00\x01\x02\xff", "application/octet-stream")


def test_raw_without_ref_reads_the_default_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"x.txt": b"on main"})
    commit_files(settings, p, {"x.txt": b"on other"}, branch="other")
    r = api(u).get(files_url(p, "x.txt", "/raw"))
    assert (r.status_code, r.content, r.headers["x-service-ref"]) == (200, b"on main", "main")


def test_raw_ignores_lfs(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "README.md", "/raw"), params={"ref": "main", "lfs": "true"})
    assert (r.status_code, r.content) == (200, f"# {p['name']}\n".encode())


def test_head_raw_answers_headers_only(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"x.txt": b"12345"})
    r = api(u).head(files_url(p, "x.txt", "/raw"), params={"ref": "main"})
    assert (r.status_code, r.content, r.headers["x-service-size"]) == (200, b"", "5")


def test_raw_missing_file_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "nope", "/raw"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


# A file this large is read from git in pieces as its raw bytes go out.
PIECED = STREAM_BYTES + 4321
# Headers that differ from one answer to the next whatever the file.
PER_ANSWER = ("date", "x-request-id")


def test_a_raw_file_read_in_pieces_has_the_bytes_and_headers_of_a_whole_read(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    small = b"<p>small</p>\n"
    large = b"".join(f"<p>{n}</p>\n".encode() for n in range(PIECED // 8))
    commit_files(settings, p, {"small.html": small, "large.html": large})
    whole = api(u).get(files_url(p, "small.html", "/raw"), params={"ref": "main"})
    r = api(u).get(files_url(p, "large.html", "/raw"), params={"ref": "main"})
    assert (r.status_code, r.content == large, int(r.headers["content-length"])) == (200, True, len(large))
    assert (r.headers["x-service-content-sha256"], r.headers["x-service-size"]) == (
        hashlib.sha256(large).hexdigest(),
        str(len(large)),
    )
    expected = {name: value.replace("small", "large") for name, value in whole.headers.items()}
    for name in (
        "content-length",
        *(
            f"{prefix}{field}"
            for prefix in ("x-gitlab-", "x-service-")
            for field in ("content-sha256", "size", "blob-id")
        ),
        *PER_ANSWER,
    ):
        expected.pop(name, None)
    assert {name: r.headers[name] for name in expected} == expected


def test_a_raw_file_read_in_pieces_is_text_or_binary_by_libgit2s_rule(api, make, settings):
    """Its first bytes decide, as libgit2 decides for a file read whole: a NUL, a UTF-16 or
    UTF-32 byte-order mark, or more than one control byte per 128 printable ones."""
    u = make.user()
    p = new_project(api, make, u)
    line = b"x" * 63 + b"\n"
    heads = {
        "plain": line * 140,
        "nul": line * 10 + b"\x00" + line * 130,
        "nul_past_the_probe": line * 125 + b"\x00" + line * 15,
        "utf8_bom": b"\xef\xbb\xbf" + line * 140,
        "utf16_bom": b"\xff\xfe" + line * 140,
        "control_every_64": (b"\x01" + line[1:]) * 140,
        "control_every_200": (b"\x01" + line[1:] + line * 2) * 47,
        "tabs_and_escapes": (b"\t\x1b[1m" + line[5:]) * 140,
    }
    filler = b"y" * PIECED
    commit_files(
        settings,
        p,
        {**{f"{k}.small": v for k, v in heads.items()}, **{k: v + filler for k, v in heads.items()}},
    )

    def kind(path: str) -> str:
        r = api(u).get(files_url(p, path, "/raw"), params={"ref": "main"})
        assert r.status_code == 200, r.text
        return r.headers["content-type"]

    kinds = {name: kind(name) for name in heads}
    assert kinds == {name: kind(f"{name}.small") for name in heads}
    text, binary = "text/plain; charset=utf-8", "application/octet-stream"
    assert list(kinds.values()) == [text, binary, text, text, binary, binary, text, text]


def test_head_of_a_raw_file_read_in_pieces_tells_what_get_sends(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    data = bytes(range(256)) * (PIECED // 256)
    commit_files(settings, p, {"big.bin": data})
    head = api(u).head(files_url(p, "big.bin", "/raw"), params={"ref": "main"})
    got = api(u).get(files_url(p, "big.bin", "/raw"), params={"ref": "main"})
    assert (head.status_code, head.content, got.content == data) == (200, b"", True)
    assert {k: v for k, v in head.headers.items() if k not in PER_ANSWER} == {
        k: v for k, v in got.headers.items() if k not in PER_ANSWER
    }


def test_a_50_mb_binary_file_round_trips(api, make, settings, configure):
    """Base64 JSON in (about 67 MB of body, past the default JSON limit, so this instance's
    operator has raised it), base64 JSON and a streamed raw body out."""
    configure(max_json_body_bytes=100 * 1024 * 1024)
    u = make.user()
    p = new_project(api, make, u)
    data = os.urandom(50 * 1024 * 1024)
    r = api(u).post(
        files_url(p, "big.bin"), json=write_body(content=base64.b64encode(data).decode(), encoding="base64")
    )
    assert (r.status_code, r.json()) == (201, {"file_path": "big.bin", "branch": "main"})
    raw = api(u).get(files_url(p, "big.bin", "/raw"), params={"ref": "main"})
    assert (raw.status_code, len(raw.content), raw.content == data) == (200, len(data), True)
    body = api(u).get(files_url(p, "big.bin"), params={"ref": "main"}).json()
    assert (body["size"], body["content_sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert base64.b64decode(body["content"]) == data
    assert_fsck_clean(settings, p)


# ---------------------------------------------------------------------------- invalid paths


BAD_PATHS = [
    "..%2Fetc%2Fpasswd",
    "a%2F..%2F..%2Fb",
    "%2Fetc%2Fpasswd",
    "%2E%2E",
    "%2E",
    "a%2F..",
    "%2E%2E%5Cx",
]


@pytest.mark.parametrize("path", BAD_PATHS)
@pytest.mark.parametrize("suffix", ["", "/raw", "/blame"])
def test_reading_a_traversal_or_absolute_path_is_400(api, make, path, suffix):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, path, suffix), params={"ref": "main"})
    assert (r.status_code, r.json()) == (400, BAD_PATH)


@pytest.mark.parametrize("path", BAD_PATHS)
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_writing_a_traversal_or_absolute_path_is_400_and_writes_nothing(api, make, settings, path, method):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = getattr(api(u), method)(files_url(p, path), params=write_body(content="x"))
    assert (r.status_code, r.json()) == (400, BAD_PATH)
    assert tip(settings, p) == before


@pytest.mark.parametrize("path", ["a%2F%2Fb", "a%2F.%2Fb", "a%2F", "a%2F.git%2Fconfig"])
def test_a_path_with_an_empty_or_dot_part_is_refused_by_the_commit(api, make, settings, path):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).post(files_url(p, path), json=write_body(content="x"))
    assert r.status_code == 400
    assert r.json()["message"].startswith("Your changes could not be committed")
    assert tip(settings, p) == before


# ---------------------------------------------------------------------------- blame


def blame_project(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    first = commit_files(settings, p, {"f.txt": b"one\ntwo\nthree\n"}, message="first\n\nbody")
    second = commit_files(settings, p, {"f.txt": b"one\nTWO\nthree\nfour\n"}, message="second")
    return u, p, first, second


def test_blame_groups_consecutive_lines_by_commit(api, make, settings):
    u, p, first, second = blame_project(api, make, settings)
    r = api(u).get(files_url(p, "f.txt", "/blame"), params={"ref": "main"})
    assert r.status_code == 200
    assert [(g["commit"]["id"], g["lines"]) for g in r.json()] == [
        (first, ["one"]),
        (second, ["TWO"]),
        (first, ["three"]),
        (second, ["four"]),
    ]


def test_blame_commit_has_the_spec_fields(api, make, settings):
    u, p, first, _ = blame_project(api, make, settings)
    commit = api(u).get(files_url(p, "f.txt", "/blame"), params={"ref": "main"}).json()[0]["commit"]
    c = open_repository(settings, p)[first]
    assert commit == {
        "id": first,
        "message": "first\n\nbody",
        "parent_ids": [str(c.parent_ids[0])],
        "authored_date": iso(datetime.fromtimestamp(c.author.time, UTC)),
        "author_name": "Setup Bot",
        "author_email": "bot@example.com",
        "committed_date": iso(datetime.fromtimestamp(c.committer.time, UTC)),
        "committer_name": "Setup Bot",
        "committer_email": "bot@example.com",
    }


def test_blame_range_is_one_based_and_inclusive(api, make, settings):
    u, p, first, second = blame_project(api, make, settings)
    r = api(u).get(
        files_url(p, "f.txt", "/blame"), params={"ref": "main", "range[start]": 2, "range[end]": 3}
    )
    assert [(g["commit"]["id"], g["lines"]) for g in r.json()] == [(second, ["TWO"]), (first, ["three"])]


def test_blame_range_past_the_end_stops_at_the_last_line(api, make, settings):
    u, p, _, second = blame_project(api, make, settings)
    r = api(u).get(
        files_url(p, "f.txt", "/blame"), params={"ref": "main", "range[start]": 4, "range[end]": 99}
    )
    assert [(g["commit"]["id"], g["lines"]) for g in r.json()] == [(second, ["four"])]


def test_blame_range_starting_after_the_end_is_400(api, make, settings):
    u, p, _, _ = blame_project(api, make, settings)
    r = api(u).get(
        files_url(p, "f.txt", "/blame"), params={"ref": "main", "range[start]": 9, "range[end]": 10}
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": "400 Bad request - range is outside of the file length"},
    )


def test_blame_range_start_after_end_is_400(api, make, settings):
    u, p, _, _ = blame_project(api, make, settings)
    r = api(u).get(
        files_url(p, "f.txt", "/blame"), params={"ref": "main", "range[start]": 3, "range[end]": 2}
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": "range[start] must be less than or equal to range[end]"},
    )


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"range[start]": 0, "range[end]": 2}, "range[start] does not have a valid value"),
        ({"range[start]": 1, "range[end]": -1}, "range[end] does not have a valid value"),
        ({"range[start]": 1}, "range[end] is missing"),
        ({"range[start]": "x", "range[end]": 2}, "range[start] is invalid"),
    ],
)
def test_blame_range_values_are_validated(api, make, settings, query, error):
    u, p, _, _ = blame_project(api, make, settings)
    r = api(u).get(files_url(p, "f.txt", "/blame"), params={"ref": "main", **query})
    assert (r.status_code, r.json()) == (400, {"error": error})


def test_blame_of_a_file_with_a_non_utf8_line_replaces_the_bytes(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    sha = commit_files(settings, p, {"l.txt": b"caf\xe9\n"})
    r = api(u).get(files_url(p, "l.txt", "/blame"), params={"ref": "main"})
    assert [(g["commit"]["id"], g["lines"]) for g in r.json()] == [(sha, ["caf\ufffd"])]


def test_head_blame_answers_headers_only(api, make, settings):
    u, p, _, second = blame_project(api, make, settings)
    r = api(u).head(files_url(p, "f.txt", "/blame"), params={"ref": "main"})
    assert (r.status_code, r.content, r.headers["x-service-last-commit-id"]) == (200, b"", second)


def test_blame_of_a_missing_file_is_404(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).get(files_url(p, "nope", "/blame"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 File Not Found"})


# ---------------------------------------------------------------------------- who may read


def test_anonymous_reads_files_of_a_public_project(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    for suffix in ("", "/raw", "/blame"):
        r = api().get(files_url(p, "README.md", suffix), params={"ref": "main"})
        assert r.status_code == 200, suffix


def test_anonymous_gets_404_for_a_private_project(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api().get(files_url(p, "README.md"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_guest_of_a_private_project_may_not_read_code(api, make, db):
    u, guest = make.user(), make.user()
    p = new_project(api, make, u)
    make.member(db.get(Project, p["id"]), guest, GUEST)
    r = api(guest).get(files_url(p, "README.md"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_a_read_repository_token_reads_files(api, make, db):
    u = make.user()
    p = new_project(api, make, u)
    reader = make.user(scopes=["read_repository"])
    make.member(db.get(Project, p["id"]), reader, REPORTER)
    for suffix in ("", "/raw", "/blame"):
        r = api(reader).get(files_url(p, "README.md", suffix), params={"ref": "main"})
        assert r.status_code == 200, suffix


def test_a_read_repository_token_may_not_write(api, make, db):
    u = make.user()
    p = new_project(api, make, u)
    reader = make.user(scopes=["read_repository"])
    make.member(db.get(Project, p["id"]), reader, MAINTAINER)
    r = api(reader).post(files_url(p, "new.txt"), json=write_body(content="x"))
    assert (r.status_code, r.json()["error"]) == (403, "insufficient_scope")


# ---------------------------------------------------------------------------- create


def test_create_commits_the_file_and_answers_201(api, make, settings, db):
    u = make.user(name="Ada Lovelace", email="ada@example.com")
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).post(
        files_url(p, "docs%2Fnew.md"), json=write_body(content="hello\n", commit_message="Add new")
    )
    assert (r.status_code, r.json()) == (201, {"file_path": "docs/new.md", "branch": "main"})
    c = open_repository(settings, p).revparse_single("refs/heads/main")
    assert (str(c.parent_ids[0]), c.message, c.tree["docs/new.md"].data) == (before, "Add new", b"hello\n")
    assert (c.author.name, c.author.email, c.committer.name, c.committer.email) == (
        "Ada Lovelace",
        "ada@example.com",
        "Ada Lovelace",
        "ada@example.com",
    )
    assert_fsck_clean(settings, p)


def test_create_records_a_push_event(api, make, settings, db):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    api(u).post(files_url(p, "e.txt"), json=write_body(content="x"))
    db.expire_all()
    events = db.scalars(select(Event).where(Event.project_id == p["id"]).order_by(Event.id)).all()
    last = events[-1]
    assert (last.action, last.author_id, last.data["ref"], last.data["before"], last.data["after"]) == (
        "pushed",
        u.id,
        "refs/heads/main",
        before,
        tip(settings, p),
    )


def test_author_name_and_email_set_the_author_and_the_caller_commits(api, make, settings):
    u = make.user(name="Caller", email="caller@example.com")
    p = new_project(api, make, u)
    body = write_body(content="x", author_name="Someone Else", author_email="else@example.com")
    assert api(u).post(files_url(p, "a.txt"), json=body).status_code == 201
    c = open_repository(settings, p).revparse_single("refs/heads/main")
    assert (c.author.name, c.author.email, c.committer.name, c.committer.email) == (
        "Someone Else",
        "else@example.com",
        "Caller",
        "caller@example.com",
    )


def test_create_accepts_a_form_body(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(files_url(p, "form.txt"), data=write_body(content="from a form"))
    assert (r.status_code, open_repository(settings, p).revparse_single("main:form.txt").data) == (
        201,
        b"from a form",
    )


def test_create_with_base64_stores_the_decoded_bytes(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    data = bytes(range(256)) * 4
    body = write_body(content=base64.b64encode(data).decode(), encoding="base64")
    assert api(u).post(files_url(p, "all.bin"), json=body).status_code == 201
    got = api(u).get(files_url(p, "all.bin"), params={"ref": "main"}).json()
    assert (base64.b64decode(got["content"]), got["size"]) == (data, 1024)
    assert api(u).get(files_url(p, "all.bin", "/raw"), params={"ref": "main"}).content == data
    assert_fsck_clean(settings, p)


def test_line_wrapped_base64_is_accepted(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    encoded = base64.encodebytes(b"z" * 200).decode()  # newline every 76 characters
    assert (
        api(u).post(files_url(p, "w.txt"), json=write_body(content=encoded, encoding="base64")).status_code
        == 201
    )
    assert open_repository(settings, p).revparse_single("main:w.txt").data == b"z" * 200


@pytest.mark.parametrize("content", ["not base64!", "abcde", "YQ==YQ=="])
def test_invalid_base64_is_400_and_writes_nothing(api, make, settings, content):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).post(files_url(p, "b.bin"), json=write_body(content=content, encoding="base64"))
    assert (r.status_code, r.json()) == (400, {"error": "content is invalid"})
    assert tip(settings, p) == before


def test_unknown_encoding_is_400(api, make):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(files_url(p, "b.bin"), json=write_body(content="x", encoding="hex"))
    assert (r.status_code, r.json()) == (400, {"error": "encoding does not have a valid value"})


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"commit_message": "m", "content": "x"}, "branch is missing"),
        ({"branch": "main", "content": "x"}, "commit_message is missing"),
        ({"branch": "main", "commit_message": "m"}, "content is missing"),
        ({"branch": "", "commit_message": "m", "content": "x"}, "branch is empty"),
        ({"branch": "main", "commit_message": " ", "content": "x"}, "commit_message is empty"),
    ],
)
def test_create_requires_branch_message_and_content(api, make, body, error):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(files_url(p, "x.txt"), json=body)
    assert (r.status_code, r.json()) == (400, {"error": error})


def test_create_of_an_existing_file_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).post(files_url(p, "README.md"), json=write_body(content="again"))
    assert (r.status_code, r.json()) == (400, {"message": "A file with this name already exists"})
    assert tip(settings, p) == before
    assert_fsck_clean(settings, p)


def test_create_with_execute_filemode_makes_an_executable(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    api(u).post(files_url(p, "run.sh"), json=write_body(content="#!/bin/sh\n", execute_filemode=True))
    body = api(u).get(files_url(p, "run.sh"), params={"ref": "main"}).json()
    assert body["execute_filemode"] is True
    assert open_repository(settings, p).revparse_single("main").tree["run.sh"].filemode == 0o100755


def test_create_on_a_new_branch_from_start_branch(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    main = tip(settings, p)
    r = api(u).post(
        files_url(p, "f.txt"), json=write_body(content="x", branch="feature", start_branch="main")
    )
    assert (r.status_code, r.json()) == (201, {"file_path": "f.txt", "branch": "feature"})
    c = open_repository(settings, p).revparse_single("refs/heads/feature")
    assert ([str(x) for x in c.parent_ids], tip(settings, p)) == ([main], main)
    assert_fsck_clean(settings, p)


def test_a_missing_branch_without_start_branch_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(files_url(p, "f.txt"), json=write_body(content="x", branch="nowhere"))
    assert (r.status_code, r.json()) == (400, {"message": NOT_ON_BRANCH})
    assert tip(settings, p, "nowhere") is None


def test_a_missing_start_branch_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(files_url(p, "f.txt"), json=write_body(content="x", branch="new", start_branch="nowhere"))
    assert (r.status_code, r.json()) == (400, {"message": NOT_ON_BRANCH})
    assert tip(settings, p, "new") is None


def test_start_branch_with_an_existing_target_branch_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"o.txt": b"o"}, branch="other")
    r = api(u).post(files_url(p, "f.txt"), json=write_body(content="x", branch="other", start_branch="main"))
    assert (r.status_code, r.json()) == (
        400,
        {"message": "A branch called 'other' already exists. Switch to that branch in order to make changes"},
    )


def test_an_invalid_new_branch_name_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    r = api(u).post(
        files_url(p, "f.txt"), json=write_body(content="x", branch="bad..name", start_branch="main")
    )
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "Something went wrong when we tried to create 'bad..name' for you: Branch name is invalid"
        },
    )
    assert_fsck_clean(settings, p)


# ---------------------------------------------------------------------------- empty repository


def test_a_file_on_a_branch_of_an_empty_repository_creates_it_as_default(api, make, settings, db):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    r = api(u).post(files_url(p, "first.txt"), json=write_body(content="first", branch="trunk"))
    assert (r.status_code, r.json()) == (201, {"file_path": "first.txt", "branch": "trunk"})
    c = open_repository(settings, p).revparse_single("refs/heads/trunk")
    assert (c.parent_ids, c.tree["first.txt"].data) == ([], b"first")
    head = git(repo_path(settings, p), "symbolic-ref", "HEAD").stdout.decode().strip()
    assert head == "refs/heads/trunk"
    assert api(u).get(f"/projects/{p['id']}").json()["default_branch"] == "trunk"
    raw = api(u).get(files_url(p, "first.txt", "/raw"))
    assert (raw.status_code, raw.content) == (200, b"first")
    assert_fsck_clean(settings, p)


def test_a_file_on_the_default_branch_of_an_empty_repository(api, make, settings):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    r = api(u).post(files_url(p, "first.txt"), json=write_body(content="first"))
    assert (r.status_code, tip(settings, p) is not None) == (201, True)
    assert api(u).get(f"/projects/{p['id']}").json()["default_branch"] == "main"
    assert_fsck_clean(settings, p)


def test_the_new_default_branch_of_an_empty_repository_is_protected(api, make, db):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    api(u).post(files_url(p, "first.txt"), json=write_body(content="first", branch="trunk"))
    db.expire_all()
    rules = db.scalars(select(ProtectedBranch).where(ProtectedBranch.project_id == p["id"])).all()
    assert "trunk" in {rule.name for rule in rules}


def test_a_first_write_to_the_named_default_branch_protects_it(api, make, db):
    u = make.user()
    p = new_project(api, make, u, readme=False)
    api(u).post(files_url(p, "first.txt"), json=write_body(content="first"))
    db.expire_all()
    rules = db.scalars(select(ProtectedBranch).where(ProtectedBranch.project_id == p["id"])).all()
    assert [rule.name for rule in rules] == ["main"]


# ---------------------------------------------------------------------------- update


def test_update_replaces_the_content(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).put(files_url(p, "README.md"), json=write_body(content="new text\n"))
    assert (r.status_code, r.json()) == (200, {"file_path": "README.md", "branch": "main"})
    c = open_repository(settings, p).revparse_single("refs/heads/main")
    assert ([str(x) for x in c.parent_ids], c.tree["README.md"].data) == ([before], b"new text\n")
    assert_fsck_clean(settings, p)


def test_update_takes_the_path_from_the_url_not_the_body(api, make, settings):
    # python-gitlab sends an already %-encoded `file_path` in the PUT body.
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"docs/a.md": b"a"})
    body = write_body(content="b", file_path="docs%2Fa.md")
    r = api(u).put(files_url(p, "docs%2Fa.md"), json=body)
    assert (r.status_code, r.json()) == (200, {"file_path": "docs/a.md", "branch": "main"})
    assert open_repository(settings, p).revparse_single("main:docs/a.md").data == b"b"


def test_update_of_a_missing_file_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).put(files_url(p, "nope.txt"), json=write_body(content="x"))
    assert (r.status_code, r.json()) == (400, {"message": "A file with this name doesn't exist"})
    assert tip(settings, p) == before


def test_update_with_identical_content_is_400_and_commits_nothing(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"same.txt": b"same"})
    before = tip(settings, p)
    r = api(u).put(files_url(p, "same.txt"), json=write_body(content="same"))
    assert r.status_code == 400
    assert set(r.json()) == {"message"}
    assert tip(settings, p) == before
    assert_fsck_clean(settings, p)


def test_update_with_execute_filemode_changes_the_mode(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"run.sh": b"#!/bin/sh\n"})
    r = api(u).put(files_url(p, "run.sh"), json=write_body(content="#!/bin/sh\n", execute_filemode=True))
    assert r.status_code == 200
    head = api(u).head(files_url(p, "run.sh"), params={"ref": "main"})
    assert head.headers["x-service-execute-filemode"] == "true"


def test_update_with_the_current_last_commit_id_succeeds(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    last = api(u).get(files_url(p, "README.md"), params={"ref": "main"}).json()["last_commit_id"]
    r = api(u).put(files_url(p, "README.md"), json=write_body(content="edited", last_commit_id=last))
    assert r.status_code == 200


def test_update_with_a_stale_last_commit_id_is_400(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, make, u)
    last = api(u).get(files_url(p, "README.md"), params={"ref": "main"}).json()["last_commit_id"]
    pushed = push_with_git(settings, p, tmp_path, {b"README.md": b"changed by a push\n"})
    r = api(u).put(files_url(p, "README.md"), json=write_body(content="my edit", last_commit_id=last))
    assert (r.status_code, r.json()) == (400, {"message": STALE})
    assert tip(settings, p) == pushed
    assert_fsck_clean(settings, p)


def test_an_edit_after_a_push_builds_on_the_pushed_commit(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, make, u)
    api(u).get(files_url(p, "README.md"), params={"ref": "main"})
    pushed = push_with_git(settings, p, tmp_path, {b"other.txt": b"pushed meanwhile\n"})
    r = api(u).put(files_url(p, "README.md"), json=write_body(content="my edit"))
    assert r.status_code == 200
    c = open_repository(settings, p).revparse_single("refs/heads/main")
    assert ([str(x) for x in c.parent_ids], c.tree["other.txt"].data) == ([pushed], b"pushed meanwhile\n")
    assert_fsck_clean(settings, p)


def test_an_edit_racing_a_push_is_400_and_moves_nothing(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    # A push updating the branch holds git's lock on the ref while the edit tries to swap it.
    lock = repo_path(settings, p) / "refs" / "heads" / "main.lock"
    lock.write_text("")
    try:
        r = api(u).put(files_url(p, "README.md"), json=write_body(content="racing edit"))
    finally:
        lock.unlink()
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Could not update branch main. Please refresh and try again."},
    )
    assert tip(settings, p) == before
    assert_fsck_clean(settings, p)


def test_edits_racing_ref_updates_in_a_thread_lose_nothing(api, make, settings):
    # The thread moves the branch as a push does (`git update-ref` with the old value), outside
    # kiln's lock; whichever side loses a swap fails, and no successful commit is lost.
    u = make.user()
    p = new_project(api, make, u)
    bare = repo_path(settings, p)
    pushed: list[str] = []

    def pusher() -> None:
        for n in range(40):
            old = tip(settings, p)
            tree = git(bare, "rev-parse", f"{old}^{{tree}}").stdout.decode().strip()
            new = git(bare, "commit-tree", tree, "-p", old, "-m", f"thread {n}").stdout.decode().strip()
            if git(bare, "update-ref", "refs/heads/main", new, old, check=False).returncode == 0:
                pushed.append(new)

    thread = threading.Thread(target=pusher)
    thread.start()
    answers = [api(u).put(files_url(p, "README.md"), json=write_body(content=f"edit {i}")) for i in range(15)]
    thread.join()
    refused = {"message": "Could not update branch main. Please refresh and try again."}
    assert all(r.status_code == 200 or (r.status_code, r.json()) == (400, refused) for r in answers)
    history = git(bare, "rev-list", "refs/heads/main").stdout.decode().split()
    assert set(pushed) <= set(history)
    edits = [sha for sha in history if open_repository(settings, p)[sha].message == "change"]
    assert len(edits) == sum(r.status_code == 200 for r in answers)
    assert_fsck_clean(settings, p)


# ---------------------------------------------------------------------------- delete


def test_delete_removes_the_file_and_answers_204(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"gone.txt": b"bye"})
    r = api(u).delete(files_url(p, "gone.txt"), params={"branch": "main", "commit_message": "remove"})
    assert (r.status_code, r.content) == (204, b"")
    assert "gone.txt" not in open_repository(settings, p).revparse_single("main").tree
    assert api(u).get(files_url(p, "gone.txt"), params={"ref": "main"}).status_code == 404
    assert_fsck_clean(settings, p)


def test_delete_accepts_a_json_body(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    commit_files(settings, p, {"gone.txt": b"bye"})
    r = api(u).delete(files_url(p, "gone.txt"), json=write_body())
    assert r.status_code == 204


def test_delete_of_a_missing_file_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    before = tip(settings, p)
    r = api(u).delete(files_url(p, "nope.txt"), params=write_body())
    assert (r.status_code, r.json()) == (400, {"message": "A file with this name doesn't exist"})
    assert tip(settings, p) == before


def test_delete_with_a_stale_last_commit_id_is_400(api, make, settings):
    u = make.user()
    p = new_project(api, make, u)
    old = commit_files(settings, p, {"d.txt": b"1"})
    commit_files(settings, p, {"d.txt": b"2"})
    r = api(u).delete(files_url(p, "d.txt"), params=write_body(last_commit_id=old))
    assert (r.status_code, r.json()) == (400, {"message": STALE})


# ---------------------------------------------------------------------------- who may write


def test_a_reporter_may_not_write(api, make, db):
    u, reporter = make.user(), make.user()
    p = new_project(api, make, u)
    make.member(db.get(Project, p["id"]), reporter, REPORTER)
    r = api(reporter).post(files_url(p, "x.txt"), json=write_body(content="x"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_a_developer_may_not_write_to_a_protected_branch(api, make, settings, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    make.member(db.get(Project, p["id"]), dev, DEVELOPER)
    before = tip(settings, p)
    r = api(dev).post(files_url(p, "x.txt"), json=write_body(content="x"))
    assert (r.status_code, r.json()) == (400, {"message": "You are not allowed to push into this branch"})
    assert tip(settings, p) == before


def test_a_developer_writes_to_an_unprotected_branch(api, make, settings, db):
    u, dev = make.user(), make.user()
    p = new_project(api, make, u)
    make.member(db.get(Project, p["id"]), dev, DEVELOPER)
    r = api(dev).post(
        files_url(p, "x.txt"), json=write_body(content="x", branch="topic", start_branch="main")
    )
    assert r.status_code == 201


def test_anonymous_may_not_write(api, make):
    u = make.user()
    p = new_project(api, make, u, visibility="public")
    r = api().post(files_url(p, "x.txt"), json=write_body(content="x"))
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


# ---------------------------------------------------------------------------- non-UTF-8 names


def test_a_non_utf8_file_name_pushed_with_git_is_listed_and_fetched(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, make, u)
    push_with_git(settings, p, tmp_path, {b"caf\xe9.txt": b"latin-1 name\n", b"dir\xff/x.txt": b"in dir\n"})
    tree = api(u).get(f"/projects/{p['id']}/repository/tree", params={"recursive": "true"}).json()
    paths = {e["path"] for e in tree}
    assert {"café.txt", "dir\xff", "dir\xff/x.txt"} <= paths
    r = api(u).get(files_url(p, "caf%C3%A9.txt"), params={"ref": "main"})
    assert (r.status_code, r.json()["file_name"], base64.b64decode(r.json()["content"])) == (
        200,
        "café.txt",
        b"latin-1 name\n",
    )
    raw = api(u).get(files_url(p, "dir%C3%BF%2Fx.txt", "/raw"), params={"ref": "main"})
    assert (raw.status_code, raw.content) == (200, b"in dir\n")
    blame = api(u).get(files_url(p, "caf%C3%A9.txt", "/blame"), params={"ref": "main"})
    assert (blame.status_code, blame.json()[0]["lines"]) == (200, ["latin-1 name"])


@pytest.mark.parametrize(
    ("name", "path_enc", "header"),
    [
        (b"caf\xc3\xa9.txt", "caf%C3%A9.txt", "caf%C3%A9.txt"),
        (b"a%20b.txt", "a%2520b.txt", "a%2520b.txt"),
        (b"plain name.txt", "plain%20name.txt", "plain name.txt"),
    ],
)
def test_a_file_name_header_is_percent_encoded_unless_plain_printable_ascii(
    api, make, settings, tmp_path, name, path_enc, header
):
    u = make.user()
    p = new_project(api, make, u)
    push_with_git(settings, p, tmp_path, {name: b"x\n"})
    r = api(u).head(files_url(p, path_enc), params={"ref": "main"})
    assert (r.status_code, r.headers["x-service-file-name"], r.headers["x-service-file-path"]) == (
        200,
        header,
        header,
    )


def test_a_non_utf8_file_is_updated_through_its_shown_name(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, make, u)
    push_with_git(settings, p, tmp_path, {b"caf\xe9.txt": b"old\n"})
    last = api(u).get(files_url(p, "caf%C3%A9.txt"), params={"ref": "main"}).json()["last_commit_id"]
    r = api(u).put(files_url(p, "caf%C3%A9.txt"), json=write_body(content="new\n", last_commit_id=last))
    assert r.status_code == 200
    names = [e.raw_name for e in open_repository(settings, p).revparse_single("main").tree]
    assert (b"caf\xe9.txt" in names, "café.txt".encode() in names) == (True, False)
    assert api(u).get(files_url(p, "caf%C3%A9.txt", "/raw"), params={"ref": "main"}).content == b"new\n"
    r = api(u).delete(files_url(p, "caf%C3%A9.txt"), params=write_body())
    assert r.status_code == 204
    assert b"caf\xe9.txt" not in [
        e.raw_name for e in open_repository(settings, p).revparse_single("main").tree
    ]
    assert_fsck_clean(settings, p)
