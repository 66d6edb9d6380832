"""What a configuration may read of a commit (its files, which paths exist, what a push
changed) and the predefined variables rules see, for pipeline creation and the lint
endpoint alike."""

from __future__ import annotations

from collections.abc import Callable

import pygit2

from kiln.git import files as git_files
from kiln.services.ci_predefined import CI_FLAGS, slug
from kiln.services.ci_yaml import globs
from kiln.services.ci_yaml.plan import Context

ZERO_SHA = "0" * 40
# GitLab's exists: past this many glob comparisons, the clause holds without looking further.
MAX_EXISTS_COMPARISONS = 10_000
# Paths read from a tree for `exists` (a pushed tree could hold millions).
MAX_TREE_PATHS = 50_000


def basic_variables(
    project_path: str, default_branch: str | None, ref: str, tag: bool, source: str, sha: str
) -> dict[str, str]:
    """The predefined variables every pipeline has, as `rules: if` sees them."""
    namespace, _, name = project_path.rpartition("/")
    out = {
        **CI_FLAGS,
        "CI_PROJECT_PATH": project_path,
        "CI_PROJECT_PATH_SLUG": slug(project_path),
        "CI_PROJECT_NAME": name,
        "CI_PROJECT_NAMESPACE": namespace,
        "CI_DEFAULT_BRANCH": default_branch or "",
        "CI_PIPELINE_SOURCE": source,
        "CI_COMMIT_REF_NAME": ref,
        "CI_COMMIT_REF_SLUG": slug(ref),
        "CI_COMMIT_SHA": sha,
        "CI_COMMIT_SHORT_SHA": sha[:8],
    }
    if tag:
        out["CI_COMMIT_TAG"] = ref
    else:
        out["CI_COMMIT_BRANCH"] = ref
    return out


def _tree_paths(tree: pygit2.Tree) -> list[str]:
    """Every path of the tree, files and directories, walked without recursion."""
    out: list[str] = []
    pending: list[tuple[pygit2.Tree, str]] = [(tree, "")]
    while pending and len(out) < MAX_TREE_PATHS:
        current, prefix = pending.pop()
        for entry in current:
            name = entry.name or ""
            path = prefix + git_files.display_name(name.encode("utf-8", "surrogateescape"))
            out.append(path)
            if entry.type_str == "tree":
                obj = current[name]
                assert isinstance(obj, pygit2.Tree)
                pending.append((obj, path + "/"))
    return out


def _commit(repo: pygit2.Repository, sha: str) -> pygit2.Commit | None:
    try:
        return repo.revparse_single(sha).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def commit_context(
    repo: pygit2.Repository,
    sha: str,
    *,
    variables: dict[str, str],
    ref: str,
    tag: bool,
    source: str,
    before_sha: str | None,
    max_includes: int = 150,
) -> Context:
    """A Context reading the commit `sha` of `repo`."""
    commit = _commit(repo, sha)
    paths: list[str] | None = None

    def read_file(path: str) -> str | None:
        if commit is None:
            return None
        found = git_files.lookup(commit.tree, path)
        if found is None or not isinstance(found[1], pygit2.Blob):
            return None
        return found[1].data.decode("utf-8", "replace")

    def exists(patterns: list[str]) -> bool:
        nonlocal paths
        if commit is None:
            return False
        if paths is None:
            paths = _tree_paths(commit.tree)
        compiled = [c for c in (globs.compile_glob(p.lstrip("/")) for p in patterns) if c is not None]
        comparisons = 0
        for path in paths:
            for pattern in compiled:
                comparisons += 1
                if comparisons > MAX_EXISTS_COMPARISONS:
                    return True
                if pattern.match(path):
                    return True
        return False

    changed: Callable[[], list[str]] | None = None
    # GitLab compares only for branch pushes (and merge requests); otherwise `changes` holds.
    compares = not tag and source in ("push", "merge_request_event", "external_pull_request_event")
    if compares and before_sha is not None and before_sha != ZERO_SHA and commit is not None:
        before = _commit(repo, before_sha)
        if before is not None:
            memo: list[list[str]] = []

            def changed_paths() -> list[str]:
                if not memo:
                    assert before is not None
                    assert commit is not None
                    diff = repo.diff(before.tree, commit.tree)
                    found: dict[str, None] = {}
                    for delta in diff.deltas:
                        found[delta.old_file.path] = None
                        found[delta.new_file.path] = None
                    memo.append(list(found))
                return memo[0]

            changed = changed_paths
    return Context(
        variables=dict(variables),
        ref=ref,
        tag=tag,
        source=source,
        changed_paths=changed,
        exists=exists,
        read_file=read_file,
        max_includes=max_includes,
    )
