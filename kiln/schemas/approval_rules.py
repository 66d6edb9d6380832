"""Request contracts for approval rules, a project's and a merge request's (GitLab's
ee/lib/api/project_approval_rules.rb and merge_request_approval_rules.rb parameters)."""

from __future__ import annotations

from typing import Literal

from kiln.schemas._types import Flag, Int, IntArray, PageParams, Params, StrArray


class ProjectRules(PageParams):
    id: str


class ProjectRule(Params):
    id: str
    approval_rule_id: Int


class _RuleFields(Params):
    name: str
    approvals_required: Int
    user_ids: IntArray | None = None
    group_ids: IntArray | None = None
    usernames: StrArray | None = None


class ProjectRuleCreate(_RuleFields):
    id: str
    protected_branch_ids: IntArray | None = None
    rule_type: Literal["regular", "any_approver"] | None = None
    applies_to_all_protected_branches: Flag | None = None


class ProjectRuleUpdate(ProjectRuleCreate):
    """The spec sends name and approvals_required with every PUT; python-gitlab's `rule.save()`
    sends only what changed, as GitLab's PUT allows: a field left out keeps its value."""

    approval_rule_id: Int
    name: str | None = None  # type: ignore[assignment]
    approvals_required: Int | None = None  # type: ignore[assignment]


class MergeRequestRules(PageParams):
    id: str
    merge_request_iid: Int


class MergeRequestRule(Params):
    id: str
    merge_request_iid: Int
    approval_rule_id: Int


class MergeRequestRuleCreate(_RuleFields):
    id: str
    merge_request_iid: Int
    approval_project_rule_id: Int | None = None


class MergeRequestRuleUpdate(_RuleFields):
    """As ProjectRuleUpdate: a field left out keeps its value."""

    id: str
    merge_request_iid: Int
    approval_rule_id: Int
    name: str | None = None  # type: ignore[assignment]
    approvals_required: Int | None = None  # type: ignore[assignment]
