"""A commit as CI configuration sees it: its files for `include: local`, its paths for
`exists`, what a push changed for `changes`; and the predefined variables rules see."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from kiln.services.ci_yaml import basic_variables, commit_context, plan_pipeline
from tests.factories.repositories import write_commit


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r.git"), bare=True)


def context(repo: pygit2.Repository, sha: str, before: str | None = None):
    return commit_context(
        repo,
        sha,
        variables={"CI_PROJECT_PATH": "g/p"},
        ref="main",
        tag=False,
        source="push",
        before_sha=before,
    )


def test_read_file_reads_blobs_of_the_commit(repo):
    sha = write_commit(repo, {"ci/a.yml": "a: {script: x}\n", "bin.dat": b"\xff\xfe"})
    ctx = context(repo, sha)
    assert ctx.read_file("ci/a.yml") == "a: {script: x}\n"
    assert ctx.read_file("/ci/a.yml") == "a: {script: x}\n"
    assert ctx.read_file("ci") is None
    assert ctx.read_file("missing.yml") is None
    assert ctx.read_file("bin.dat") is not None


@pytest.mark.parametrize(
    ("globs", "found"),
    [
        (["Dockerfile"], True),
        (["*.md"], False),
        (["**/*.md"], True),
        (["docs/*.md"], True),
        (["docs/*"], True),
        (["docs"], True),
        (["src/**/main.py"], True),
        (["src/*.py"], False),
        (["nope", "src/{a,b}/main.py"], True),
        (["nope"], False),
    ],
)
def test_exists_matches_globs_against_the_tree(repo, globs, found):
    sha = write_commit(repo, {"Dockerfile": "FROM x", "docs/readme.md": "x", "src/a/main.py": "x"})
    assert context(repo, sha).exists(globs) is found


def test_changed_paths_between_before_and_the_commit(repo):
    first = write_commit(repo, {"a.txt": "1", "b.txt": "1"})
    second = write_commit(repo, {"a.txt": "2", "c/d.txt": "new", "b.txt": None})
    changed = context(repo, second, first).changed_paths
    assert changed is not None
    assert sorted(changed()) == ["a.txt", "b.txt", "c/d.txt"]


@pytest.mark.parametrize("before", [None, "0" * 40])
def test_no_before_sha_means_changes_always_hold(repo, before):
    sha = write_commit(repo, {"a.txt": "1"})
    assert context(repo, sha, before).changed_paths is None


def test_a_pipeline_reads_includes_and_rules_from_the_commit(repo):
    first = write_commit(repo, {"x": "1"})
    sha = write_commit(
        repo,
        {
            ".gitlab-ci.yml": "include: ci/jobs.yml\n",
            "ci/jobs.yml": (
                "docker: {script: x, rules: [{exists: [Dockerfile]}]}\n"
                "docs: {script: x, rules: [{changes: [docs/*]}]}\n"
                "code: {script: x, rules: [{changes: ['src/**/*']}]}\n"
            ),
            "src/lib/a.py": "x",
        },
    )
    ctx = context(repo, sha, first)
    text = ctx.read_file(".gitlab-ci.yml")
    assert text is not None
    plan = plan_pipeline(text, ctx)
    assert plan.errors == []
    assert [j.name for j in plan.jobs] == ["code"]


def test_basic_variables_for_a_branch_and_a_tag():
    branch = basic_variables("group/My.Project", "main", "feature/X_1", False, "push", "a" * 40)
    assert branch["CI_COMMIT_BRANCH"] == "feature/X_1"
    assert "CI_COMMIT_TAG" not in branch
    assert branch["CI_COMMIT_REF_SLUG"] == "feature-x-1"
    assert (branch["CI_PROJECT_PATH"], branch["CI_PROJECT_NAME"], branch["CI_PROJECT_NAMESPACE"]) == (
        "group/My.Project",
        "My.Project",
        "group",
    )
    assert (branch["CI_DEFAULT_BRANCH"], branch["CI_PIPELINE_SOURCE"]) == ("main", "push")
    assert branch["CI_COMMIT_SHORT_SHA"] == "aaaaaaaa"
    tag = basic_variables("g/p", None, "v1.0", True, "web", "b" * 40)
    assert tag["CI_COMMIT_TAG"] == "v1.0"
    assert "CI_COMMIT_BRANCH" not in tag
    assert tag["CI_DEFAULT_BRANCH"] == ""


@pytest.mark.parametrize(("tag", "source"), [(True, "push"), (False, "schedule"), (False, "web")])
def test_changes_always_hold_for_tags_and_pipelines_not_from_a_push(repo, tag, source):
    first = write_commit(repo, {"a.txt": "1"})
    second = write_commit(repo, {"a.txt": "2"})
    ctx = commit_context(repo, second, variables={}, ref="main", tag=tag, source=source, before_sha=first)
    assert ctx.changed_paths is None
