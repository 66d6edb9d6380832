"""All tables, imported here so metadata is complete for Alembic and tests."""

from kiln.models.base import Base, IdHighWater
from kiln.models.jobs import Job
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
from kiln.models.settings import ApplicationSetting
from kiln.models.tokens import OAuthAccessToken, PersonalAccessToken, WebSession
from kiln.models.users import Identity, User, UserCustomAttribute

__all__ = [
    "ApplicationSetting",
    "Base",
    "CommitNote",
    "Event",
    "GroupCustomAttribute",
    "IdHighWater",
    "Identity",
    "Job",
    "Member",
    "Namespace",
    "OAuthAccessToken",
    "PersonalAccessToken",
    "Project",
    "ProjectCustomAttribute",
    "ProjectGroupLink",
    "ProjectStar",
    "ProjectStatistics",
    "ProjectTopic",
    "ProjectVisibilityCount",
    "ProtectedBranch",
    "Upload",
    "User",
    "UserCustomAttribute",
    "WebSession",
]
