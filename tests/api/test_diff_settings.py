"""The diff limits are instance settings (GitLab's application settings diff_max_patch_bytes,
diff_max_files, diff_max_lines, with its defaults): every diff reads them as they stand at
the request, the commit diff and compare alike; the environment sets none of them."""

from __future__ import annotations

from typing import Any

import pytest

from kiln.config import Settings
from kiln.services import instance_settings
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import new_project


@pytest.fixture
def owner(make: Any) -> Any:
    return make.user()


@pytest.fixture
def project(api: Any, make: Any, owner: Any) -> dict[str, Any]:
    return new_project(api, make, owner)


def lines(n: int, width: int = 10) -> bytes:
    """`n` lines of `width` bytes each, newline included."""
    return b"".join(f"{i:0{width - 1}d}\n".encode() for i in range(n))


def commit_files(settings: Any, project: dict[str, Any], files: dict[str, bytes]) -> str:
    return write_commit(open_repository(settings, project["id"]), files)


def commit_diff(api: Any, who: Any, project: dict[str, Any], sha: str) -> list[dict[str, Any]]:
    r = api(who).get(f"/projects/{project['id']}/repository/commits/{sha}/diff", params={"per_page": 100})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def compare(api: Any, who: Any, project: dict[str, Any], start: str, end: str) -> dict[str, Any]:
    r = api(who).get(f"/projects/{project['id']}/repository/compare", params={"from": start, "to": end})
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_the_defaults_are_gitlabs():
    assert {
        key: instance_settings.DEFAULTS[key]
        for key in ("diff_max_patch_bytes", "diff_max_files", "diff_max_lines")
    } == {
        "diff_max_patch_bytes": 204800,
        "diff_max_files": 1000,
        "diff_max_lines": 50000,
    }


def test_the_environment_sets_no_diff_limit(monkeypatch):
    """One source of truth: KILN_DIFF_MAX_* are not settings of the process."""
    monkeypatch.setenv("KILN_DIFF_MAX_FILES", "1")
    assert {"diff_max_patch_bytes", "diff_max_files", "diff_max_lines"} & set(Settings.model_fields) == set()


def test_lowering_diff_max_patch_bytes_makes_a_patch_too_large(api, owner, project, settings, db):
    """A patch shown under the default is `too_large`, with no hunks, once
    diff_max_patch_bytes is at most its size, in the commit diff and in compare."""
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    sha = commit_files(settings, project, {"big.txt": lines(28), "small.txt": b"one\n"})
    (shown,) = [d for d in commit_diff(api, owner, project, sha) if d["new_path"] == "big.txt"]
    assert (shown["too_large"], len(shown["diff"])) == (False, 325)
    instance_settings.update(db, {"diff_max_patch_bytes": 325})
    by_path = {d["new_path"]: d for d in commit_diff(api, owner, project, sha)}
    assert (by_path["big.txt"]["too_large"], by_path["big.txt"]["diff"]) == (True, "")
    assert (by_path["small.txt"]["too_large"], by_path["small.txt"]["diff"]) == (
        False,
        "@@ -0,0 +1 @@\n+one\n",
    )
    compared = {d["new_path"]: d for d in compare(api, owner, project, base, sha)["diffs"]}
    assert (compared["big.txt"]["too_large"], compared["big.txt"]["diff"]) == (True, "")


def test_raising_diff_max_patch_bytes_shows_the_patch_again(api, owner, project, settings, db):
    sha = commit_files(settings, project, {"big.txt": lines(28)})
    instance_settings.update(db, {"diff_max_patch_bytes": 325})
    assert [d["too_large"] for d in commit_diff(api, owner, project, sha)] == [True]
    instance_settings.update(db, {"diff_max_patch_bytes": 326})
    assert [(d["too_large"], len(d["diff"])) for d in commit_diff(api, owner, project, sha)] == [(False, 325)]


def test_lowering_diff_max_files_cuts_the_diff_short(api, owner, project, settings, db):
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    sha = commit_files(settings, project, {f"f{n}.txt": b"x\n" for n in range(5)})
    assert len(commit_diff(api, owner, project, sha)) == 5
    instance_settings.update(db, {"diff_max_files": 3})
    assert [d["new_path"] for d in commit_diff(api, owner, project, sha)] == ["f0.txt", "f1.txt", "f2.txt"]
    body = compare(api, owner, project, base, sha)
    assert (len(body["diffs"]), body["compare_timeout"]) == (3, True)


def test_lowering_diff_max_lines_cuts_the_diff_short(api, owner, project, settings, db):
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    sha = commit_files(settings, project, {"a.txt": lines(10), "b.txt": lines(10), "c.txt": lines(10)})
    assert len(commit_diff(api, owner, project, sha)) == 3
    assert [d["collapsed"] for d in compare(api, owner, project, base, sha)["diffs"]] == [False] * 3
    instance_settings.update(db, {"diff_max_lines": 25})
    assert [d["new_path"] for d in commit_diff(api, owner, project, sha)] == ["a.txt", "b.txt"]
    # Compare collapses the files past a tenth of the lines (2 here), and they count none.
    body = compare(api, owner, project, base, sha)
    assert ([d["collapsed"] for d in body["diffs"]], body["compare_timeout"]) == ([True] * 3, False)


def test_compare_collapses_past_a_tenth_of_the_settings(api, owner, project, settings, db):
    """Compare (not the commit diff) collapses the files past a tenth of diff_max_files."""
    base = commit_files(settings, project, {"seed.txt": b"seed\n"})
    sha = commit_files(settings, project, {f"f{n}.txt": b"x\n" for n in range(4)})
    assert [d["collapsed"] for d in compare(api, owner, project, base, sha)["diffs"]] == [False] * 4
    instance_settings.update(db, {"diff_max_files": 20})
    assert [d["collapsed"] for d in compare(api, owner, project, base, sha)["diffs"]] == [
        False,
        False,
        True,
        True,
    ]
    assert [d["collapsed"] for d in commit_diff(api, owner, project, sha)] == [False] * 4
