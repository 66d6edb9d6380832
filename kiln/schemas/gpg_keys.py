"""Request contracts for GPG keys (GitLab's Users API "GPG keys" parameters)."""

from __future__ import annotations

from kiln.schemas._types import PageParams, Params


class GPGKeyList(PageParams):
    pass


class GPGKeyCreate(Params):
    key: str
