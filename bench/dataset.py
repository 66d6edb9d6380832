"""The benchmark's data: kiln's schema and root via `kiln migrate`, then bulk users,
groups and projects, a personal access token for one ordinary user, and one project's
repository holding a file (written with pygit2 where kiln keeps repositories).

Everything is inserted with Core executemany in batches (the ORM would spend minutes on
10,000 rows) and topped up: running a step again on a filled database adds only what is
missing. Columns left out get the models' Python-side defaults, which Core applies too."""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pygit2
from sqlalchemy import (
    Connection,
    FromClause,
    String,
    cast,
    create_engine,
    func,
    insert,
    literal,
    select,
    update,
)

from kiln.auth.tokens import digest
from kiln.db import make_engine_unpooled
from kiln.git.layout import repository_path
from kiln.models.namespaces import (
    DEVELOPER,
    INTERNAL,
    KIND_GROUP,
    KIND_USER,
    OWNER,
    PRIVATE,
    PUBLIC,
    Member,
    Namespace,
)
from kiln.models.projects import Project, ProjectStatistics
from kiln.models.tokens import PersonalAccessToken
from kiln.models.users import User

USERNAME_PREFIX = "bench-user-"
GROUP_PREFIX = "bench-group-"
PROJECT_PREFIX = "bench-project-"
TOKEN_NAME = "kiln-bench"
BATCH = 2000
GROUPS = 50
# One project in GROUP_SHARE lives in a group, the rest in users' own namespaces.
GROUP_SHARE = 4
# The ordinary user's memberships: Developer of this many groups (so some private group
# projects are visible to them through membership, as for a real user).
USER_GROUPS = 3
# The file the files API reads: 10 KB, added by the first of REPO_COMMITS commits on main
# (each later one changes another file, so the file's last commit is not the tip).
REPO_FILE = "data/blob-10k.txt"
REPO_FILE_BYTES = 10 * 1024
REPO_COMMITS = 20


def migrate(kiln_bin: Path, env: Mapping[str, str], log: Path) -> None:
    """Schema and root exactly as an operator gets them."""
    with log.open("ab") as out:
        result = subprocess.run(
            [str(kiln_bin), "migrate"], env=dict(env), stdout=out, stderr=out, check=False
        )
    if result.returncode != 0:
        raise RuntimeError(f"kiln migrate failed (exit {result.returncode}); see {log}")


def populate(url: str, total_users: int) -> int:
    """Insert users (with their namespaces) until there are `total_users`; returns the count."""
    engine = create_engine(url)
    users = User.__table__
    namespaces = Namespace.__table__
    try:
        with engine.begin() as conn:
            existing = _count(conn, users)
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
            _place_top_level(conn)
            return _count(conn, users)
    finally:
        engine.dispose()


def populate_projects(url: str, total_projects: int) -> int:
    """Insert projects (each with its statistics row) until there are `total_projects`.

    Spread over the bench users' namespaces and GROUPS public groups (one in GROUP_SHARE);
    about 8 in 10 are public, 1 internal, 1 private. Returns the project count."""
    engine = create_engine(url)
    projects = Project.__table__
    statistics = ProjectStatistics.__table__
    try:
        with engine.begin() as conn:
            groups = _groups(conn)
            owned = conn.execute(
                select(Namespace.id, Namespace.owner_id)
                .where(Namespace.kind == KIND_USER, Namespace.path.startswith(USERNAME_PREFIX))
                .order_by(Namespace.id)
            ).all()
            if not owned:
                raise RuntimeError("no bench users to own projects; populate users first")
            existing = _count(conn, projects)
            missing = max(0, total_projects - existing)
            for start in range(0, missing, BATCH):
                rows = []
                for n in range(existing + start + 1, existing + min(missing, start + BATCH) + 1):
                    if n % GROUP_SHARE == 0:
                        namespace_id, creator_id = groups[(n // GROUP_SHARE) % len(groups)]
                    else:
                        namespace_id, creator_id = owned[n % len(owned)]
                    rows.append(
                        {
                            "namespace_id": namespace_id,
                            "creator_id": creator_id,
                            "name": f"Bench Project {n}",
                            "path": f"{PROJECT_PREFIX}{n:05d}",
                            "description": "benchmark fixture",
                            "visibility": _visibility(n),
                            "default_branch": "main",
                        }
                    )
                conn.execute(insert(projects), rows)
                created = conn.execute(
                    select(projects.c.id).where(projects.c.path.in_([r["path"] for r in rows]))
                ).scalars()
                conn.execute(insert(statistics), [{"project_id": project_id} for project_id in created])
            return _count(conn, projects)
    finally:
        engine.dispose()


def _visibility(n: int) -> str:
    """Seeded by the number, so a rerun draws the same and every group gets a mix."""
    draw = random.Random(n).random()
    return PRIVATE if draw < 0.1 else INTERNAL if draw < 0.2 else PUBLIC


def _groups(conn: Connection) -> list[tuple[int, int]]:
    """(namespace id, owner's user id) of the bench groups, created (public, each owned by a
    bench user through an Owner membership) until there are GROUPS."""
    found = conn.execute(
        select(Namespace.id, Namespace.creator_id)
        .where(Namespace.kind == KIND_GROUP, Namespace.path.startswith(GROUP_PREFIX))
        .order_by(Namespace.id)
    ).all()
    if len(found) < GROUPS:
        owners = (
            conn.execute(
                select(User.id)
                .where(User.username.startswith(USERNAME_PREFIX))
                .order_by(User.id)
                .limit(GROUPS)
            )
            .scalars()
            .all()
        )
        if not owners:
            raise RuntimeError("no bench users to own groups; populate users first")
        rows = [
            {
                "kind": KIND_GROUP,
                "name": f"Bench Group {n}",
                "path": f"{GROUP_PREFIX}{n:03d}",
                "visibility": PUBLIC,
                "creator_id": owners[n % len(owners)],
            }
            for n in range(len(found) + 1, GROUPS + 1)
        ]
        conn.execute(insert(Namespace.__table__), rows)
        made = conn.execute(
            select(Namespace.id, Namespace.creator_id).where(Namespace.path.in_([r["path"] for r in rows]))
        ).all()
        conn.execute(
            insert(Member.__table__),
            [
                {"namespace_id": ns_id, "user_id": owner, "access_level": OWNER, "created_by_id": owner}
                for ns_id, owner in made
            ],
        )
        _place_top_level(conn)
        found = conn.execute(
            select(Namespace.id, Namespace.creator_id)
            .where(Namespace.kind == KIND_GROUP, Namespace.path.startswith(GROUP_PREFIX))
            .order_by(Namespace.id)
        ).all()
    return [(int(ns_id), int(owner)) for ns_id, owner in found]


def _place_top_level(conn: Connection) -> None:
    """Fill the derived columns of top-level namespaces inserted without them, as
    services.namespaces.place does: full path and name are their own, traversal is "<id>/"."""
    ns = Namespace.__table__
    conn.execute(
        update(ns)
        .where(ns.c.parent_id.is_(None), ns.c.traversal == "")
        .values(full_path=ns.c.path, full_name=ns.c.name, traversal=cast(ns.c.id, String) + literal("/"))
    )


def user_token(url: str, user_id: int, secret: str) -> None:
    """A personal access token (scope api) for an ordinary user, and that user's Developer
    membership of the first USER_GROUPS bench groups; nothing is added twice."""
    engine = create_engine(url)
    tokens = PersonalAccessToken.__table__
    members = Member.__table__
    try:
        with engine.begin() as conn:
            hashed = digest(secret)
            if conn.execute(select(tokens.c.id).where(tokens.c.digest == hashed)).first() is None:
                conn.execute(
                    insert(tokens),
                    {"user_id": user_id, "name": TOKEN_NAME, "digest": hashed, "scopes": ["api"]},
                )
            group_ids = [ns_id for ns_id, _owner in _groups(conn)[:USER_GROUPS]]
            joined = set(
                conn.execute(
                    select(members.c.namespace_id).where(
                        members.c.user_id == user_id, members.c.namespace_id.in_(group_ids)
                    )
                ).scalars()
            )
            rows = [
                {"namespace_id": g, "user_id": user_id, "access_level": DEVELOPER, "created_by_id": user_id}
                for g in group_ids
                if g not in joined
            ]
            if rows:
                conn.execute(insert(members), rows)
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


def analyze(url: str) -> None:
    """On PostgreSQL, gather the planner's statistics of the bulk-inserted tables now, as
    autovacuum does within a minute or so of such a load: measured before it has, the
    statements run on plans for empty tables (8.9 ms instead of 1.2 for a page's views), and
    whether it has yet depends on when each target happens to run. SQLite: nothing (kiln does
    not ask SQLite to analyze either)."""
    if not url.startswith("postgresql"):
        return
    engine = make_engine_unpooled(url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("ANALYZE")
    finally:
        engine.dispose()


def middle_public_project_id(url: str) -> int:
    """A public project in the middle of the table: every viewer may read it."""
    engine = create_engine(url)
    projects = Project.__table__
    try:
        with engine.connect() as conn:
            ids = (
                conn.execute(
                    select(projects.c.id).where(projects.c.visibility == PUBLIC).order_by(projects.c.id)
                )
                .scalars()
                .all()
            )
    finally:
        engine.dispose()
    if not ids:
        raise RuntimeError("no public project to read")
    return int(ids[len(ids) // 2])


def _count(conn: Connection, table: FromClause) -> int:
    return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def repository(data_dir: Path, project_id: int) -> bytes:
    """The project's repository, where kiln looks for it: REPO_COMMITS commits on main, the
    first adding REPO_FILE. Returns the file's content."""
    return write_history(
        repository_path(data_dir / "repositories", project_id), REPO_COMMITS, REPO_FILE_BYTES
    )


def write_history(path: Path, commits: int, size: int) -> bytes:
    """`commits` commits on main of the bare repository at `path` (created if missing; an
    existing main is built upon): the first adds REPO_FILE (`size` bytes), each one changes
    log.txt, so the file's last commit lies `commits` - 1 commits behind the tip. Returns the
    file's content."""
    if path.exists():
        repo = pygit2.Repository(str(path))
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        repo = pygit2.init_repository(str(path), bare=True, initial_head="refs/heads/main")
    line = b"the quick brown fox jumps over the lazy dog\n"
    content = (line * (size // len(line) + 1))[:size]
    blob = repo.create_blob(content)
    main = repo.references.get("refs/heads/main")
    old = main.target if main is not None else None
    parents: list[pygit2.Oid] = [] if old is None else [old]
    tree = None if old is None else repo[old].peel(pygit2.Commit).tree
    when = int(time.time()) - commits
    for n in range(commits):
        index = pygit2.Index()
        if tree is not None:
            index.read_tree(tree)
        if n == 0:
            index.add(pygit2.IndexEntry(REPO_FILE, blob, pygit2.enums.FileMode.BLOB))
        index.add(
            pygit2.IndexEntry("log.txt", repo.create_blob(f"{n}\n".encode()), pygit2.enums.FileMode.BLOB)
        )
        tree_id = index.write_tree(repo)
        signature = pygit2.Signature("Bench", "bench@example.com", when + n, 0)
        parents = [repo.create_commit(None, signature, signature, f"Commit {n}\n", tree_id, parents)]
        tree = repo[tree_id].peel(pygit2.Tree)
    # Only if main is still where it was (an empty old value: that main does not exist yet).
    subprocess.run(
        ["git", "update-ref", "refs/heads/main", str(parents[0]), "" if old is None else str(old)],
        cwd=path,
        check=True,
    )
    return content
