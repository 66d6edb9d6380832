"""Repository tree and blobs: GET /projects/:id/repository/tree, .../blobs/:sha[/raw]."""

from __future__ import annotations

import base64
import os

import pytest

from kiln.git.files import STREAM_BYTES
from kiln.git.writes import FileAction, Person, commit_actions
from kiln.models import Project
from kiln.models.namespaces import GUEST, REPORTER
from tests.factories.repositories import open_repository
from tests.repositories import clone, git, push, push_with_git

BOT = Person("Setup Bot", "bot@example.com")
TREE_NOT_FOUND = {"message": "404 Tree Not Found"}
BLOB_NOT_FOUND = {"message": "404 Blob Not Found"}


def new_project(api, owner, *, readme: bool = True, **fields):
    body = {"name": f"tree-{os.urandom(4).hex()}", "initialize_with_readme": readme, **fields}
    r = api(owner).post("/projects", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def commit_files(settings, project, files: dict[str, bytes], *, branch: str = "main", executable=()) -> str:
    repo = open_repository(settings, project)
    actions = [
        FileAction("create", path, content=data, execute_filemode=path in executable)
        for path, data in files.items()
    ]
    commit, _ = commit_actions(
        repo, branch=branch, actions=actions, message="setup", author=BOT, committer=BOT
    )
    return str(commit.id)


def oid(settings, project, spec: str) -> str:
    return str(open_repository(settings, project).revparse_single(spec).id)


def layout(api, make, settings, **fields):
    """README.md plus docs/{a.md,b.md,img/x.png}, src/main.py, bin/run (executable), z.txt."""
    u = make.user()
    p = new_project(api, u, **fields)
    commit_files(
        settings,
        p,
        {
            "docs/a.md": b"a",
            "docs/b.md": b"b",
            "docs/img/x.png": b"\x89PNG",
            "src/main.py": b"print()",
            "bin/run": b"#!/bin/sh",
            "z.txt": b"z",
        },
        executable=("bin/run",),
    )
    return u, p


def tree_url(p) -> str:
    return f"/projects/{p['id']}/repository/tree"


def test_root_lists_trees_first_then_blobs(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p))
    assert r.status_code == 200
    assert r.json() == [
        {"id": oid(settings, p, "main:bin"), "name": "bin", "type": "tree", "path": "bin", "mode": "040000"},
        {
            "id": oid(settings, p, "main:docs"),
            "name": "docs",
            "type": "tree",
            "path": "docs",
            "mode": "040000",
        },
        {"id": oid(settings, p, "main:src"), "name": "src", "type": "tree", "path": "src", "mode": "040000"},
        {
            "id": oid(settings, p, "main:README.md"),
            "name": "README.md",
            "type": "blob",
            "path": "README.md",
            "mode": "100644",
        },
        {
            "id": oid(settings, p, "main:z.txt"),
            "name": "z.txt",
            "type": "blob",
            "path": "z.txt",
            "mode": "100644",
        },
    ]


def test_path_lists_a_subdirectory(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"path": "docs"})
    assert [(e["type"], e["path"]) for e in r.json()] == [
        ("tree", "docs/img"),
        ("blob", "docs/a.md"),
        ("blob", "docs/b.md"),
    ]


def test_path_with_a_trailing_slash_is_the_same_directory(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"path": "docs/img/"})
    assert [e["path"] for e in r.json()] == ["docs/img/x.png"]


def test_recursive_lists_every_entry(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"recursive": "true", "per_page": 100})
    assert [(e["type"], e["path"]) for e in r.json()] == [
        ("tree", "bin"),
        ("tree", "docs"),
        ("tree", "docs/img"),
        ("tree", "src"),
        ("blob", "README.md"),
        ("blob", "bin/run"),
        ("blob", "docs/a.md"),
        ("blob", "docs/b.md"),
        ("blob", "docs/img/x.png"),
        ("blob", "src/main.py"),
        ("blob", "z.txt"),
    ]


@pytest.mark.parametrize(("value", "count"), [("True", 11), ("False", 5), ("1", 11), ("0", 5)])
def test_recursive_accepts_python_style_booleans(api, make, settings, value, count):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"recursive": value, "per_page": 100})
    assert (r.status_code, len(r.json())) == (200, count)


def test_modes_of_executables_symlinks_and_submodules(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, u)
    work = clone(settings, p, tmp_path)
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("run.sh")
    sub = "1234567890abcdef1234567890abcdef12345678"
    git(work, "add", "-A")
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{sub},vendor")
    push(work, message="modes")
    entries = {e["name"]: (e["type"], e["mode"], e["id"]) for e in api(u).get(tree_url(p)).json()}
    assert entries["run.sh"][:2] == ("blob", "100755")
    assert entries["link"][:2] == ("blob", "120000")
    assert entries["vendor"] == ("commit", "160000", sub)
    assert list(entries)[-1] == "vendor"  # submodules come after blobs


def test_ref_selects_a_branch_tag_or_commit(api, make, settings):
    u, p = layout(api, make, settings)
    old = oid(settings, p, "main")
    commit_files(settings, p, {"new.txt": b"n"}, branch="main")
    for ref in ("main", old):
        names = [e["name"] for e in api(u).get(tree_url(p), params={"ref": ref}).json()]
        assert ("new.txt" in names) == (ref == "main")


def test_missing_ref_is_404_tree_not_found(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"ref": "nope"})
    assert (r.status_code, r.json()) == (404, TREE_NOT_FOUND)


def test_missing_path_is_404_tree_not_found(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"path": "docs/nothing"})
    assert (r.status_code, r.json()) == (404, TREE_NOT_FOUND)


def test_a_file_path_lists_nothing(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"path": "z.txt"})
    assert (r.status_code, r.json()) == (200, [])


def test_an_empty_repository_has_no_tree(api, make):
    u = make.user()
    p = new_project(api, u, readme=False)
    r = api(u).get(tree_url(p))
    assert (r.status_code, r.json()) == (404, TREE_NOT_FOUND)


def test_non_utf8_names_are_listed_as_latin1(api, make, settings, tmp_path):
    u = make.user()
    p = new_project(api, u)
    push_with_git(settings, p, tmp_path, {b"na\xefve.txt": b"x"})
    names = [e["name"] for e in api(u).get(tree_url(p)).json()]
    assert "naïve.txt" in names


# ---------------------------------------------------------------------------- pagination


def test_offset_pagination_sets_the_headers(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"recursive": "true", "per_page": 4, "page": 2})
    assert [e["path"] for e in r.json()] == ["README.md", "bin/run", "docs/a.md", "docs/b.md"]
    assert (r.headers["x-total"], r.headers["x-total-pages"], r.headers["x-page"]) == ("11", "3", "2")
    assert (r.headers["x-next-page"], r.headers["x-prev-page"], r.headers["x-per-page"]) == ("3", "1", "4")
    assert 'rel="next"' in r.headers["link"]


def test_default_page_size_is_20(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    commit_files(settings, p, {f"f{n:02}.txt": b"x" for n in range(25)})
    r = api(u).get(tree_url(p))
    assert (len(r.json()), r.headers["x-total"]) == (20, "26")


def test_keyset_pagination_follows_page_token_links(api, make, settings, client):
    u, p = layout(api, make, settings)
    seen = []
    r = api(u).get(tree_url(p), params={"recursive": "true", "pagination": "keyset", "per_page": 4})
    pages = 0
    while True:
        pages += 1
        assert r.status_code == 200
        seen += [e["path"] for e in r.json()]
        link = r.headers.get("link")
        if not link:
            break
        assert "x-total" not in r.headers
        url = link.split(">", 1)[0].lstrip("<").replace("http://kiln.test", "")
        assert "page_token=" in url
        r = api(u).get(url)
    everything = [
        e["path"] for e in api(u).get(tree_url(p), params={"recursive": "true", "per_page": 100}).json()
    ]
    assert (seen, pages) == (everything, 3)


def test_pagination_none_returns_everything_when_recursive(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    commit_files(settings, p, {f"d/f{n:03}.txt": b"x" for n in range(120)})
    r = api(u).get(tree_url(p), params={"recursive": "true", "pagination": "none"})
    assert (r.status_code, len(r.json()), "x-total" in r.headers) == (200, 122, False)


def test_pagination_none_lists_a_large_tree_in_order(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    commit_files(settings, p, {f"d/f{n:04}.txt": b"x" for n in range(2500)})
    r = api(u).get(tree_url(p), params={"recursive": "true", "pagination": "none"})
    assert r.status_code == 200
    assert [e["path"] for e in r.json()] == ["d", "README.md", *(f"d/f{n:04}.txt" for n in range(2500))]


def test_a_listing_past_max_tree_entries_is_its_first_entries(api, make, settings, configure):
    u, p = layout(api, make, settings)
    configure(max_tree_entries=5)
    first = [
        ("tree", "bin"),
        ("tree", "docs"),
        ("blob", "README.md"),
        ("blob", "bin/run"),
        ("blob", "docs/a.md"),
    ]
    r = api(u).get(tree_url(p), params={"recursive": "true", "per_page": 100})
    assert ([(e["type"], e["path"]) for e in r.json()], r.headers["x-total"]) == (first, "5")
    r = api(u).get(tree_url(p), params={"recursive": "true", "pagination": "none"})
    assert [(e["type"], e["path"]) for e in r.json()] == first


def test_pagination_none_without_recursive_is_400(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"pagination": "none"})
    assert (r.status_code, r.json()) == (
        400,
        {"error": 'pagination cannot be "none" unless "recursive" is true'},
    )


def test_unknown_pagination_is_400(api, make, settings):
    u, p = layout(api, make, settings)
    r = api(u).get(tree_url(p), params={"pagination": "sideways"})
    assert (r.status_code, r.json()) == (400, {"error": "pagination does not have a valid value"})


# ---------------------------------------------------------------------------- who may read


def test_anonymous_lists_a_public_tree(api, make, settings):
    _u, p = layout(api, make, settings, visibility="public")
    assert api().get(tree_url(p)).status_code == 200


def test_anonymous_gets_404_for_a_private_tree(api, make, settings):
    _u, p = layout(api, make, settings)
    r = api().get(tree_url(p))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_guest_of_a_private_project_may_not_list_the_tree(api, make, settings, db):
    _u, p = layout(api, make, settings)
    guest = make.user()
    make.member(db.get(Project, p["id"]), guest, GUEST)
    assert api(guest).get(tree_url(p)).status_code == 403


def test_a_read_repository_token_lists_the_tree_and_reads_blobs(api, make, settings, db):
    _u, p = layout(api, make, settings)
    reader = make.user(scopes=["read_repository"])
    make.member(db.get(Project, p["id"]), reader, REPORTER)
    sha = oid(settings, p, "main:z.txt")
    assert api(reader).get(tree_url(p)).status_code == 200
    assert api(reader).get(f"/projects/{p['id']}/repository/blobs/{sha}").status_code == 200
    assert api(reader).get(f"/projects/{p['id']}/repository/blobs/{sha}/raw").content == b"z"


# ---------------------------------------------------------------------------- blobs


def test_blob_returns_size_base64_content_and_sha(api, make, settings):
    u, p = layout(api, make, settings)
    sha = oid(settings, p, "main:docs/img/x.png")
    r = api(u).get(f"/projects/{p['id']}/repository/blobs/{sha}")
    assert (r.status_code, r.json()) == (
        200,
        {"size": 4, "encoding": "base64", "content": base64.b64encode(b"\x89PNG").decode(), "sha": sha},
    )


def test_blob_by_abbreviated_sha(api, make, settings):
    u, p = layout(api, make, settings)
    sha = oid(settings, p, "main:z.txt")
    r = api(u).get(f"/projects/{p['id']}/repository/blobs/{sha[:10]}")
    assert (r.status_code, r.json()["sha"]) == (200, sha)


def test_raw_blob_is_byte_exact(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    data = bytes(range(256)) * 3
    commit_files(settings, p, {"all.bin": data})
    sha = oid(settings, p, "main:all.bin")
    r = api(u).get(f"/projects/{p['id']}/repository/blobs/{sha}/raw")
    assert (r.status_code, r.content, r.headers["content-type"]) == (200, data, "application/octet-stream")
    assert r.headers["content-length"] == str(len(data))


def test_a_raw_blob_read_in_pieces_is_byte_exact_with_its_length_and_type(api, make, settings):
    u = make.user()
    p = new_project(api, u)
    binary = bytes(range(256)) * ((STREAM_BYTES + 4321) // 256)
    text = b"line\n" * ((STREAM_BYTES + 4321) // 5)
    commit_files(settings, p, {"all.bin": binary, "all.txt": text})
    for path, data, kind in [
        ("all.bin", binary, "application/octet-stream"),
        ("all.txt", text, "text/plain; charset=utf-8"),
    ]:
        url = f"/projects/{p['id']}/repository/blobs/{oid(settings, p, f'main:{path}')[:12]}/raw"
        r = api(u).get(url)
        assert (r.status_code, r.content == data, r.headers["content-type"]) == (200, True, kind)
        assert (r.headers["content-length"], r.headers["x-content-type-options"]) == (
            str(len(data)),
            "nosniff",
        )
        head = api(u).head(url)
        assert (head.content, head.headers["content-length"], head.headers["content-type"]) == (
            b"",
            str(len(data)),
            kind,
        )


def test_raw_text_blob_is_plain_text(api, make, settings):
    u, p = layout(api, make, settings)
    sha = oid(settings, p, "main:src/main.py")
    r = api(u).get(f"/projects/{p['id']}/repository/blobs/{sha}/raw")
    assert (r.content, r.headers["content-type"]) == (b"print()", "text/plain; charset=utf-8")


@pytest.mark.parametrize("sha", ["0" * 40, "deadbeef", "not-a-sha", "main", "abc"])
def test_unknown_or_malformed_blob_is_404(api, make, settings, sha):
    u, p = layout(api, make, settings)
    for suffix in ("", "/raw"):
        r = api(u).get(f"/projects/{p['id']}/repository/blobs/{sha}{suffix}")
        assert (r.status_code, r.json()) == (404, BLOB_NOT_FOUND)


def test_a_tree_or_commit_id_is_not_a_blob(api, make, settings):
    u, p = layout(api, make, settings)
    for spec in ("main:docs", "main"):
        r = api(u).get(f"/projects/{p['id']}/repository/blobs/{oid(settings, p, spec)}")
        assert (r.status_code, r.json()) == (404, BLOB_NOT_FOUND)


def test_blob_of_an_empty_repository_is_404(api, make):
    u = make.user()
    p = new_project(api, u, readme=False)
    r = api(u).get(f"/projects/{p['id']}/repository/blobs/{'a' * 40}")
    assert (r.status_code, r.json()) == (404, BLOB_NOT_FOUND)
