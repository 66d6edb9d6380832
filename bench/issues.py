"""Issue lists under load: a project with ISSUES issues (iids 1..ISSUES) and LABELS labels,
and a few dozen issues in other projects, inserted with Core executemany (the project's
iid counter set as the issue writes keep it), then two kiln targets against the bare row
route in the same run of `python -m bench`:

- `kiln_issues_labels`: `GET /projects/:id/issues?labels=bug&state=opened&per_page=20`,
  a page of open issues carrying `bug` (about one issue in eight) in the big project;
- `kiln_issues_search`: `GET /issues?scope=all&search=<word>&per_page=20`, every issue the
  viewer may read whose title or description holds the word (about one in fifty).

Both as the ordinary bench user: not an administrator, a Developer of the big project's
group (so a member of it and of that group's other projects), who also sees the issues of
public projects and not those of private projects outside their groups."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import create_engine, func, insert, select

from bench.load import Target
from kiln.models import InternalId, Issue, Label, LabelLink, Member, Namespace, Project, ProjectStatistics
from kiln.models.namespaces import PRIVATE, PUBLIC

ISSUES = 100_000
LABELS = 20
BUG = "bug"
# The word searched: in about one title in fifty (WORDS[0] below is drawn that often).
WORD = "scheduler"
PROJECT_PATH = "bench-issues"
BATCH = 5000
# Issues in other projects: (visibility, reached by the viewer through their group, count).
OTHER_PROJECTS = ((PUBLIC, False, 50), (PRIVATE, True, 50), (PRIVATE, False, 50))
PER_PAGE = 20

REFERENCE = {"kiln_issues_labels": "bare", "kiln_issues_search": "bare"}
AIMS = {"kiln_issues_labels": 0.25, "kiln_issues_search": 0.25}

_NOUNS = (
    "parser", "cache", "login", "upload", "pipeline", "runner", "webhook", "mirror", "token",
    "avatar", "search", "export", "import", "badge", "branch", "commit", "label", "board",
)  # fmt: skip
_VERBS = ("fails", "crashes", "hangs", "leaks", "is slow", "breaks", "times out", "misbehaves")


@dataclass(frozen=True)
class IssuesData:
    project_id: int
    issues: int


def populate(url: str, viewer_id: int, total: int = ISSUES) -> IssuesData:
    """The big project in the first of the viewer's groups with `total` issues (by the
    viewer) and LABELS labels, and the other projects' issues; run again on a filled
    database, it adds nothing."""
    engine = create_engine(url)
    creator_id = viewer_id
    try:
        with engine.begin() as conn:
            group_ids = list(
                conn.execute(
                    select(Member.namespace_id)
                    .where(Member.user_id == viewer_id, Member.namespace_id.is_not(None))
                    .order_by(Member.namespace_id)
                ).scalars()
            )
            if len(group_ids) < 2:
                raise RuntimeError("the viewer belongs to no two groups; run dataset.user_token first")
            project_id = project(conn, group_ids[0], creator_id, PROJECT_PATH, PRIVATE)
            if conn.execute(select(func.count()).where(Issue.project_id == project_id)).scalar_one():
                return IssuesData(project_id, total)
            labels = _labels(conn, project_id)
            _issues(conn, project_id, creator_id, total, labels, seed=1)
            for n, (visibility, reached, count) in enumerate(OTHER_PROJECTS):
                group = group_ids[1] if reached else _outside_group(conn, group_ids)
                other = project(conn, group, creator_id, f"{PROJECT_PATH}-{n}", visibility)
                _issues(conn, other, creator_id, count, [], seed=100 + n)
            return IssuesData(project_id, total)
    finally:
        engine.dispose()


def project(
    conn: Any,
    namespace_id: int,
    creator_id: int,
    path: str,
    visibility: str,
    description: str = "benchmark fixture: issues",
) -> int:
    """The fixture project `path` in the namespace (made, with its statistics row, unless it
    is there already): its id."""
    found = conn.execute(
        select(Project.id).where(Project.namespace_id == namespace_id, Project.path == path)
    ).scalar()
    if found is not None:
        return int(found)
    conn.execute(
        insert(Project.__table__),
        {
            "namespace_id": namespace_id,
            "creator_id": creator_id,
            "name": path,
            "path": path,
            "description": description,
            "visibility": visibility,
            "default_branch": "main",
        },
    )
    project_id = int(
        conn.execute(
            select(Project.id).where(Project.namespace_id == namespace_id, Project.path == path)
        ).scalar_one()
    )
    conn.execute(insert(ProjectStatistics.__table__), {"project_id": project_id})
    return project_id


def _outside_group(conn: Any, group_ids: list[int]) -> int:
    """A bench group the viewer is no member of."""
    return int(
        conn.execute(
            select(Namespace.id)
            .where(Namespace.kind == "group", Namespace.id.not_in(group_ids))
            .order_by(Namespace.id.desc())
            .limit(1)
        ).scalar_one()
    )


def _labels(conn: Any, project_id: int) -> list[int]:
    titles = [BUG] + [f"area-{n:02d}" for n in range(1, LABELS)]
    conn.execute(
        insert(Label.__table__),
        [{"project_id": project_id, "title": t, "color": "#6699cc"} for t in titles],
    )
    rows = conn.execute(select(Label.id, Label.title).where(Label.project_id == project_id)).all()
    by_title = {title: label_id for label_id, title in rows}
    return [by_title[t] for t in titles]


def _issues(conn: Any, project_id: int, author_id: int, total: int, labels: list[int], *, seed: int) -> None:
    """`total` issues, iids 1..total, oldest first; each with up to three labels (`bug`,
    the first, on about one in eight); the project's iid counter set to `total`."""
    draw = random.Random(seed)
    start = datetime.now(UTC) - timedelta(minutes=total)
    issues = Issue.__table__
    for first in range(1, total + 1, BATCH):
        rows = []
        for iid in range(first, min(total, first + BATCH - 1) + 1):
            word = WORD if draw.random() < 0.02 else draw.choice(_NOUNS)
            when = start + timedelta(minutes=iid)
            rows.append(
                {
                    "iid": iid,
                    "project_id": project_id,
                    "author_id": author_id,
                    "title": f"The {word} {draw.choice(_VERBS)} ({iid})",
                    "description": f"Seen on {draw.choice(_NOUNS)} after {draw.choice(_NOUNS)}.",
                    "state": "closed" if draw.random() < 0.3 else "opened",
                    "created_at": when,
                    "updated_at": when,
                }
            )
        conn.execute(insert(issues), rows)
        if not labels:
            continue
        ids = conn.execute(
            select(Issue.id, Issue.iid).where(
                Issue.project_id == project_id, Issue.iid.between(first, first + BATCH - 1)
            )
        ).all()
        links = []
        for issue_id, _iid in ids:
            chosen = set()
            if draw.random() < 0.125:
                chosen.add(labels[0])
            for _ in range(draw.randrange(3)):
                chosen.add(draw.choice(labels[1:]))
            links += [{"label_id": label, "target_type": "Issue", "target_id": issue_id} for label in chosen]
        if links:
            conn.execute(insert(LabelLink.__table__), links)
    conn.execute(
        insert(InternalId.__table__), {"usage": "issues", "scope_id": project_id, "last_value": total}
    )


def targets(api: str, member: dict[str, str], data: IssuesData) -> list[Target]:
    listing = f"/projects/{data.project_id}/issues?labels={BUG}&state=opened&per_page={PER_PAGE}"
    search = f"/issues?scope=all&search={WORD}&per_page={PER_PAGE}"
    return [
        Target("kiln_issues_labels", f"kiln GET {listing} (member)", f"{api}{listing}", member),
        Target("kiln_issues_search", f"kiln GET {search} (member)", f"{api}{search}", member),
    ]


def answer_ok(key: str, response: httpx.Response) -> bool:
    """A full page of distinct open `bug` issues of the big project; or of issues holding
    the word, newest first."""
    body = response.json()
    if not isinstance(body, list) or len(body) != PER_PAGE:
        return False
    if len({issue["id"] for issue in body}) != PER_PAGE:
        return False
    if key == "kiln_issues_labels":
        return all(issue["state"] == "opened" and BUG in issue["labels"] for issue in body)
    return all(WORD in (issue["title"] + (issue["description"] or "")).lower() for issue in body)
