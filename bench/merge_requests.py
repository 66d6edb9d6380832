"""Merge requests under load: a private project in the first of the viewer's groups holding
MERGE_REQUESTS merge requests (iids 1..N, inserted with Core executemany, the project's iid
counter set as the merge request writes keep it), one of which (iid 1) is real: its
repository, written with pygit2 where kiln keeps it, has a source branch that changes
FILES files (LINES changed lines each) over `main`, and its diff version is recorded as
kiln records one. Two kiln targets, each against its bare reference in the same run of
`python -m bench`:

- `kiln_mr_list`: `GET /projects/:id/merge_requests?state=opened&per_page=20`, a page of
  open merge requests as the ordinary bench user (a Developer of the project's group),
  against the bare row route (`bare`);
- `kiln_mr_changes`: `GET /projects/:id/merge_requests/1/changes`, the merge request with
  its FILES-file diff, against `bare_mr_diff`: the same diff (the version's base tree to its
  head tree, each file's patch text, paths, modes and flags) computed with pygit2 directly
  and rendered with orjson by the bare app."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pygit2
from sqlalchemy import create_engine, func, insert, select, update

from bench import issues as bench_issues
from bench.bare import MR_BASE_ENV, MR_HEAD_ENV, MR_REPO_ENV
from bench.load import Target
from kiln.git.layout import repository_path
from kiln.models import InternalId, Member, MergeRequest, MergeRequestDiff
from kiln.models.namespaces import PRIVATE

MERGE_REQUESTS = 10_000
FILES = 200
LINES = 10
PROJECT_PATH = "bench-merge-requests"
SOURCE_BRANCH = "big-change"
BATCH = 5000
PER_PAGE = 20

REFERENCE = {"kiln_mr_list": "bare", "kiln_mr_changes": "bare_mr_diff"}
AIMS = {"kiln_mr_list": 0.25, "kiln_mr_changes": 0.5}


@dataclass(frozen=True)
class MergeRequestsData:
    project_id: int
    repo_path: Path
    base: str
    head: str


def populate(url: str, data_dir: Path, viewer_id: int, total: int = MERGE_REQUESTS) -> MergeRequestsData:
    """The project, its repository with the big change, and `total` merge requests by the
    viewer (about 3 in 10 merged or closed; iid 1 the big change, open)."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            group_id = conn.execute(
                select(Member.namespace_id)
                .where(Member.user_id == viewer_id, Member.namespace_id.is_not(None))
                .order_by(Member.namespace_id)
                .limit(1)
            ).scalar_one()
            project_id = bench_issues.project(
                conn, int(group_id), viewer_id, PROJECT_PATH, PRIVATE, "benchmark fixture: merge requests"
            )
            path = repository_path(data_dir / "repositories", project_id)
            base, head = write_change(path)
            if not conn.execute(
                select(func.count()).where(MergeRequest.project_id == project_id)
            ).scalar_one():
                _merge_requests(conn, project_id, viewer_id, total, base, head)
            return MergeRequestsData(project_id, path, base, head)
    finally:
        engine.dispose()


def write_change(path: Path) -> tuple[str, str]:
    """`main` with FILES files, and SOURCE_BRANCH changing LINES lines of each: (base, head)."""
    if path.exists():
        repo = pygit2.Repository(str(path))
        return str(repo.references["refs/heads/main"].target), str(
            repo.references[f"refs/heads/{SOURCE_BRANCH}"].target
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    repo = pygit2.init_repository(str(path), bare=True, initial_head="refs/heads/main")
    draw = random.Random(7)
    sig = pygit2.Signature("Bench", "bench@example.com", int(datetime.now(UTC).timestamp()) - 60, 0)
    before: dict[str, list[str]] = {}
    index = pygit2.Index()
    for n in range(FILES):
        name = f"src/module_{n:03d}.py"
        lines = [
            f"def function_{n}_{k}(value):\n    return value * {draw.randrange(1000)}\n" for k in range(40)
        ]
        before[name] = lines
        index.add(
            pygit2.IndexEntry(name, repo.create_blob("".join(lines).encode()), pygit2.enums.FileMode.BLOB)
        )
    base = repo.create_commit("refs/heads/main", sig, sig, "Base", index.write_tree(repo), [])
    for name, lines in before.items():
        changed = list(lines)
        for k in draw.sample(range(len(changed)), LINES):
            changed[k] = changed[k].replace("return value", "return value + 1")
        index.add(
            pygit2.IndexEntry(name, repo.create_blob("".join(changed).encode()), pygit2.enums.FileMode.BLOB)
        )
    head = repo.create_commit(
        f"refs/heads/{SOURCE_BRANCH}", sig, sig, "Change every module", index.write_tree(repo), [base]
    )
    return str(base), str(head)


def _merge_requests(conn: Any, project_id: int, author_id: int, total: int, base: str, head: str) -> None:
    draw = random.Random(11)
    start = datetime.now(UTC) - timedelta(minutes=total)
    table = MergeRequest.__table__
    for first in range(1, total + 1, BATCH):
        rows = []
        for iid in range(first, min(total, first + BATCH - 1) + 1):
            when = start + timedelta(minutes=iid)
            state = "opened" if iid == 1 or draw.random() >= 0.3 else draw.choice(("merged", "closed"))
            rows.append(
                {
                    "iid": iid,
                    "project_id": project_id,
                    "source_project_id": project_id,
                    "source_branch": SOURCE_BRANCH if iid == 1 else f"feature-{iid}",
                    "target_branch": "main",
                    "author_id": author_id,
                    "title": "Change every module" if iid == 1 else f"Feature {iid}",
                    "description": f"Merge request {iid} of the benchmark.",
                    "state": state,
                    "draft": False,
                    "merge_status": "can_be_merged",
                    "head_sha": head if iid == 1 else None,
                    "merge_params": {},
                    "squash": False,
                    "allow_collaboration": False,
                    "merge_when_pipeline_succeeds": False,
                    "time_estimate": 0,
                    "total_time_spent": 0,
                    "upvotes": 0,
                    "downvotes": 0,
                    "user_notes_count": 0,
                    "lock_version": 0,
                    "created_at": when,
                    "updated_at": when,
                }
            )
        conn.execute(insert(table), rows)
    first_id = conn.execute(
        select(MergeRequest.id).where(MergeRequest.project_id == project_id, MergeRequest.iid == 1)
    ).scalar_one()
    conn.execute(
        insert(MergeRequestDiff.__table__),
        {
            "merge_request_id": first_id,
            "head_commit_sha": head,
            "base_commit_sha": base,
            "start_commit_sha": base,
            "state": "collected",
            "commits_count": 1,
            "files_count": FILES,
            "created_at": datetime.now(UTC),
        },
    )
    diff_id = conn.execute(
        select(MergeRequestDiff.id).where(MergeRequestDiff.merge_request_id == first_id)
    ).scalar_one()
    conn.execute(update(table).where(table.c.id == first_id).values(latest_diff_id=diff_id))
    conn.execute(
        insert(InternalId.__table__), {"usage": "merge_requests", "scope_id": project_id, "last_value": total}
    )


def bare_env(data: MergeRequestsData) -> dict[str, str]:
    return {MR_REPO_ENV: str(data.repo_path), MR_BASE_ENV: data.base, MR_HEAD_ENV: data.head}


def targets(api: str, bare: str, member: dict[str, str], data: MergeRequestsData) -> list[Target]:
    listing = f"/projects/{data.project_id}/merge_requests?state=opened&per_page={PER_PAGE}"
    changes = f"/projects/{data.project_id}/merge_requests/1/changes"
    return [
        Target("kiln_mr_list", f"kiln GET {listing} (member)", f"{api}{listing}", member),
        Target("bare_mr_diff", f"bare GET /mr-diff (pygit2, {FILES} files)", f"{bare}/mr-diff"),
        Target("kiln_mr_changes", f"kiln GET {changes} (member)", f"{api}{changes}", member),
    ]


def answer_ok(key: str, response: httpx.Response) -> bool:
    """A full page of distinct open merge requests; or FILES changed files, each with a patch."""
    body = response.json()
    if key == "kiln_mr_list":
        return (
            isinstance(body, list)
            and len(body) == PER_PAGE
            and len({mr["id"] for mr in body}) == PER_PAGE
            and all(mr["state"] == "opened" for mr in body)
        )
    files = body.get("changes") if key == "kiln_mr_changes" else body.get("diffs")
    return isinstance(files, list) and len(files) == FILES and all(f.get("diff") for f in files)
