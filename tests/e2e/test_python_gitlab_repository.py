"""python-gitlab, as published, working a repository on a running `kiln serve`: files (and
their metadata headers), branches, tags, protected branches, commits, tree, blobs, compare,
merge bases, archives."""

from __future__ import annotations

import base64
import io
import zipfile

import gitlab
import pytest
from gitlab.exceptions import GitlabCherryPickError, GitlabCreateError, GitlabGetError, GitlabUpdateError
from gitlab.v4.objects import Project

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def project(root: gitlab.Gitlab, base_url: str, unique) -> Project:
    gl = client_of(base_url, token_for(root, create_user(root, unique("dev"))))
    return gl.projects.create({"name": unique("repo"), "initialize_with_readme": True})


def test_files_round_trip(project):
    made = project.files.create(
        {"file_path": "docs/guide.md", "branch": "main", "content": "one\n", "commit_message": "add guide"}
    )
    assert made.file_path == "docs/guide.md"
    f = project.files.get(file_path="docs/guide.md", ref="main")
    assert (f.decode(), f.file_name) == (b"one\n", "guide.md")
    f.content = "two\n"
    f.save(branch="main", commit_message="edit guide")
    assert project.files.raw(file_path="docs/guide.md", ref="main") == b"two\n"
    head = project.files.head("docs/guide.md", ref="main")
    blob_id = project.files.get(file_path="docs/guide.md", ref="main").blob_id
    assert head["X-Gitlab-Blob-Id"] == head["X-Service-Blob-Id"] == blob_id
    blame = project.files.blame(file_path="docs/guide.md", ref="main")
    assert [(b["commit"]["message"], b["lines"]) for b in blame] == [("edit guide", ["two"])]
    project.files.delete(file_path="docs/guide.md", branch="main", commit_message="drop guide")
    with pytest.raises(GitlabGetError) as err:
        project.files.get(file_path="docs/guide.md", ref="main")
    assert err.value.response_code == 404


def test_a_stale_last_commit_id_is_refused(project):
    f = project.files.get(file_path="README.md", ref="main")
    stale = f.last_commit_id
    f.content = "newer\n"
    f.save(branch="main", commit_message="newer")
    with pytest.raises(GitlabUpdateError) as err:
        project.files.update(
            "README.md",
            {"branch": "main", "content": "older\n", "commit_message": "older", "last_commit_id": stale},
        )
    assert err.value.response_code == 400


def test_branches_tags_and_protection(project):
    branch = project.branches.create({"branch": "feature/x", "ref": "main"})
    assert branch.name == "feature/x"
    assert project.branches.get("feature/x").commit["id"] == project.branches.get("main").commit["id"]
    assert [b.name for b in project.branches.list(search="feature", get_all=True)] == ["feature/x"]
    tag = project.tags.create({"tag_name": "v1.0", "ref": "main", "message": "first release"})
    assert (tag.name, tag.message) == ("v1.0", "first release")
    assert [t.name for t in project.tags.list(get_all=True)] == ["v1.0"]
    rule = project.protectedbranches.create({"name": "release/*", "push_access_level": 40})
    assert rule.push_access_levels[0]["access_level"] == 40
    assert {r.name for r in project.protectedbranches.list(get_all=True)} == {"main", "release/*"}
    project.branches.delete("feature/x")
    project.tags.delete("v1.0")
    assert [b.name for b in project.branches.list(get_all=True)] == ["main"]


def test_commits_with_actions_diff_refs_and_comments(project):
    commit = project.commits.create(
        {
            "branch": "main",
            "commit_message": "several",
            "actions": [
                {"action": "create", "file_path": "a.txt", "content": "a\n"},
                {
                    "action": "create",
                    "file_path": "bin.dat",
                    "content": base64.b64encode(b"\0\1").decode(),
                    "encoding": "base64",
                },
                {"action": "move", "file_path": "README.md.old", "previous_path": "README.md"},
            ],
        }
    )
    assert commit.title == "several"
    got = project.commits.get(commit.id)
    assert got.stats["additions"] >= 1
    diff = got.diff(get_all=True)
    assert {d["new_path"] for d in diff} == {"a.txt", "bin.dat", "README.md.old"}
    assert [d["renamed_file"] for d in diff if d["new_path"] == "README.md.old"] == [True]
    assert {"type": "branch", "name": "main"} in got.refs(get_all=True)
    got.comments.create({"note": "looks right"})
    assert [c.note for c in got.comments.list(get_all=True)] == ["looks right"]
    # python-gitlab takes `path` for the URL of a list; the query's `path` goes this way.
    history = project.commits.list(ref_name="main", query_parameters={"path": "a.txt"}, get_all=True)
    assert [c.id for c in history] == [commit.id]


def test_cherry_pick_and_revert(project):
    project.branches.create({"branch": "side", "ref": "main"})
    change = project.commits.create(
        {
            "branch": "side",
            "commit_message": "on side",
            "actions": [{"action": "create", "file_path": "s.txt", "content": "s\n"}],
        }
    )
    picked = project.commits.get(change.id).cherry_pick(branch="main")
    assert picked["message"].endswith(f"(cherry picked from commit {change.id})")
    with pytest.raises(GitlabCherryPickError):
        project.commits.get(change.id).cherry_pick(branch="main")
    reverted = project.commits.get(picked["id"]).revert(branch="main")
    assert reverted["message"] == f'Revert "on side"\n\nThis reverts commit {picked["id"]}'


def test_tree_blobs_compare_contributors_archive_languages(project):
    project.commits.create(
        {
            "branch": "main",
            "commit_message": "code",
            "actions": [{"action": "create", "file_path": "src/app.py", "content": "print(1)\n"}],
        }
    )
    tree = project.repository_tree(recursive=True, ref="main", get_all=True)
    assert {(t["path"], t["type"]) for t in tree} == {
        ("README.md", "blob"),
        ("src", "tree"),
        ("src/app.py", "blob"),
    }
    blob = next(t for t in tree if t["path"] == "src/app.py")
    assert project.repository_raw_blob(blob["id"]) == b"print(1)\n"
    assert project.repository_blob(blob["id"])["size"] == 9
    first = project.commits.list(ref_name="main", get_all=True)[-1]
    compared = project.repository_compare(first.id, "main")
    assert [d["new_path"] for d in compared["diffs"]] == ["src/app.py"]
    assert [c["commits"] for c in project.repository_contributors(get_all=True)] == [2]
    archive = project.repository_archive(format="zip")
    names = zipfile.ZipFile(io.BytesIO(archive)).namelist()
    assert any(name.endswith("src/app.py") for name in names)
    assert project.repository_archive(format="zip") == archive
    assert set(project.languages()) == {"Python", "Markdown"}


def test_files_head_tells_gitlabs_metadata_headers(project):
    """python-gitlab's `files.head` answers the response's headers: GitLab's X-Gitlab-* ones."""
    made = project.commits.create(
        {
            "branch": "main",
            "commit_message": "add tool",
            "actions": [
                {"action": "create", "file_path": "bin/tool.sh", "content": "#!/bin/sh\n"},
            ],
        }
    )
    f = project.files.get(file_path="bin/tool.sh", ref="main")
    head = project.files.head("bin/tool.sh", ref="main")
    assert {
        name: head[f"X-Gitlab-{name}"]
        for name in ("Blob-Id", "Commit-Id", "Last-Commit-Id", "Content-Sha256", "File-Name", "File-Path")
    } == {
        "Blob-Id": f.blob_id,
        "Commit-Id": made.id,
        "Last-Commit-Id": made.id,
        "Content-Sha256": f.content_sha256,
        "File-Name": "tool.sh",
        "File-Path": "bin/tool.sh",
    }
    assert (head["X-Gitlab-Ref"], head["X-Gitlab-Size"], head["X-Gitlab-Encoding"]) == (
        "main",
        "10",
        "base64",
    )
    raw = project.manager.gitlab.http_request(
        "get", f"/projects/{project.id}/repository/files/bin%2Ftool.sh/raw", query_data={"ref": "main"}
    )
    assert (raw.content, raw.headers["X-Gitlab-Blob-Id"]) == (b"#!/bin/sh\n", f.blob_id)


def test_repository_merge_base(project):
    base = project.commits.list(ref_name="main", get_all=True)[0]
    project.branches.create({"branch": "side", "ref": "main"})
    for branch in ("main", "side"):
        project.commits.create(
            {
                "branch": branch,
                "commit_message": f"on {branch}",
                "actions": [{"action": "create", "file_path": f"{branch}.txt", "content": "x\n"}],
            }
        )
    found = project.repository_merge_base(["main", "side"])
    assert (found["id"], found["title"]) == (base.id, base.title)
    with pytest.raises(GitlabGetError, match="Provide at least 2 refs") as err:
        project.repository_merge_base("main")
    assert err.value.response_code == 400
    with pytest.raises(GitlabGetError, match="Could not find ref: nowhere"):
        project.repository_merge_base(["main", "nowhere"])


def test_a_missing_ref_is_a_404(project):
    with pytest.raises(GitlabGetError) as err:
        project.files.get(file_path="README.md", ref="nowhere")
    assert err.value.response_code == 404


def test_a_developer_may_not_write_to_a_protected_branch(project, root, base_url, unique):
    dev = create_user(root, unique("dev"))
    project.members.create({"user_id": dev.id, "access_level": 30})
    as_dev = client_of(base_url, token_for(root, dev)).projects.get(project.id, lazy=True)
    with pytest.raises(GitlabCreateError) as err:
        as_dev.files.create({"file_path": "x.txt", "branch": "main", "content": "x", "commit_message": "x"})
    assert (err.value.response_code, err.value.error_message) == (
        400,
        "You are not allowed to push into this branch",
    )
    as_dev.files.create(
        {
            "file_path": "x.txt",
            "branch": "dev-work",
            "start_branch": "main",
            "content": "x",
            "commit_message": "x",
        }
    )
    assert project.branches.get("dev-work").commit["title"] == "x"
