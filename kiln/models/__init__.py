"""All tables, imported here so metadata is complete for Alembic and tests."""

from kiln.models.badges import Badge
from kiln.models.base import Base, IdHighWater
from kiln.models.boards import Board, BoardLabel, BoardList
from kiln.models.ci import (
    CiJob,
    GroupVariable,
    InstanceVariable,
    JobArtifact,
    Pipeline,
    PipelineSchedule,
    PipelineScheduleVariable,
    PipelineTrigger,
    PipelineVariable,
    ProjectVariable,
    Runner,
    RunnerNamespace,
    RunnerProject,
    RunnerTag,
)
from kiln.models.epics import Epic, EpicIssue
from kiln.models.features import FeatureGate
from kiln.models.issues import InternalId, Issue, IssueAssignee, IssueLink, Timelog
from kiln.models.jobs import Job
from kiln.models.keys import Email, GPGKey, GPGKeySubkey, SSHKey
from kiln.models.labels import Label, LabelLink, LabelPriority
from kiln.models.merge_requests import (
    Approval,
    ApprovalRule,
    ApprovalRuleGroup,
    ApprovalRuleProtectedBranch,
    ApprovalRuleUser,
    MergeRequest,
    MergeRequestAssignee,
    MergeRequestDiff,
    MergeRequestDiffCommit,
    MergeRequestReviewer,
)
from kiln.models.milestones import Milestone
from kiln.models.namespaces import GroupCustomAttribute, Member, Namespace
from kiln.models.notes import AwardEmoji, Note
from kiln.models.projects import (
    Project,
    ProjectCustomAttribute,
    ProjectGroupLink,
    ProjectStar,
    ProjectStatistics,
    ProjectTopic,
    ProjectVisibilityCount,
    Upload,
)
from kiln.models.repository import CommitNote, Event, ProtectedBranch
from kiln.models.resource_events import (
    ResourceLabelEvent,
    ResourceMilestoneEvent,
    ResourceStateEvent,
    ResourceWeightEvent,
)
from kiln.models.settings import ApplicationSetting, PlanLimits, Term
from kiln.models.todos import Subscription, Todo
from kiln.models.tokens import OAuthAccessToken, PersonalAccessToken, WebSession
from kiln.models.users import Identity, User, UserCustomAttribute

__all__ = [
    "ApplicationSetting",
    "Approval",
    "ApprovalRule",
    "ApprovalRuleGroup",
    "ApprovalRuleProtectedBranch",
    "ApprovalRuleUser",
    "AwardEmoji",
    "Badge",
    "Base",
    "Board",
    "BoardLabel",
    "BoardList",
    "CiJob",
    "CommitNote",
    "Email",
    "Epic",
    "EpicIssue",
    "Event",
    "FeatureGate",
    "GPGKey",
    "GPGKeySubkey",
    "GroupCustomAttribute",
    "GroupVariable",
    "IdHighWater",
    "Identity",
    "InstanceVariable",
    "InternalId",
    "Issue",
    "IssueAssignee",
    "IssueLink",
    "Job",
    "JobArtifact",
    "Label",
    "LabelLink",
    "LabelPriority",
    "Member",
    "MergeRequest",
    "MergeRequestAssignee",
    "MergeRequestDiff",
    "MergeRequestDiffCommit",
    "MergeRequestReviewer",
    "Milestone",
    "Namespace",
    "Note",
    "OAuthAccessToken",
    "PersonalAccessToken",
    "Pipeline",
    "PipelineSchedule",
    "PipelineScheduleVariable",
    "PipelineTrigger",
    "PipelineVariable",
    "PlanLimits",
    "Project",
    "ProjectCustomAttribute",
    "ProjectGroupLink",
    "ProjectStar",
    "ProjectStatistics",
    "ProjectTopic",
    "ProjectVariable",
    "ProjectVisibilityCount",
    "ProtectedBranch",
    "ResourceLabelEvent",
    "ResourceMilestoneEvent",
    "ResourceStateEvent",
    "ResourceWeightEvent",
    "Runner",
    "RunnerNamespace",
    "RunnerProject",
    "RunnerTag",
    "SSHKey",
    "Subscription",
    "Term",
    "Timelog",
    "Todo",
    "Upload",
    "User",
    "UserCustomAttribute",
    "WebSession",
]
