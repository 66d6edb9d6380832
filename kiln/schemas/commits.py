"""Request contracts of the Commits API (spec part 1 "Commits")."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, model_validator

from kiln.schemas._types import Flag, GrapeMessage, Int, PageParams, Params, When, _blank_is_none

# A bound given blank is no bound (Grape reads an empty value of a typed parameter as nil).
Bound = Annotated[When | None, BeforeValidator(_blank_is_none)]


class CommitList(PageParams):
    ref_name: str | None = None
    # Inclusive, to the second, over each commit's committed date.
    since: Bound = None
    until: Bound = None
    path: str | None = None
    author: str | None = None
    all: Flag = False
    with_stats: Flag = False
    first_parent: Flag = False
    order: Literal["default", "topo"] = "default"
    trailers: Flag = False


class CommitAction(Params):
    action: Literal["create", "update", "move", "delete", "chmod"]
    file_path: str
    previous_path: str | None = None
    content: str | None = None
    encoding: Literal["text", "base64"] = "text"
    last_commit_id: str | None = None
    execute_filemode: Flag | None = None


class CommitCreate(Params):
    branch: str
    commit_message: str
    actions: list[CommitAction]
    start_branch: str | None = None
    start_sha: str | None = None
    # An id or a full path (GitLab's `types: [Integer, String]`).
    start_project: str | None = None
    author_email: str | None = None
    author_name: str | None = None
    stats: Flag = True
    force: Flag = False

    @model_validator(mode="after")
    def _grape_rules(self) -> CommitCreate:
        """The checks Grape makes after types: blanks, conditional requirements, exclusions."""
        problems: list[str] = []
        if not self.branch:
            problems.append("branch is empty")
        if not self.actions:
            problems.append("actions is empty")
        for n, a in enumerate(self.actions):
            name = f"actions[{n}]"
            if not a.file_path:
                problems.append(f"{name}[file_path] is empty")
            if a.action == "move" and a.previous_path is None:
                problems.append(f"{name}[previous_path] is missing")
            # The spec requires content except for delete, chmod and move.
            if a.action in ("create", "update") and a.content is None:
                problems.append(f"{name}[content] is missing")
            if a.action == "chmod" and a.execute_filemode is None:
                problems.append(f"{name}[execute_filemode] is missing")
        if self.start_branch is not None and self.start_sha is not None:
            problems.append("start_branch, start_sha are mutually exclusive")
        if problems:
            raise GrapeMessage(", ".join(problems))
        return self


class CommitGet(Params):
    stats: Flag = True


class CommitSequence(Params):
    first_parent: Flag = False


class CommitRefList(PageParams):
    type: Literal["branch", "tag", "all"] = "all"


class CommitDiffList(PageParams):
    unidiff: Flag = False


class CommitCommentList(PageParams):
    pass


class CommitCommentCreate(Params):
    note: str
    path: str | None = None
    line: Int | None = None
    line_type: Literal["new", "old"] | None = None

    @model_validator(mode="after")
    def _line_with_path(self) -> CommitCommentCreate:
        """A path needs a line; its line_type defaults to `new` (Grape's `given :path`)."""
        if self.path is not None:
            if self.line is None:
                raise GrapeMessage("line is missing")
            if self.line_type is None:
                self.line_type = "new"
        return self


class CherryPick(Params):
    branch: str
    dry_run: Flag = False
    message: str | None = None

    @model_validator(mode="after")
    def _branch_given(self) -> CherryPick:
        if not self.branch:
            raise GrapeMessage("branch is empty")
        return self


class Revert(Params):
    branch: str
    dry_run: Flag = False

    @model_validator(mode="after")
    def _branch_given(self) -> Revert:
        if not self.branch:
            raise GrapeMessage("branch is empty")
        return self
