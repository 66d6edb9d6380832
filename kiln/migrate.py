"""Run Alembic migrations programmatically: `kiln serve` migrates at start."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.set_main_option(
        "file_template", "%%(year)d-%%(month).2d-%%(day).2d-%%(hour).2d%%(minute).2d_%%(slug)s"
    )
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)


def check(engine: Engine) -> None:
    """Raise if the models and the migrated schema differ (alembic check)."""
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.check(cfg)


def revision(engine: Engine, message: str) -> None:
    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.revision(cfg, message=message, autogenerate=True)
