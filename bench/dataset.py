"""The benchmark's database: kiln's schema and root via `kiln migrate`, then bulk users."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import create_engine, func, insert, select

from kiln.models.namespaces import KIND_USER, Namespace
from kiln.models.users import User

USERNAME_PREFIX = "bench-user-"
BATCH = 2000


def migrate(kiln_bin: Path, env: Mapping[str, str], log: Path) -> None:
    """Schema and root exactly as an operator gets them."""
    with log.open("ab") as out:
        result = subprocess.run(
            [str(kiln_bin), "migrate"], env=dict(env), stdout=out, stderr=out, check=False
        )
    if result.returncode != 0:
        raise RuntimeError(f"kiln migrate failed (exit {result.returncode}); see {log}")


def populate(url: str, total_users: int) -> int:
    """Insert users (with their namespaces) until there are `total_users`; returns the count.

    Core executemany in batches: the ORM would spend minutes on 10,000 rows."""
    engine = create_engine(url)
    users = User.__table__
    namespaces = Namespace.__table__
    try:
        with engine.begin() as conn:
            existing = int(conn.execute(select(func.count()).select_from(users)).scalar_one())
            missing = max(0, total_users - existing)
            now = datetime.now(UTC)
            for start in range(0, missing, BATCH):
                numbers = range(start + 1, min(missing, start + BATCH) + 1)
                rows = [
                    {
                        "username": f"{USERNAME_PREFIX}{n:05d}",
                        "email": f"{USERNAME_PREFIX}{n:05d}@example.com",
                        "name": f"Bench User {n}",
                        "confirmed_at": now,
                        "bio": "benchmark fixture",
                        "organization": "kiln",
                    }
                    for n in numbers
                ]
                conn.execute(insert(users), rows)
                wanted = [r["username"] for r in rows]
                created = conn.execute(
                    select(users.c.id, users.c.username, users.c.name).where(users.c.username.in_(wanted))
                ).all()
                conn.execute(
                    insert(namespaces),
                    [
                        {"kind": KIND_USER, "name": name, "path": username, "owner_id": user_id}
                        for user_id, username, name in created
                    ],
                )
            return int(conn.execute(select(func.count()).select_from(users)).scalar_one())
    finally:
        engine.dispose()


def middle_user_id(url: str) -> int:
    """A user in the middle of the table, for the bare route (no cache-friendly first row)."""
    engine = create_engine(url)
    users = User.__table__
    try:
        with engine.connect() as conn:
            ids = conn.execute(select(users.c.id).order_by(users.c.id)).scalars().all()
    finally:
        engine.dispose()
    return int(ids[len(ids) // 2])
