"""The references: bare Litestar routes doing the least work kiln's routes could do.

- `GET /users/{id}` reads one user row (SQLAlchemy Core) and renders it with orjson: the
  ceiling for kiln's database-backed routes. The database is BENCH_DATABASE_URL (the same
  file or PostgreSQL server kiln uses), through kiln's own engine settings (pool, prepared
  statements on PostgreSQL) and reading as kiln reads (`kiln.db.read_bind`: no transaction
  around a read on PostgreSQL), so both run their database the same way.
- `GET /blob` resolves `main` in the repository at BENCH_REPO_PATH, finds BENCH_REPO_FILE
  and base64s the blob with pygit2: the ceiling for the files API.
- `GET /mr-diff` diffs BENCH_MR_BASE's tree to BENCH_MR_HEAD's in the repository at
  BENCH_MR_REPO_PATH with pygit2 (renames found, each file's patch text, paths, modes and
  flags): the ceiling for a merge request's changes.

Served by uvicorn exactly like `kiln serve` (uvloop, httptools, one process)."""

from __future__ import annotations

import base64
import hashlib
import os
import warnings
from typing import Any

import orjson
import pygit2
from litestar import Litestar, Response, get
from litestar.datastructures import State
from sqlalchemy import Engine, MetaData, Table, select
from sqlalchemy.exc import SAWarning

from kiln.config import Settings
from kiln.db import make_engine, read_bind

DATABASE_URL_ENV = "BENCH_DATABASE_URL"
REPO_ENV = "BENCH_REPO_PATH"
FILE_ENV = "BENCH_REPO_FILE"
# The merge request whose changes /mr-diff computes (set by bench/merge_requests.py).
MR_REPO_ENV, MR_BASE_ENV, MR_HEAD_ENV = "BENCH_MR_REPO_PATH", "BENCH_MR_BASE", "BENCH_MR_HEAD"
NOT_FOUND = b'{"message":"404 Not Found"}'


@get("/users/{user_id:int}")
async def read_user(user_id: int, state: State) -> Response[bytes]:
    # Blocking call on the event loop, as kiln's handlers do: same execution model.
    engine: Engine = state.engine
    users: Table = state.users
    names: tuple[str, ...] = state.names
    with engine.connect() as conn:
        row = conn.execute(select(users).where(users.c.id == user_id)).first()
    if row is None:
        return Response(NOT_FOUND, status_code=404, media_type="application/json")
    return Response(orjson.dumps(dict(zip(names, row, strict=True))), media_type="application/json")


@get("/blob")
async def read_blob(state: State) -> Response[bytes]:
    """The files API's work without kiln: resolve main, find the path, base64 the blob."""
    repo: pygit2.Repository = state.repo
    path: str = state.file
    commit = repo.revparse_single("refs/heads/main").peel(pygit2.Commit)
    entry = commit.tree[path]
    data = repo[entry.id].data
    body = {
        "file_name": entry.name,
        "file_path": path,
        "size": len(data),
        "encoding": "base64",
        "content_sha256": hashlib.sha256(data).hexdigest(),
        "ref": "main",
        "blob_id": str(entry.id),
        "commit_id": str(commit.id),
        "content": base64.b64encode(data).decode(),
    }
    return Response(orjson.dumps(body), media_type="application/json")


@get("/mr-diff")
async def read_mr_diff(state: State) -> Response[bytes]:
    """A merge request's changes without kiln: the two trees' diff, patch by patch."""
    repo: pygit2.Repository = state.mr_repo
    base = repo[state.mr_base].peel(pygit2.Commit).tree
    head = repo[state.mr_head].peel(pygit2.Commit).tree
    diff = base.diff_to_tree(head, context_lines=3)
    diff.find_similar()
    files = []
    for patch in diff:
        delta = patch.delta
        text = patch.data.decode("utf-8", "replace")
        files.append(
            {
                "old_path": delta.old_file.path,
                "new_path": delta.new_file.path,
                "a_mode": f"{delta.old_file.mode:o}",
                "b_mode": f"{delta.new_file.mode:o}",
                "new_file": delta.status == pygit2.enums.DeltaStatus.ADDED,
                "renamed_file": delta.status == pygit2.enums.DeltaStatus.RENAMED,
                "deleted_file": delta.status == pygit2.enums.DeltaStatus.DELETED,
                "diff": text[text.find("@@") :] if "@@" in text else "",
            }
        )
    return Response(orjson.dumps({"diffs": files}), media_type="application/json")


def create_app() -> Litestar:
    """uvicorn factory: reflect `users` once so each request only runs the select; keep the
    repository open. Either half may be left out (no database, no repository)."""
    state: dict[str, Any] = {}
    handlers: list[Any] = []
    url = os.environ.get(DATABASE_URL_ENV)
    if url:
        # Read as kiln reads (read_bind: no transaction around a read on PostgreSQL).
        engine = read_bind(make_engine(Settings(database_url=url)))
        with warnings.catch_warnings():
            # Expression indexes (lower(username)) cannot be reflected; the select does not need them.
            warnings.simplefilter("ignore", SAWarning)
            users = Table("users", MetaData(), autoload_with=engine)
        # Plain str keys: orjson refuses the str subclass SQLAlchemy names columns with.
        state.update(engine=engine, users=users, names=tuple(str(column.name) for column in users.columns))
        handlers.append(read_user)
    repo_path = os.environ.get(REPO_ENV)
    if repo_path:
        state.update(repo=pygit2.Repository(repo_path), file=os.environ[FILE_ENV])
        handlers.append(read_blob)

    mr_repo = os.environ.get(MR_REPO_ENV)
    if mr_repo:
        state.update(
            mr_repo=pygit2.Repository(mr_repo),
            mr_base=os.environ[MR_BASE_ENV],
            mr_head=os.environ[MR_HEAD_ENV],
        )
        handlers.append(read_mr_diff)

    async def on_shutdown() -> None:
        if "engine" in state:
            state["engine"].dispose()

    return Litestar(
        route_handlers=handlers,
        state=State(state),
        on_shutdown=[on_shutdown],
        openapi_config=None,
        logging_config=None,
        debug=False,
    )
