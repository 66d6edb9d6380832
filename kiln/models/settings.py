"""Instance-wide settings changed at run time (GitLab's application settings): one row,
values kept as JSON over the defaults in services/instance_settings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps


class ApplicationSetting(Timestamps, Base):
    __tablename__ = "application_settings"

    id: Mapped[int] = mapped_column(primary_key=True)
    values: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
