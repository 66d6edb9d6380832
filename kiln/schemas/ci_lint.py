"""Request contracts for the CI Lint API (GitLab's lib/api/lint.rb parameters)."""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from kiln.schemas._types import Flag, Params, mutually_exclusive


class LintContent(Params):
    id: str
    content: str
    dry_run: Flag = False
    include_jobs: Flag = False
    ref: str | None = None


class LintProject(Params):
    id: str
    sha: str | None = None
    content_ref: str | None = None
    dry_run: Flag = False
    include_jobs: Flag = False
    ref: str | None = None
    dry_run_ref: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_of_each(cls, data: Any) -> Any:
        mutually_exclusive(data, "sha", "content_ref")
        mutually_exclusive(data, "ref", "dry_run_ref")
        return data
