"""kiln.git.merges against real repositories, checked with the git CLI: each merge method's
commits are what git would make, conflicts refuse, rebase replays, fsck stays clean."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from kiln.git import merges
from kiln.git.errors import ConcurrentUpdate
from tests.repositories import fsck_errors, git

SIG = pygit2.Signature("Merger", "merger@example.com", 1_700_000_000, 0)


def _repo(tmp_path: Path) -> pygit2.Repository:
    path = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
    return pygit2.Repository(str(path))


def _commit(repo: pygit2.Repository, parent: str | None, files: dict[str, str], message: str = "c") -> str:
    index = pygit2.Index()
    if parent is not None:
        index.read_tree(repo[parent].peel(pygit2.Commit).tree)
    for name, text in files.items():
        index.add(pygit2.IndexEntry(name, repo.create_blob(text.encode()), pygit2.enums.FileMode.BLOB))
    tree = index.write_tree(repo)
    return str(repo.create_commit(None, SIG, SIG, message, tree, [parent] if parent else []))


def _branch(repo: pygit2.Repository, name: str, sha: str) -> None:
    repo.references.create(f"refs/heads/{name}", pygit2.Oid(hex=sha), force=True)


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[pygit2.Repository, str, str, str]:
    """main and feature diverged from a base, touching different files."""
    repo = _repo(tmp_path)
    base = _commit(repo, None, {"a.txt": "a\n", "b.txt": "b\n"})
    main = _commit(repo, base, {"a.txt": "a2\n"}, "main change")
    feature = _commit(repo, base, {"b.txt": "b2\n"}, "feature change")
    _branch(repo, "main", main)
    _branch(repo, "feature", feature)
    return repo, base, main, feature


def _show(repo: pygit2.Repository, sha: str, path: str) -> str:
    return git(Path(repo.path), "show", f"{sha}:{path}").stdout.decode()


def test_merge_commit_has_both_parents_and_both_changes(
    diverged: tuple[pygit2.Repository, str, str, str],
) -> None:
    repo, _, main, feature = diverged
    done = merges.build(repo, method="merge", target=main, source=feature, message="Merge\n", committer=SIG)
    commit = repo[done.tip].peel(pygit2.Commit)
    assert [str(p) for p in commit.parent_ids] == [main, feature]
    assert done.squash_commit is None
    assert _show(repo, done.tip, "a.txt") == "a2\n"
    assert _show(repo, done.tip, "b.txt") == "b2\n"
    # The same tree git's own merge makes.
    expected = git(Path(repo.path), "merge-tree", "--write-tree", main, feature).stdout.decode().split()[0]
    assert str(commit.tree_id) == expected
    merges.move_branch(repo, "main", done.tip, main, "kiln: merge")
    assert fsck_errors(Path(repo.path)) == ""


def test_conflict_refuses_every_method(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = _commit(repo, None, {"a.txt": "a\n"})
    main = _commit(repo, base, {"a.txt": "main\n"})
    feature = _commit(repo, base, {"a.txt": "feature\n"})
    assert not merges.mergeable(repo, main, feature)
    with pytest.raises(merges.MergeConflict):
        merges.build(repo, method="merge", target=main, source=feature, message="m", committer=SIG)


def test_unrelated_histories_do_not_merge(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    one = _commit(repo, None, {"a.txt": "a\n"})
    other = _commit(repo, None, {"b.txt": "b\n"})
    assert not merges.mergeable(repo, one, other)


def test_rebase_merge_and_ff_need_the_target_in_the_source(
    diverged: tuple[pygit2.Repository, str, str, str],
) -> None:
    repo, _, main, feature = diverged
    for method in ("rebase_merge", "ff"):
        with pytest.raises(merges.NotFastForward):
            merges.build(repo, method=method, target=main, source=feature, message="m", committer=SIG)


def test_ff_moves_to_the_source_head(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, _, main, _ = diverged
    ahead = _commit(repo, main, {"c.txt": "c\n"})
    done = merges.build(repo, method="ff", target=main, source=ahead, message="m", committer=SIG)
    assert done.tip == ahead
    assert done.merge_commit is None  # a fast-forward makes no merge commit


@pytest.mark.parametrize("method", ["merge", "rebase_merge", "ff"])
def test_a_source_already_in_the_target_is_nothing_to_merge(
    diverged: tuple[pygit2.Repository, str, str, str], method: str
) -> None:
    repo, base, main, _ = diverged
    for source in (main, base):  # the tip itself, an ancestor of it
        with pytest.raises(merges.NothingToMerge):
            merges.build(repo, method=method, target=main, source=source, message="m", committer=SIG)


def test_the_merged_tree_is_the_one_git_merge_makes(tmp_path: Path) -> None:
    """Both sides change one file in different places, and add, delete and change others:
    kiln's merge tree is `git merge-tree --write-tree`'s (git's own merge)."""
    repo = _repo(tmp_path)
    lines = "".join(f"line {n}\n" for n in range(1, 21))
    base = _commit(repo, None, {"shared.txt": lines, "gone.txt": "bye\n", "kept.txt": "k\n"})
    index = pygit2.Index()
    index.read_tree(repo[base].peel(pygit2.Commit).tree)
    index.remove("gone.txt")
    index.add(
        pygit2.IndexEntry(
            "shared.txt",
            repo.create_blob(lines.replace("line 2\n", "main 2\n").encode()),
            pygit2.enums.FileMode.BLOB,
        )
    )
    index.add(pygit2.IndexEntry("main.txt", repo.create_blob(b"m\n"), pygit2.enums.FileMode.BLOB))
    main = str(repo.create_commit(None, SIG, SIG, "main", index.write_tree(repo), [pygit2.Oid(hex=base)]))
    feature = _commit(
        repo,
        base,
        {"shared.txt": lines.replace("line 19\n", "feature 19\n"), "kept.txt": "k2\n", "dir/new.txt": "n\n"},
    )
    _branch(repo, "main", main)
    _branch(repo, "feature", feature)
    done = merges.build(repo, method="merge", target=main, source=feature, message="m", committer=SIG)
    ours = repo[done.tip].peel(pygit2.Commit).tree_id
    theirs = git(Path(repo.path), "merge-tree", "--write-tree", main, feature).stdout.decode().split()[0]
    assert str(ours) == theirs
    merged = _show(repo, done.tip, "shared.txt")
    assert merged == lines.replace("line 2\n", "main 2\n").replace("line 19\n", "feature 19\n")


def test_rebase_merge_makes_a_merge_commit_when_ff_is_possible(
    diverged: tuple[pygit2.Repository, str, str, str],
) -> None:
    repo, _, main, _ = diverged
    ahead = _commit(repo, main, {"c.txt": "c\n"})
    done = merges.build(repo, method="rebase_merge", target=main, source=ahead, message="m", committer=SIG)
    commit = repo[done.tip].peel(pygit2.Commit)
    assert [str(p) for p in commit.parent_ids] == [main, ahead]
    assert commit.tree_id == repo[ahead].peel(pygit2.Commit).tree_id


def test_squash_then_merge(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, base, main, feature = diverged
    second = _commit(repo, feature, {"c.txt": "c\n"})
    author = pygit2.Signature("Author", "author@example.com", 1_700_000_000, 0)
    done = merges.build(
        repo,
        method="merge",
        target=main,
        source=second,
        message="Merge\n",
        committer=SIG,
        squash=merges.Squash(message="Squashed", author=author),
    )
    assert done.squash_commit is not None
    squashed = repo[done.squash_commit].peel(pygit2.Commit)
    assert [str(p) for p in squashed.parent_ids] == [base]
    assert squashed.tree_id == repo[second].peel(pygit2.Commit).tree_id
    assert squashed.author.email == "author@example.com"
    assert squashed.message == "Squashed"
    merge = repo[done.tip].peel(pygit2.Commit)
    assert [str(p) for p in merge.parent_ids] == [main, done.squash_commit]
    assert _show(repo, done.tip, "c.txt") == "c\n"


def test_squash_with_ff_sits_on_the_target(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, _, main, _ = diverged
    one = _commit(repo, main, {"c.txt": "c\n"})
    two = _commit(repo, one, {"d.txt": "d\n"})
    done = merges.build(
        repo,
        method="ff",
        target=main,
        source=two,
        message="m",
        committer=SIG,
        squash=merges.Squash(message="Both", author=SIG),
    )
    assert done.tip == done.squash_commit
    squashed = repo[done.tip].peel(pygit2.Commit)
    assert [str(p) for p in squashed.parent_ids] == [main]
    assert squashed.tree_id == repo[two].peel(pygit2.Commit).tree_id


def test_message_bytes_are_kept(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, _, main, feature = diverged
    message = "Merge  it\r\n\n  trailing  \n\n\n"
    done = merges.build(repo, method="merge", target=main, source=feature, message=message, committer=SIG)
    assert repo[done.tip].peel(pygit2.Commit).raw_message == message.encode()


def test_move_branch_is_compare_and_swap(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, _, main, feature = diverged
    first = merges.build(repo, method="merge", target=main, source=feature, message="one", committer=SIG)
    second = merges.build(repo, method="merge", target=main, source=feature, message="two", committer=SIG)
    merges.move_branch(repo, "main", first.tip, main, "one")
    with pytest.raises(ConcurrentUpdate):
        merges.move_branch(repo, "main", second.tip, main, "two")
    assert str(repo.references["refs/heads/main"].target) == first.tip
    merges.undo_move(repo, "main", first.tip, main)
    assert str(repo.references["refs/heads/main"].target) == main


def test_rebase_replays_commits_keeping_authors_and_messages(
    diverged: tuple[pygit2.Repository, str, str, str],
) -> None:
    repo, _, main, feature = diverged
    author = pygit2.Signature("Author", "author@example.com", 1_600_000_000, 60)
    tree = repo[feature].peel(pygit2.Commit).tree
    index = pygit2.Index()
    index.read_tree(tree)
    index.add(pygit2.IndexEntry("c.txt", repo.create_blob(b"c\n"), pygit2.enums.FileMode.BLOB))
    second = str(
        repo.create_commit(None, author, author, b"second \xff\n", index.write_tree(repo), [feature])
    )
    new = merges.rebase(repo, onto=main, head=second, committer=SIG)
    top = repo[new].peel(pygit2.Commit)
    assert top.raw_message == b"second \xff\n"
    assert top.author.email == "author@example.com"
    assert top.author.time == 1_600_000_000
    assert top.committer.email == "merger@example.com"
    below = top.parents[0]
    assert below.message == "feature change"
    assert str(below.parent_ids[0]) == main
    assert merges.contains(repo, new, main)
    _branch(repo, "feature", new)
    assert fsck_errors(Path(repo.path)) == ""


def test_rebase_of_a_head_already_on_the_target_is_nothing(
    diverged: tuple[pygit2.Repository, str, str, str],
) -> None:
    repo, _, main, _ = diverged
    ahead = _commit(repo, main, {"c.txt": "c\n"})
    assert merges.rebase(repo, onto=main, head=ahead, committer=SIG) == ahead


def test_rebase_conflict(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    base = _commit(repo, None, {"a.txt": "a\n"})
    main = _commit(repo, base, {"a.txt": "main\n"})
    feature = _commit(repo, base, {"a.txt": "feature\n"})
    with pytest.raises(merges.RebaseConflict):
        merges.rebase(repo, onto=main, head=feature, committer=SIG)


def test_point_ref(diverged: tuple[pygit2.Repository, str, str, str]) -> None:
    repo, _, main, feature = diverged
    merges.point_ref(repo, "refs/merge-requests/1/merge", main)
    merges.point_ref(repo, "refs/merge-requests/1/merge", feature)
    assert str(repo.references["refs/merge-requests/1/merge"].target) == feature
