"""What a running kiln holds: settings, the database engine and session factory.

Built once by create_app (or by the CLI) and passed down; nothing else is global."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from kiln.auth.credentials import JobTokenResolver
from kiln.config import Settings
from kiln.db import make_engine, make_sessionmaker


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    job_token_resolver: JobTokenResolver | None = None
    ready: bool = field(default=False)
    # Built on first request from the route table; the routes don't change while running.
    openapi_doc: dict[str, Any] | None = None

    @classmethod
    def build(cls, settings: Settings) -> Runtime:
        settings.ensure_dirs()
        engine = make_engine(settings)
        return cls(settings=settings, engine=engine, sessions=make_sessionmaker(engine))
