"""What can go wrong in a repository, independent of HTTP; services map these to API errors."""

from __future__ import annotations


class GitError(Exception):
    pass


class RepositoryMissing(GitError):
    pass


class RefNotFound(GitError):
    """A branch, tag or revision that does not resolve to a commit."""


class ActionFailed(GitError):
    """A file action cannot apply (file exists, file missing, stale last_commit_id, bad path)."""


class EmptyCommit(GitError):
    """The change would produce a tree identical to its parent's."""


class ConcurrentUpdate(GitError):
    """The branch moved (a push or another edit) between reading it and updating it."""


class InvalidRefName(GitError):
    pass


class ArchiveFailed(GitError):
    """`git archive` or its compressor exited with an error: the archive is not whole."""
