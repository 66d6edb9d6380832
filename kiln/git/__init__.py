"""Git repositories on disk (pygit2 and the git binary)."""
