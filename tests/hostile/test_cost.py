"""What one request may cost: GitLab's limits where GitLab has them (diff limits, the large-blob
download rate), a bound with a clear 4xx where it has none (blame of a large file, actions per
commit), work linear in what the caller sends, trees of any depth read without recursion, and
every route whose cost grows with a blob or a tree working off the event loop."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import quote

import pygit2
import pytest

from bench.cost import BOMB_LEVELS, craft_bomb
from kiln.api import API_PREFIX, API_ROUTES
from kiln.git.files import STREAM_BYTES
from kiln.services import instance_settings
from kiln.services.repositories import store
from tests.contract.test_writes import _calls_in_thread
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import new_project

BLOB = pygit2.enums.FileMode.BLOB
TREE = pygit2.enums.FileMode.TREE
# Larger than what kiln reads whole: such a blob is streamed from git in pieces.
STREAMED = STREAM_BYTES + 12_345
LARGE_FILE = (
    "The requested blob is over the threshold size of {limit}.\n"
    "Access this blob using '/projects/:id/repository/files/:file_path/raw' to avoid this error.\n"
)
LARGE_BLOB = (
    "The requested blob is over the threshold size of {limit}.\n"
    "Access this blob using '/projects/:id/repository/blobs/:sha/raw' to avoid this error.\n"
)
# The routes whose work grows with a blob's or a tree's size (or a diff's, or a history's).
HEAVY_READS = [
    "GET /projects/{id:str}/repository/files/{file_path:str}",
    "GET /projects/{id:str}/repository/files/{file_path:str}/raw",
    "GET /projects/{id:str}/repository/files/{file_path:str}/blame",
    "GET /projects/{id:str}/repository/blobs/{sha:str}",
    "GET /projects/{id:str}/repository/blobs/{sha:str}/raw",
    "GET /projects/{id:str}/repository/tree",
    "GET /projects/{id:str}/repository/commits",
    "GET /projects/{id:str}/repository/commits/{sha:str}",
    "GET /projects/{id:str}/repository/commits/{sha:str}/diff",
    "GET /projects/{id:str}/repository/compare",
    "GET /projects/{id:str}/languages",
    "POST /projects/{id:str}/repository/commits",
]


@pytest.fixture
def owner(make: Any) -> Any:
    return make.user()


@pytest.fixture
def project(api: Any, make: Any, owner: Any) -> dict[str, Any]:
    return new_project(api, make, owner)


def commit_files(settings: Any, project: dict[str, Any], files: dict[str, bytes | None], **kw: Any) -> str:
    """A commit written with pygit2 straight into the repository (no request)."""
    return write_commit(open_repository(settings, project), files, **kw)


def lines(n: int, width: int = 10) -> bytes:
    return b"".join(f"{i:0{width - 1}d}\n".encode() for i in range(n))


def commit_diff(api: Any, who: Any, project: dict[str, Any], sha: str) -> list[dict[str, Any]]:
    r = api(who).get(f"/projects/{project['id']}/repository/commits/{sha}/diff", params={"per_page": 100})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def compare(api: Any, who: Any, project: dict[str, Any], start: str, end: str) -> dict[str, Any]:
    r = api(who).get(f"/projects/{project['id']}/repository/compare", params={"from": start, "to": end})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def file_url(project: dict[str, Any], path: str, suffix: str = "") -> str:
    return f"/projects/{project['id']}/repository/files/{quote(path, safe='')}{suffix}"


# ---------------------------------------------------------------------------- diff limits


def test_a_patch_of_diff_max_patch_bytes_or_more_is_too_large_and_left_out(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_patch_bytes": 1000})
    sha = commit_files(settings, project, {"big.txt": lines(200), "small.txt": b"one\n"})
    by_path = {d["new_path"]: d for d in commit_diff(api, owner, project, sha)}
    assert (by_path["big.txt"]["too_large"], by_path["big.txt"]["diff"]) == (True, "")
    assert (by_path["small.txt"]["too_large"], by_path["small.txt"]["diff"]) == (
        False,
        "@@ -0,0 +1 @@\n+one\n",
    )


def test_a_commit_diff_shows_at_most_diff_max_files_files(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_files": 3})
    sha = commit_files(settings, project, {f"f{n}.txt": b"x\n" for n in range(5)})
    assert [d["new_path"] for d in commit_diff(api, owner, project, sha)] == ["f0.txt", "f1.txt", "f2.txt"]


def test_a_commit_diff_stops_before_the_file_that_passes_diff_max_lines(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_lines": 25})
    sha = commit_files(settings, project, {"a.txt": lines(10), "b.txt": lines(10), "c.txt": lines(10)})
    assert [d["new_path"] for d in commit_diff(api, owner, project, sha)] == ["a.txt", "b.txt"]


def test_a_too_large_patch_counts_toward_no_limit(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_patch_bytes": 1000, "diff_max_lines": 100})
    sha = commit_files(settings, project, {"big.txt": lines(200), "small.txt": b"one\n"})
    by_path = {d["new_path"]: d["too_large"] for d in commit_diff(api, owner, project, sha)}
    assert by_path == {"big.txt": True, "small.txt": False}


def test_a_small_change_to_a_file_larger_than_kiln_diffs_in_place_shows_its_patch(
    api, owner, project, settings
):
    before = [f"line {n}\n".encode() for n in range(STREAMED // 10)]
    after = list(before)
    after[1000] = b"changed\n"
    base = commit_files(settings, project, {"big.txt": b"".join(before)})
    head = commit_files(settings, project, {"big.txt": b"".join(after)})
    hunk = "@@ -998,7 +998,7 @@ line 996\n line 997\n line 998\n line 999\n-line 1000\n+changed\n line 1001\n"
    (entry,) = commit_diff(api, owner, project, head)
    assert (entry["too_large"], entry["diff"].startswith(hunk)) == (False, True)
    (compared,) = compare(api, owner, project, base, head)["diffs"]
    assert compared["diff"] == entry["diff"]
    stats = api(owner).get(f"/projects/{project['id']}/repository/commits/{head}").json()["stats"]
    assert stats == {"additions": 1, "deletions": 1, "total": 2}


def test_a_commit_diff_is_never_collapsed(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_files": 10, "diff_max_patch_bytes": 1000})
    sha = commit_files(settings, project, {f"f{n}.txt": lines(5) for n in range(5)})
    assert {(d["collapsed"], d["diff"] != "") for d in commit_diff(api, owner, project, sha)} == {
        (False, True)
    }


def test_compare_collapses_the_files_past_a_tenth_of_diff_max_files(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_files": 20})
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    head = commit_files(settings, project, {f"f{n}.txt": b"x\n" for n in range(4)})
    body = compare(api, owner, project, base, head)
    assert [(d["new_path"], d["collapsed"], d["diff"]) for d in body["diffs"]] == [
        ("f0.txt", False, "@@ -0,0 +1 @@\n+x\n"),
        ("f1.txt", False, "@@ -0,0 +1 @@\n+x\n"),
        ("f2.txt", True, ""),
        ("f3.txt", True, ""),
    ]
    assert body["compare_timeout"] is False


def test_compare_collapses_a_patch_of_a_tenth_of_diff_max_patch_bytes(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_patch_bytes": 10_000})
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    head = commit_files(settings, project, {"big.txt": lines(200), "small.txt": b"x\n"})
    by_path = {d["new_path"]: d for d in compare(api, owner, project, base, head)["diffs"]}
    assert (by_path["big.txt"]["collapsed"], by_path["big.txt"]["too_large"], by_path["big.txt"]["diff"]) == (
        True,
        False,
        "",
    )
    assert by_path["small.txt"]["collapsed"] is False


def test_compare_past_diff_max_files_times_out(api, owner, project, settings, db):
    instance_settings.update(db, {"diff_max_files": 3})
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    head = commit_files(settings, project, {f"f{n}.txt": b"x\n" for n in range(5)})
    body = compare(api, owner, project, base, head)
    assert (len(body["diffs"]), body["compare_timeout"]) == (3, True)


def test_a_blob_over_large_blob_bytes_is_too_large_in_a_diff_and_adds_no_lines(
    api, owner, project, settings, configure
):
    configure(large_blob_bytes=1000)
    sha = commit_files(settings, project, {"big.txt": lines(500), "small.txt": b"one\n"})
    by_path = {d["new_path"]: d for d in commit_diff(api, owner, project, sha)}
    assert (by_path["big.txt"]["too_large"], by_path["big.txt"]["diff"]) == (True, "")
    stats = api(owner).get(f"/projects/{project['id']}/repository/commits/{sha}").json()["stats"]
    assert stats == {"additions": 1, "deletions": 0, "total": 1}


# ---------------------------------------------------------------------------- large blobs


def test_a_large_file_is_read_whole_as_the_same_record(api, owner, project, settings):
    data = bytes(range(256)) * (STREAMED // 256) + b"tail"
    sha = commit_files(settings, project, {"data/big.bin": data})
    r = api(owner).get(file_url(project, "data/big.bin"), params={"ref": "main"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert base64.b64decode(body["content"]) == data
    digest = hashlib.sha256(data).hexdigest()
    assert (body["file_name"], body["file_path"], body["size"], body["encoding"]) == (
        "big.bin",
        "data/big.bin",
        len(data),
        "base64",
    )
    assert (body["content_sha256"], body["commit_id"], body["last_commit_id"]) == (digest, sha, sha)
    assert list(body).index("content") == list(body).index("encoding") + 1
    assert (r.headers["X-Service-Content-Sha256"], int(r.headers["Content-Length"])) == (
        digest,
        len(r.content),
    )


def test_head_of_a_large_file_tells_the_length_get_sends(api, owner, project, settings):
    commit_files(settings, project, {"big.txt": lines(STREAMED // 10 + 1)})
    url = file_url(project, "big.txt")
    head = api(owner).head(url, params={"ref": "main"})
    got = api(owner).get(url, params={"ref": "main"})
    assert head.status_code == 200
    assert (head.content, int(head.headers["Content-Length"])) == (b"", len(got.content))
    assert head.headers["X-Service-Content-Sha256"] == got.json()["content_sha256"]


def test_a_large_blob_by_id_is_read_whole_as_the_same_view(api, owner, project, settings):
    data = lines(STREAMED // 10 + 1)
    commit_files(settings, project, {"big.txt": data})
    blob_id = str(open_repository(settings, project).revparse_single("main:big.txt").id)
    r = api(owner).get(f"/projects/{project['id']}/repository/blobs/{blob_id[:12]}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["size"], body["encoding"], body["sha"], list(body)) == (
        len(data),
        "base64",
        blob_id,
        ["size", "encoding", "content", "sha"],
    )
    assert base64.b64decode(body["content"]) == data
    assert int(r.headers["Content-Length"]) == len(r.content)


def test_large_file_reads_past_the_minutes_allowance_are_429_with_gitlabs_message(
    api, owner, project, settings, configure
):
    configure(large_blob_bytes=1000, large_blob_downloads_per_minute=2)
    commit_files(settings, project, {"big.txt": lines(200), "small.txt": b"x\n"})
    url = file_url(project, "big.txt")
    statuses = [api(owner).get(url, params={"ref": "main"}).status_code for _ in range(2)]
    r = api(owner).get(url, params={"ref": "main"})
    assert (statuses, r.status_code, r.headers["Retry-After"]) == ([200, 200], 429, "60")
    assert r.json() == {"message": {"error": LARGE_FILE.format(limit=1000)}}
    assert api(owner).get(file_url(project, "small.txt"), params={"ref": "main"}).status_code == 200
    assert api(owner).head(url, params={"ref": "main"}).status_code == 200


def test_large_blob_reads_share_the_projects_allowance_and_say_so_for_blobs(
    api, owner, project, settings, configure
):
    configure(large_blob_bytes=1000, large_blob_downloads_per_minute=1)
    commit_files(settings, project, {"big.txt": lines(200)})
    blob_id = str(open_repository(settings, project).revparse_single("main:big.txt").id)
    assert api(owner).get(file_url(project, "big.txt"), params={"ref": "main"}).status_code == 200
    r = api(owner).get(f"/projects/{project['id']}/repository/blobs/{blob_id}")
    assert (r.status_code, r.json()) == (429, {"message": {"error": LARGE_BLOB.format(limit=1000)}})


def test_raw_reads_of_large_blobs_count_toward_no_allowance(api, owner, project, settings, configure):
    configure(large_blob_bytes=1000, large_blob_downloads_per_minute=1)
    data = lines(STREAMED // 10)
    commit_files(settings, project, {"big.txt": data})
    blob_id = str(open_repository(settings, project).revparse_single("main:big.txt").id)
    raw = [file_url(project, "big.txt", "/raw"), f"/projects/{project['id']}/repository/blobs/{blob_id}/raw"]
    assert [(r.status_code, r.content == data) for r in (api(owner).get(url) for url in raw * 2)] == [
        (200, True)
    ] * 4
    statuses = [
        api(owner).get(file_url(project, "big.txt"), params={"ref": "main"}).status_code for _ in "12"
    ]
    assert statuses == [200, 429]


def test_blame_of_a_file_over_large_blob_bytes_is_413(api, owner, project, settings, configure):
    configure(large_blob_bytes=1000)
    commit_files(settings, project, {"big.txt": lines(200), "small.txt": b"x\n"})
    r = api(owner).get(file_url(project, "big.txt", "/blame"), params={"ref": "main"})
    assert (r.status_code, r.json()) == (
        413,
        {"message": "413 Request Entity Too Large - blame reads files of at most 1000 bytes"},
    )
    assert api(owner).get(file_url(project, "small.txt", "/blame"), params={"ref": "main"}).status_code == 200


def test_blame_of_a_long_single_line_groups_it_whole(api, owner, project, settings):
    line = "x" * 200_000
    commit_files(settings, project, {"one.txt": line.encode()})
    r = api(owner).get(file_url(project, "one.txt", "/blame"), params={"ref": "main"})
    assert r.status_code == 200, r.text
    assert [group["lines"] for group in r.json()] == [[line]]


def test_languages_leave_out_a_blob_over_large_blob_bytes(api, owner, project, settings):
    over = settings.large_blob_bytes // 10 + 1
    commit_files(settings, project, {"big.py": lines(over), "small.rb": b"puts 1\n"})
    r = api(owner).get(f"/projects/{project['id']}/languages")
    assert (r.status_code, set(r.json())) == (200, {"Markdown", "Ruby"})


# ---------------------------------------------------------------------------- commits of many actions


def test_a_commit_of_ten_thousand_actions_writes_every_file(api, owner, project, settings):
    actions = [
        {"action": "create", "file_path": f"d{n % 50}/s{n % 7}/f{n}.txt", "content": f"{n}\n"}
        for n in range(10_000)
    ]
    r = api(owner).post(
        f"/projects/{project['id']}/repository/commits",
        json={"branch": "main", "commit_message": "many", "actions": actions, "stats": False},
    )
    assert r.status_code == 201, r.text
    repo = open_repository(settings, project)
    tree = repo.revparse_single("main").peel(pygit2.Commit).tree
    files = {entry.name for entry in _walk(repo, tree)}
    assert len(files) == 10_001  # and README.md
    assert repo.revparse_single("main:d49/s3/f9999.txt").data == b"9999\n"


def test_a_commit_with_more_actions_than_max_commit_actions_is_400_and_writes_nothing(
    api, owner, project, settings, configure
):
    configure(max_commit_actions=3)
    before = str(open_repository(settings, project).references["refs/heads/main"].target)
    actions = [{"action": "create", "file_path": f"f{n}.txt", "content": "x"} for n in range(4)]
    r = api(owner).post(
        f"/projects/{project['id']}/repository/commits",
        json={"branch": "main", "commit_message": "many", "actions": actions},
    )
    assert (r.status_code, r.json()) == (
        400,
        {"error": "actions is expected to have length less than or equal to 3"},
    )
    assert str(open_repository(settings, project).references["refs/heads/main"].target) == before


def _walk(repo: pygit2.Repository, tree: pygit2.Tree) -> list[pygit2.Object]:
    blobs, pending = [], [tree]
    while pending:
        for entry in pending.pop():
            if entry.type_str == "tree":
                pending.append(repo[entry.id].peel(pygit2.Tree))
            else:
                blobs.append(entry)
    return blobs


# ---------------------------------------------------------------------------- deep trees

DEPTH = 2000
DEEP = "/".join(["d"] * DEPTH) + "/f.py"


@pytest.fixture
def deep(settings: Any, project: dict[str, Any]) -> str:
    """A commit adding a file 2,000 directories deep, as a push may bring (writes refuse it)."""
    repo = open_repository(settings, project)
    builder = repo.TreeBuilder()
    builder.insert("f.py", repo.create_blob(b"print('deep')\n"), BLOB)
    tree = builder.write()
    for _ in range(DEPTH - 1):
        builder = repo.TreeBuilder()
        builder.insert("d", tree, TREE)
        tree = builder.write()
    tip = repo.references["refs/heads/main"].target
    root = repo.TreeBuilder(repo[tip].peel(pygit2.Commit).tree)
    root.insert("d", tree, TREE)
    sig = pygit2.Signature("Pusher", "pusher@example.com")
    return str(repo.create_commit("refs/heads/main", sig, sig, "deep", root.write(), [tip]))


def test_a_deep_tree_lists_recursively(api, owner, project, deep):
    r = api(owner).get(
        f"/projects/{project['id']}/repository/tree", params={"recursive": "true", "pagination": "none"}
    )
    assert r.status_code == 200, r.text
    assert DEEP in {entry["path"] for entry in r.json()}


def test_a_file_deep_in_a_tree_reads(api, owner, project, deep):
    r = api(owner).get(file_url(project, DEEP), params={"ref": "main"})
    assert r.status_code == 200, r.text
    assert base64.b64decode(r.json()["content"]) == b"print('deep')\n"


def test_languages_count_a_file_deep_in_a_tree(api, owner, project, deep):
    r = api(owner).get(f"/projects/{project['id']}/languages")
    assert (r.status_code, set(r.json())) == (200, {"Markdown", "Python"})


def test_the_diff_of_a_deep_tree_reads(api, owner, project, deep):
    assert [d["new_path"] for d in commit_diff(api, owner, project, deep)] == [DEEP]


# ---------------------------------------------------------------------------- off the event loop


def test_every_read_whose_cost_grows_with_the_repository_runs_in_a_thread():
    routes = {
        f"{method} {path.removeprefix(API_PREFIX)}": handler.fn
        for handler in API_ROUTES
        for method in handler.http_methods
        for path in handler.paths
    }
    assert [key for key in HEAVY_READS if not _calls_in_thread(routes[key])] == []


# ---------------------------------------------------------------------------- tree bombs


@pytest.fixture
def bomb(settings: Any, project: dict[str, Any]) -> str:
    """A commit of 2^40 paths in 41 trees, as a push may bring it (it passes git fsck): the
    one the worst-case bench reads."""
    return craft_bomb(store(settings).path(project["id"]))


def test_languages_of_a_tree_bomb_count_every_path(api, owner, project, bomb):
    r = api(owner).get(f"/projects/{project['id']}/languages")
    assert (r.status_code, r.json()) == (200, {"Python": 100.0})


def test_offset_pages_of_a_tree_bomb_list_its_first_entries_without_a_total(api, owner, project, bomb):
    url = f"/projects/{project['id']}/repository/tree"
    pages = [api(owner).get(url, params={"recursive": "true", "per_page": 3, "page": n}) for n in (1, 2)]
    assert [[e["path"] for e in r.json()] for r in pages] == [
        ["a", "a/a", "a/a/a"],
        ["a/a/a/a", "a/a/a/a/a", "a/a/a/a/a/a"],
    ]
    assert [("x-total" in r.headers, r.headers["x-next-page"]) for r in pages] == [(False, "2"), (False, "3")]


def test_keyset_pages_of_a_tree_bomb_follow_on(api, owner, project, bomb):
    url = f"/projects/{project['id']}/repository/tree"
    first = api(owner).get(url, params={"recursive": "true", "pagination": "keyset", "per_page": 2})
    link = first.headers["link"].split(">", 1)[0].lstrip("<").replace("http://kiln.test", "")
    second = api(owner).get(link)
    assert [[e["path"] for e in r.json()] for r in (first, second)] == [["a", "a/a"], ["a/a/a", "a/a/a/a"]]


def test_a_whole_tree_bomb_lists_its_first_max_tree_entries(api, owner, project, bomb, configure):
    configure(max_tree_entries=1000)
    r = api(owner).get(
        f"/projects/{project['id']}/repository/tree", params={"recursive": "true", "pagination": "none"}
    )
    assert r.status_code == 200
    entries = r.json()
    kinds = [e["type"] for e in entries]
    assert (len(entries), kinds, entries[BOMB_LEVELS - 1]["path"]) == (
        1000,
        sorted(kinds, key=["tree", "blob"].index),
        "/".join(["a"] * BOMB_LEVELS),
    )
    assert {e["name"] for e in entries if e["type"] == "blob"} == {"x.py"}


def test_a_large_file_written_through_the_api_is_the_blob_git_would_write(api, owner, project, settings):
    """A blob over a MiB is compressed by `git hash-object` in a child process: same id, same bytes."""
    content = bytes(range(32, 127)).decode() * 30_000  # 2.8 MB of text
    r = api(owner).post(
        f"/projects/{project['id']}/repository/files/large.txt",
        json={"branch": "main", "content": content, "commit_message": "large"},
    )
    assert r.status_code == 201, r.text
    meta = api(owner).get(f"/projects/{project['id']}/repository/files/large.txt?ref=main").json()
    assert meta["blob_id"] == str(pygit2.hash(content.encode()))
    raw = api(owner).get(f"/projects/{project['id']}/repository/files/large.txt/raw?ref=main")
    assert raw.content == content.encode()
