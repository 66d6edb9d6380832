"""python-gitlab, as published, running a whole review on a running `kiln serve`: a branch and
commits, a merge request, a discussion on a line of its diff, replies and resolution, an
approval rule and an approval, its versions and changes, the merge; then `git clone` sees the
merge and `git fsck` finds the repository sound."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import gitlab
import pytest
from gitlab.exceptions import GitlabGetError, GitlabMRClosedError

from tests.e2e.test_git_http import Git
from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e


class Review:
    """A maintainer's project with a README, a Developer who proposes, each with a client."""

    def __init__(self, root: gitlab.Gitlab, base_url: str, unique: Callable[[str], str]) -> None:
        self.maintainer = create_user(root, unique("mr-owner"))
        self.dev = create_user(root, unique("mr-dev"))
        self.maintainer_token = token_for(root, self.maintainer)
        self.gl = client_of(base_url, self.maintainer_token)
        self.dev_gl = client_of(base_url, token_for(root, self.dev))
        self.project = self.gl.projects.create({"name": unique("review"), "initialize_with_readme": True})
        self.project.members.create({"user_id": self.dev.id, "access_level": 30})
        self.dev_project = self.dev_gl.projects.get(self.project.id)


@pytest.fixture
def review(root: gitlab.Gitlab, base_url: str, unique: Callable[[str], str]) -> Review:
    return Review(root, base_url, unique)


def commit(project, branch: str, path: str, content: str, message: str, action: str = "create") -> str:
    made = project.commits.create(
        {
            "branch": branch,
            "commit_message": message,
            "actions": [{"action": action, "file_path": path, "content": content}],
        }
    )
    return made.id


def checked(mr_manager, iid: int, timeout: float = 30.0):
    """The merge request once its merge status is known, as clients poll for it."""
    deadline = time.monotonic() + timeout
    while True:
        mr = mr_manager.get(iid)
        if mr.merge_status not in ("unchecked", "checking") or time.monotonic() > deadline:
            return mr
        time.sleep(0.2)


def test_a_whole_review_from_branch_to_merge(review, tmp_path: Path):
    dev = review.dev_project
    dev.branches.create({"branch": "feature", "ref": "main"})
    commit(dev, "feature", "app.py", "def main():\n    return 1\n", "Add app")
    head = commit(dev, "feature", "app.py", "def main():\n    return 2\n", "Return two", action="update")

    mr = dev.mergerequests.create(
        {"source_branch": "feature", "target_branch": "main", "title": "Add the app", "labels": ["review"]}
    )
    assert (mr.iid, mr.state, mr.sha) == (1, "opened", head)
    assert mr.labels == ["review"]
    assert mr.source_project_id == mr.target_project_id == mr.project_id == review.project.id
    assert "detailed_merge_status" in mr.attributes
    mr = checked(dev.mergerequests, mr.iid)
    assert mr.merge_status == "can_be_merged"
    assert mr.has_conflicts is False
    refs = mr.diff_refs
    assert refs["head_sha"] == head

    # The maintainer comments on line 2 of app.py in the diff; the developer answers.
    maintainer_mr = review.project.mergerequests.get(mr.iid)
    position = {
        "base_sha": refs["base_sha"],
        "start_sha": refs["start_sha"],
        "head_sha": refs["head_sha"],
        "position_type": "text",
        "new_path": "app.py",
        "old_path": "app.py",
        "new_line": 2,
    }
    thread = maintainer_mr.discussions.create({"body": "Why two?", "position": position})
    first = thread.attributes["notes"][0]
    assert first["type"] == "DiffNote"
    assert first["position"]["new_line"] == 2
    assert (first["resolvable"], first["resolved"]) == (True, False)
    dev.mergerequests.get(mr.iid).discussions.get(thread.id).notes.create({"body": "Because."})
    thread = maintainer_mr.discussions.get(thread.id)
    assert [n["body"] for n in thread.attributes["notes"]] == ["Why two?", "Because."]
    thread.resolved = True
    thread.save()
    notes = maintainer_mr.discussions.get(thread.id).attributes["notes"]
    assert [(n["resolved"], n["resolved_by"]["id"]) for n in notes] == [(True, review.maintainer.id)] * 2
    assert review.project.mergerequests.get(mr.iid).blocking_discussions_resolved is True

    # One approval from the maintainer is required, and given.
    review.project.approvalrules.create(
        {"name": "Maintainers", "approvals_required": 1, "user_ids": [review.maintainer.id]}
    )
    approvals = maintainer_mr.approvals.get()
    assert approvals.approvals_left == 1
    maintainer_mr.approve(sha=head)
    approvals = maintainer_mr.approvals.get()
    assert approvals.approvals_left == 0
    assert [a["user"]["id"] for a in approvals.approved_by] == [review.maintainer.id]

    # Versions and changes as a reviewer reads them.
    versions = maintainer_mr.diffs.list(get_all=True)
    assert len(versions) == 1
    version = maintainer_mr.diffs.get(versions[0].id)
    assert [c["title"] for c in version.commits] == ["Return two", "Add app"]
    assert [d["new_path"] for d in version.diffs] == ["app.py"]
    changes = maintainer_mr.changes()
    assert [c["new_path"] for c in changes["changes"]] == ["app.py"]
    assert changes["changes"][0]["diff"] == "@@ -0,0 +1,2 @@\n+def main():\n+    return 2\n"

    merged = maintainer_mr.merge(should_remove_source_branch=True)
    assert merged["state"] == "merged"
    assert merged["merged_by"]["id"] == review.maintainer.id
    with pytest.raises(GitlabMRClosedError) as again:
        maintainer_mr.merge()
    assert again.value.response_code == 405
    with pytest.raises(GitlabGetError) as gone:
        review.project.branches.get("feature")
    assert gone.value.response_code == 404
    main = review.project.branches.get("main")
    assert main.commit["id"] == merged["merge_commit_sha"]

    # git sees the merge: the merge commit on main, the source head its second parent, fsck clean.
    git = Git(tmp_path / "home")
    scheme, rest = review.project.http_url_to_repo.split("://", 1)
    url = f"{scheme}://oauth2:{quote(review.maintainer_token, safe='')}@{rest}"
    work = tmp_path / "clone"
    git.run("clone", "-q", url, str(work))
    shas = git.run("log", "--format=%H %P", "-1", cwd=work).stdout.split()
    assert (len(shas), shas[0], shas[2]) == (3, merged["merge_commit_sha"], head)
    assert (work / "app.py").read_text() == "def main():\n    return 2\n"
    git.run("fsck", "--strict", cwd=work)
