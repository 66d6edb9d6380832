"""Readiness checks for load balancers: report, never raise."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.orm import Session


def database_check(db: Session) -> dict[str, Any]:
    try:
        db.execute(text("SELECT 1"))
    except Exception as exc:  # a down database is the answer, not an error
        return {"status": "failed", "message": type(exc).__name__}
    return {"status": "ok"}


def readiness(db: Session, *, serving: bool) -> tuple[bool, dict[str, Any]]:
    check = database_check(db)
    ok = serving and check["status"] == "ok"
    status = "ok" if ok else "failed"
    return ok, {"status": status, "master_check": [{"status": status}], "db_check": [check]}
