"""All tables, imported here so metadata is complete for Alembic and tests."""

from kiln.models.base import Base
from kiln.models.jobs import Job
from kiln.models.namespaces import Member, Namespace
from kiln.models.tokens import OAuthAccessToken, PersonalAccessToken, WebSession
from kiln.models.users import Identity, User, UserCustomAttribute

__all__ = [
    "Base",
    "Identity",
    "Job",
    "Member",
    "Namespace",
    "OAuthAccessToken",
    "PersonalAccessToken",
    "User",
    "UserCustomAttribute",
    "WebSession",
]
