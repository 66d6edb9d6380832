"""The durable job queue: work that runs after the request that caused it, written in the
same transaction as that request's changes so that none is lost on a crash."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kiln.models.base import Base, Timestamps, utcnow

QUEUED = "queued"
RUNNING = "running"
DONE = "done"
DEAD = "dead"  # gave up after max_attempts


class Job(Timestamps, Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_state_run_at", "state", "run_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(16), default=QUEUED)
    run_at: Mapped[datetime] = mapped_column(default=utcnow)
    attempts: Mapped[int] = mapped_column(default=0)
    max_attempts: Mapped[int] = mapped_column(default=10)
    # A claimed job belongs to its worker until locked_until; after that (a crashed worker)
    # another worker may claim it again.
    locked_by: Mapped[str | None] = mapped_column(String(128))
    locked_until: Mapped[datetime | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    finished_at: Mapped[datetime | None]
