"""Request contracts for merge request approvals (GitLab's ee/lib/api/merge_request_approvals.rb
and project_approvals.rb parameters)."""

from __future__ import annotations

from kiln.schemas._types import Flag, Int, IntArray, Params


class ProjectApprovals(Params):
    id: str


class ApprovalConfigUpdate(Params):
    id: str
    approvals_before_merge: Int | None = None
    reset_approvals_on_push: Flag | None = None
    disable_overriding_approvers_per_merge_request: Flag | None = None
    merge_requests_author_approval: Flag | None = None
    merge_requests_disable_committers_approval: Flag | None = None
    require_password_to_approve: Flag | None = None


class ApproversUpdate(Params):
    """Both arrays required (an empty one clears): the deprecated approvers endpoints."""

    id: str
    approver_ids: IntArray
    approver_group_ids: IntArray


class MergeRequestApprovers(ApproversUpdate):
    merge_request_iid: Int


class MergeRequestApprovals(Params):
    id: str
    merge_request_iid: Int


class MergeRequestApprovalsUpdate(MergeRequestApprovals):
    approvals_required: Int


class Approve(MergeRequestApprovals):
    sha: str | None = None
    approval_password: str | None = None
