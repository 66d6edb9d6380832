"""Instance-wide settings changed at run time (GitLab's application settings): one row,
values kept as JSON over the defaults in services/instance_settings."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, utcnow


class ApplicationSetting(Timestamps, Base):
    __tablename__ = "application_settings"

    id: Mapped[int] = mapped_column(primary_key=True)
    values: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class Term(Base):
    """One version of the terms of service: saving new `terms` adds a version, and users who
    accepted an earlier one must accept again while `enforce_terms` is on."""

    __tablename__ = "application_setting_terms"

    id: Mapped[int] = mapped_column(primary_key=True)
    terms: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PlanLimits(Base):
    """Limits per plan (GitLab's plan_limits; one plan, `default`, here): values kept as JSON
    over the defaults in services/plan_limits."""

    __tablename__ = "plan_limits"

    id: Mapped[int] = mapped_column(primary_key=True)
    plan_name: Mapped[str] = mapped_column(String(64), unique=True)
    values: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
