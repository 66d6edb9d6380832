"""Request contracts for to-dos (GitLab's lib/api/todos.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Int, OptionalInt, PageParams, Params

# GitLab's to-do actions, by the names the API shows them under.
ActionName = Literal[
    "assigned",
    "mentioned",
    "build_failed",
    "marked",
    "approval_required",
    "unmergeable",
    "directly_addressed",
    "merge_train_removed",
    "review_requested",
    "member_access_requested",
    "review_submitted",
]
# What a to-do may be about (GitLab's Todo target types).
TargetType = Literal[
    "Issue",
    "MergeRequest",
    "Commit",
    "Epic",
    "DesignManagement::Design",
    "AlertManagement::Alert",
    "Project",
    "Namespace",
    "Vulnerability",
    "WikiPage::Meta",
]


class TodoList(PageParams):
    action: ActionName | None = None
    author_id: OptionalInt = None
    project_id: OptionalInt = None
    group_id: OptionalInt = None
    state: Literal["pending", "done"] | None = None
    type: TargetType | None = None


class TodoGet(Params):
    id: Int


class IssueTodo(Params):
    id: str
    issue_iid: Int


class MergeRequestTodo(Params):
    id: str
    merge_request_iid: Int
