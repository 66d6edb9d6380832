"""All tables, imported here so metadata is complete for Alembic and tests."""

from kiln.models.badges import Badge
from kiln.models.base import Base, IdHighWater
from kiln.models.features import FeatureGate
from kiln.models.jobs import Job
from kiln.models.keys import Email, GPGKey, GPGKeySubkey, SSHKey
from kiln.models.namespaces import GroupCustomAttribute, Member, Namespace
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
from kiln.models.settings import ApplicationSetting, PlanLimits, Term
from kiln.models.tokens import OAuthAccessToken, PersonalAccessToken, WebSession
from kiln.models.users import Identity, User, UserCustomAttribute

__all__ = [
    "ApplicationSetting",
    "Badge",
    "Base",
    "CommitNote",
    "Email",
    "Event",
    "FeatureGate",
    "GPGKey",
    "GPGKeySubkey",
    "GroupCustomAttribute",
    "IdHighWater",
    "Identity",
    "Job",
    "Member",
    "Namespace",
    "OAuthAccessToken",
    "PersonalAccessToken",
    "PlanLimits",
    "Project",
    "ProjectCustomAttribute",
    "ProjectGroupLink",
    "ProjectStar",
    "ProjectStatistics",
    "ProjectTopic",
    "ProjectVisibilityCount",
    "ProtectedBranch",
    "SSHKey",
    "Term",
    "Upload",
    "User",
    "UserCustomAttribute",
    "WebSession",
]
