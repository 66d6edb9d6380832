"""Merge requests and what hangs directly off them: assignees, reviewers, diff versions (one per
push to the source branch, with the commits it held), approval rules (a project's and a merge
request's own) and approvals. Labels, notes, award emoji, subscriptions, todos, time logs and
resource events are shared with issues and epics, keyed by ("MergeRequest", id)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, contribution, never_reuse_ids, utcnow
from kiln.models.issues import TimeTracked
from kiln.models.notes import Discussed

OPENED, CLOSED, LOCKED, MERGED = "opened", "closed", "locked", "merged"
STATES = (OPENED, CLOSED, LOCKED, MERGED)

# merge_status as GitLab keeps it: `unchecked` until the job queue has tried the merge in
# memory after a change to either branch; `checking` while it runs.
UNCHECKED, CHECKING, CAN_BE_MERGED, CANNOT_BE_MERGED, CANNOT_BE_MERGED_RECHECK = (
    "unchecked",
    "checking",
    "can_be_merged",
    "cannot_be_merged",
    "cannot_be_merged_recheck",
)

MERGE_METHODS = ("merge", "rebase_merge", "ff")

# A diff version's state as GitLab names it once its commits and files are recorded.
COLLECTED, EMPTY, OVERFLOW = "collected", "empty", "overflow"

# Approval rule types (GitLab's rule_type).
REGULAR, ANY_APPROVER, CODE_OWNER, REPORT_APPROVER = (
    "regular",
    "any_approver",
    "code_owner",
    "report_approver",
)
RULE_TYPES = (REGULAR, ANY_APPROVER, CODE_OWNER, REPORT_APPROVER)

# A title that marks a draft, as GitLab reads it: `Draft:`, `[Draft]`, `(Draft)` or `Draft - `
# at the start (any case), and the older `WIP:` / `[WIP]` spellings.
_DRAFT = re.compile(r"^\s*(?:\[draft\]|\(draft\)|draft:|draft\s-\s|\[wip\]|wip:)", re.I)


def draft_title(title: str) -> bool:
    return _DRAFT.match(title) is not None


class MergeRequest(TimeTracked, Discussed, Timestamps, Base):
    __tablename__ = "merge_requests"
    __table_args__ = (
        UniqueConstraint("project_id", "iid"),
        # The lists' default order per state, and the other orders a list walks.
        Index("ix_merge_requests_project_state_created", "project_id", "state", "created_at", "id"),
        Index("ix_merge_requests_project_created", "project_id", "created_at", "id"),
        Index("ix_merge_requests_project_updated", "project_id", "updated_at", "id"),
        Index("ix_merge_requests_author_created", "author_id", "created_at", "id"),
        # A push to a branch finds the open merge requests it is the source or target of.
        Index("ix_merge_requests_source", "source_project_id", "source_branch"),
        Index("ix_merge_requests_target", "project_id", "target_branch"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    iid: Mapped[int]
    # The target project: the spec's project_id and target_project_id.
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    # The fork it comes from, or the target project itself; null once the fork is deleted.
    source_project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id", ondelete="SET NULL"))
    source_branch: Mapped[str] = mapped_column(String(255))
    target_branch: Mapped[str] = mapped_column(String(255))
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), info=contribution()
    )
    title: Mapped[str] = mapped_column(String(255))
    description: Mapped[str | None] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), default=OPENED)
    # From the title (`Draft:`, `[Draft]`, `(Draft)`, `WIP:`, …), kept with every title change.
    draft: Mapped[bool] = mapped_column(default=False)
    milestone_id: Mapped[int | None] = mapped_column(
        ForeignKey("milestones.id", ondelete="SET NULL"), index=True
    )
    merge_status: Mapped[str] = mapped_column(String(32), default=UNCHECKED)
    merge_error: Mapped[str | None] = mapped_column(Text)
    # The source branch's head when the latest version was recorded (the API's `sha`).
    head_sha: Mapped[str | None] = mapped_column(String(64))
    latest_diff_id: Mapped[int | None] = mapped_column(BigInteger)
    # Set when merged: who, when, and the commits the merge made.
    merged_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    merged_at: Mapped[datetime | None]
    merge_commit_sha: Mapped[str | None] = mapped_column(String(64))
    squash_commit_sha: Mapped[str | None] = mapped_column(String(64))
    closed_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    closed_at: Mapped[datetime | None]
    # Merge when the head pipeline succeeds: who set it and with what (sha, squash, removal,
    # commit messages), as GitLab's merge_user and merge_params.
    merge_when_pipeline_succeeds: Mapped[bool] = mapped_column(default=False)
    merge_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    merge_params: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The MR's own choice (GitLab's force_remove_source_branch, the API's remove_source_branch).
    force_remove_source_branch: Mapped[bool | None]
    squash: Mapped[bool] = mapped_column(default=False)
    allow_collaboration: Mapped[bool] = mapped_column(default=False)
    discussion_locked: Mapped[bool | None]
    approvals_before_merge: Mapped[int | None]
    # Bumped by every merge, rebase and state change, so two racing ones can't both win.
    lock_version: Mapped[int] = mapped_column(default=0)


class MergeRequestAssignee(Base):
    __tablename__ = "merge_request_assignees"

    merge_request_id: Mapped[int] = mapped_column(
        ForeignKey("merge_requests.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MergeRequestReviewer(Base):
    __tablename__ = "merge_request_reviewers"

    merge_request_id: Mapped[int] = mapped_column(
        ForeignKey("merge_requests.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    # unreviewed, reviewed, requested_changes, approved, unapproved, review_started
    state: Mapped[str] = mapped_column(String(32), default="unreviewed")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MergeRequestDiff(Base):
    """One version of a merge request: its source head, the target commit it was compared to
    and their merge base, recorded at creation and after each push to the source branch. The
    head is kept reachable (`refs/keep-around/<sha>`) so old versions stay readable after a
    force-push."""

    __tablename__ = "merge_request_diffs"
    __table_args__ = (Index("ix_merge_request_diffs_mr_id", "merge_request_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merge_request_id: Mapped[int] = mapped_column(ForeignKey("merge_requests.id", ondelete="CASCADE"))
    head_commit_sha: Mapped[str] = mapped_column(String(64))
    base_commit_sha: Mapped[str | None] = mapped_column(String(64))
    start_commit_sha: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default=COLLECTED)
    commits_count: Mapped[int] = mapped_column(default=0)
    files_count: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MergeRequestDiffCommit(Base):
    """A commit of a version, newest first (`relative_order` 0), as GitLab lists them."""

    __tablename__ = "merge_request_diff_commits"

    merge_request_diff_id: Mapped[int] = mapped_column(
        ForeignKey("merge_request_diffs.id", ondelete="CASCADE"), primary_key=True
    )
    relative_order: Mapped[int] = mapped_column(primary_key=True)
    sha: Mapped[str] = mapped_column(String(64), index=True)
    message: Mapped[str] = mapped_column(Text, default="")
    author_name: Mapped[str] = mapped_column(Text, default="")
    author_email: Mapped[str] = mapped_column(Text, default="")
    authored_date: Mapped[datetime]
    committer_name: Mapped[str] = mapped_column(Text, default="")
    committer_email: Mapped[str] = mapped_column(Text, default="")
    committed_date: Mapped[datetime]


class ApprovalRule(Timestamps, Base):
    """An approval rule: a project's (merge_request_id null) or a merge request's own (copied
    from a project rule, `source_rule_id`, or made for it alone)."""

    __tablename__ = "approval_rules"
    __table_args__ = (
        Index("ix_approval_rules_project_mr", "project_id", "merge_request_id", "id"),
        Index("ix_approval_rules_merge_request_id", "merge_request_id", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    merge_request_id: Mapped[int | None] = mapped_column(ForeignKey("merge_requests.id", ondelete="CASCADE"))
    source_rule_id: Mapped[int | None] = mapped_column(
        ForeignKey("approval_rules.id", ondelete="SET NULL"), index=True
    )
    name: Mapped[str] = mapped_column(String(255))
    rule_type: Mapped[str] = mapped_column(String(32), default=REGULAR)
    approvals_required: Mapped[int] = mapped_column(default=0)
    applies_to_all_protected_branches: Mapped[bool] = mapped_column(default=False)


class ApprovalRuleUser(Base):
    __tablename__ = "approval_rule_users"

    rule_id: Mapped[int] = mapped_column(
        ForeignKey("approval_rules.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class ApprovalRuleGroup(Base):
    __tablename__ = "approval_rule_groups"

    rule_id: Mapped[int] = mapped_column(
        ForeignKey("approval_rules.id", ondelete="CASCADE"), primary_key=True
    )
    group_id: Mapped[int] = mapped_column(
        ForeignKey("namespaces.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class ApprovalRuleProtectedBranch(Base):
    __tablename__ = "approval_rule_protected_branches"

    rule_id: Mapped[int] = mapped_column(
        ForeignKey("approval_rules.id", ondelete="CASCADE"), primary_key=True
    )
    protected_branch_id: Mapped[int] = mapped_column(
        ForeignKey("protected_branches.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class Approval(Base):
    """A user's approval of a merge request; removed by unapprove and, with the project's
    reset_approvals_on_push, by a push to the source branch."""

    __tablename__ = "approvals"
    __table_args__ = (UniqueConstraint("merge_request_id", "user_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    merge_request_id: Mapped[int] = mapped_column(ForeignKey("merge_requests.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


# Clients hold merge request ids (hooks, pipelines' merge_request): never handed out twice.
never_reuse_ids(MergeRequest)
never_reuse_ids(ApprovalRule)
