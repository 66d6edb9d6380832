"""GitLab Flavored Markdown references in issue, epic and note texts: `#12` and
`group/project#12` (issues), `!3` (merge requests), `~bug`, `~"multi word"`, `~12` (labels),
`%v1.0`, `%"multi word"`, `%3` (milestones), `&5` and `group&5` (epics), `@user`, `@group`,
`@all`.

`scan` finds them in a text's plain runs (never in code, never in a link's text): mentions
read it. `References` is the context `markdown.render_gfm` links them with, for one viewer in
one place (a project, or a group for epics): it looks up what the references name, in one
statement per kind for however many texts (`prefetch` a page's texts first), and links only
what exists and the viewer may see; a confidential issue or a merge request hidden from the
viewer stays text."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from typing import Any
from urllib.parse import quote

from sqlalchemy import Date, Select, bindparam, exists, false, func, null, or_, select
from sqlalchemy.orm import Session

from kiln import markdown, policy
from kiln.auth.actor import Actor
from kiln.models import (
    Epic,
    Issue,
    IssueAssignee,
    Label,
    MergeRequest,
    Milestone,
    Namespace,
    Project,
    User,
)
from kiln.models.issues import CLOSED
from kiln.models.namespaces import KIND_GROUP
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import access
from kiln.queries.projects import NamespaceRow, ProjectRow
from kiln.queries.reads import row_columns, run

ISSUE, MERGE_REQUEST, LABEL, MILESTONE, EPIC, USER = (
    "issue",
    "merge_request",
    "label",
    "milestone",
    "epic",
    "user",
)

# What a merge request's link adds to its text in the states GitLab marks (IssuableStateFilter).
_MERGE_REQUEST_STATES = {"closed": " (closed)", "merged": " (merged)"}

_NAME = r"[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_PATH = rf"{_NAME}(?:/{_NAME})+"
# One pattern for every kind; a reference starts where no word, path or other reference
# goes on (so `a@b.c`, `x/y#1` inside a URL and `&&5` are not references). An unquoted
# name runs over no character a reference may start after, and a quoted one stops at the
# next quote, so no text makes the search quadratic (`(%(%(%…`, `(~"(~"…`); names with
# other characters are written quoted (`%"Sprint: 3"`, `~"needs review"`).
_REFERENCE = re.compile(
    rf"""(?<![\w/.&~%@!#\-])(?:
        (?:(?P<project>{_PATH}))?(?P<sigil>[#!])(?P<number>\d+)\b
      | (?:(?P<epic_group>{_NAME}(?:/{_NAME})*))?&(?P<epic>\d+)\b
      | ~(?:(?P<label_id>\d+)(?![\w.\-])|"(?P<label_quoted>[^"\n]{{1,255}})"|(?P<label>[A-Za-z0-9_\-?.&]*[A-Za-z0-9_\-&]))
      | %(?:(?P<milestone_iid>\d+)(?![\w.\-])|"(?P<milestone_quoted>[^"\n]{{1,255}})"|(?P<milestone>[\w.\-]*\w))
      | @(?P<user>{_NAME}(?:/{_NAME})*)
    )""",
    re.VERBOSE,
)


@dataclass(slots=True, frozen=True)
class Reference:
    """One reference in a run of text: its kind, what it names (`key`), where it stands."""

    kind: str
    key: Any
    start: int
    end: int
    text: str


def find(segment: str) -> list[Reference]:
    """The references in one run of plain text, in order."""
    out = []
    for m in _REFERENCE.finditer(segment):
        g = m.groupdict()
        if g["sigil"]:
            kind = ISSUE if g["sigil"] == "#" else MERGE_REQUEST
            key: Any = ((g["project"] or "").lower(), int(g["number"]))
        elif g["epic"]:
            kind, key = EPIC, ((g["epic_group"] or "").lower(), int(g["epic"]))
        elif g["label_id"]:
            kind, key = LABEL, int(g["label_id"])
        elif g["label_quoted"] or g["label"]:
            kind, key = LABEL, g["label_quoted"] or g["label"]
        elif g["milestone_iid"]:
            kind, key = MILESTONE, int(g["milestone_iid"])
        elif g["milestone_quoted"] or g["milestone"]:
            kind, key = MILESTONE, g["milestone_quoted"] or g["milestone"]
        else:
            kind, key = USER, g["user"].lower()
        out.append(Reference(kind, key, m.start(), m.end(), m.group(0)))
    return out


def scan(text: str | None) -> list[Reference]:
    """Every reference in `text` outside code and links, in order."""
    return [ref for segment in markdown.plain_segments(text) for ref in find(segment)]


@dataclass(slots=True, frozen=True)
class _Project:
    id: int
    path: str  # full path, as written in links
    subject: ProjectSubject


class References:
    """What references name, for one viewer reading texts of one project (or group): the
    context `markdown.render_gfm` links with. Lookups are remembered, so a page's texts
    (`prefetch`) cost one statement per kind in all."""

    def __init__(
        self,
        db: Session,
        actor: Actor | None,
        base_url: str,
        *,
        project: ProjectSubject | None = None,
        group: GroupSubject | None = None,
    ) -> None:
        self.db = db
        self.actor = actor
        self.base = base_url.rstrip("/")
        self.project: _Project | None = None
        # Where `&5` and labels and milestones of groups are looked up: the text's group, or
        # its project's group, and that group's ancestors.
        self.group: Any = group.group if group is not None else None
        if project is not None:
            ns = project.namespace
            self.project = _Project(project.project.id, f"{ns.full_path}/{project.project.path}", project)
            if ns.is_group:
                self.group = ns
        self.group_ids: list[int] = list(self.group.ancestor_ids) if self.group is not None else []
        self._found: dict[str, dict[Any, Any]] = {
            kind: {} for kind in (ISSUE, MERGE_REQUEST, LABEL, MILESTONE, EPIC, USER, "project")
        }

    # -- the Linker markdown.render_gfm asks -------------------------------------------------

    def links(self, segments: Sequence[str]) -> list[list[tuple[int, int, str]]]:
        found = [find(segment) for segment in segments]
        self._resolve([ref for refs in found for ref in refs])
        out = []
        for refs in found:
            spans = []
            for ref in refs:
                anchor = self._anchor(ref)
                if anchor is not None:
                    spans.append((ref.start, ref.end, anchor))
            out.append(spans)
        return out

    def prefetch(self, texts: Iterable[str | None]) -> None:
        """Look up what all `texts` reference at once (a list's page before it renders)."""
        self._resolve([ref for text in texts for ref in scan(text)])

    def hides_any(self, text: str | None) -> bool:
        """Whether `text` names an issue, merge request or epic the viewer may not read (or one
        that is gone): a system note about it is not shown to them (GitLab's
        cross_reference_not_visible_for?)."""
        refs = [ref for ref in scan(text) if ref.kind in (ISSUE, MERGE_REQUEST, EPIC)]
        self._resolve(refs)
        return any(self._found[ref.kind].get(ref.key) is None for ref in refs)

    def named(self, wanted: Iterable[tuple[str, Any]]) -> list[tuple[str, _Project, Any]]:
        """The issues and merge requests that (kind, key) pairs name and the viewer may read:
        kind, project, row (id, iid, project_id, ...), each once, in the order named."""
        refs = [Reference(kind, key, 0, 0, "") for kind, key in wanted if kind in (ISSUE, MERGE_REQUEST)]
        self._resolve(refs)
        out: list[tuple[str, _Project, Any]] = []
        seen: set[tuple[str, int]] = set()
        for ref in refs:
            found = self._found[ref.kind].get(ref.key)
            if found is not None and (ref.kind, found[1].id) not in seen:
                seen.add((ref.kind, found[1].id))
                out.append((ref.kind, found[0], found[1]))
        return out

    # -- lookups -------------------------------------------------------------------------------

    def _resolve(self, refs: list[Reference]) -> None:
        wanted: dict[str, set[Any]] = {}
        for ref in refs:
            if ref.key not in self._found[ref.kind]:
                wanted.setdefault(ref.kind, set()).add(ref.key)
        if not wanted:
            return
        paths = {path for kind in (ISSUE, MERGE_REQUEST) for path, _ in wanted.get(kind, ())}
        paths.discard("")
        if self.project is not None:
            paths.discard(self.project.path.lower())
        paths -= set(self._found["project"])
        if paths:
            self._projects(paths)
        if ISSUE in wanted:
            self._issues(wanted[ISSUE])
        if MERGE_REQUEST in wanted:
            self._merge_requests(wanted[MERGE_REQUEST])
        if LABEL in wanted:
            self._labels(wanted[LABEL])
        if MILESTONE in wanted:
            self._milestones(wanted[MILESTONE])
        if EPIC in wanted:
            self._epics(wanted[EPIC])
        if USER in wanted:
            self._users(wanted[USER])

    def _project_of(self, path: str) -> _Project | None:
        if self.project is not None and (not path or path == self.project.path.lower()):
            return self.project
        return self._found["project"].get(path) if path else None

    def _viewer(self) -> dict[str, Any]:
        return {"viewer_id": self.actor.id if self.actor is not None else 0, "today": date.today()}

    def _projects(self, paths: set[str]) -> None:
        split = [path.rpartition("/") for path in paths]
        params = {
            **self._viewer(),
            "namespaces": sorted({ns for ns, _, _ in split}),
            "names": sorted({name for _, _, name in split}),
        }
        for path in paths:
            self._found["project"][path] = None
        for row in run(self.db, _projects_statement(self.actor is not None), params):
            project, ns = ProjectRow(*row[:_P]), NamespaceRow._make(row[_P : _P + _N])
            path = f"{ns.full_path}/{project.path}"
            if path.lower() not in paths:
                continue
            subject = ProjectSubject(project=project, namespace=ns, level=row[_P + _N])
            if policy.may(self.actor, Action.READ_PROJECT, subject):
                self._found["project"][path.lower()] = _Project(project.id, path, subject)

    def _issues(self, keys: set[tuple[str, int]]) -> None:
        by_project: dict[int, _Project] = {}
        for path, iid in keys:
            self._found[ISSUE][(path, iid)] = None
            project = self._project_of(path)
            if project is not None and policy.may(self.actor, Action.READ_ISSUE, project.subject):
                by_project[project.id] = project
        if not by_project:
            return
        params = {
            **self._viewer(),
            "project_ids": sorted(by_project),
            "iids": sorted({iid for _, iid in keys}),
        }
        rows = {(row.project_id, row.iid): row for row in run(self.db, _issues_statement(), params)}
        for path, iid in keys:
            project = self._project_of(path)
            row = rows.get((project.id, iid)) if project is not None else None
            if row is None or project is None:
                continue
            assignees = [self.actor.id] if row.assigned and self.actor is not None else []
            if policy.may_read_issue(self.actor, project.subject, row.confidential, row.author_id, assignees):
                self._found[ISSUE][(path, iid)] = (project, row)

    def _merge_requests(self, keys: set[tuple[str, int]]) -> None:
        by_project: dict[int, _Project] = {}
        for path, iid in keys:
            self._found[MERGE_REQUEST][(path, iid)] = None
            project = self._project_of(path)
            if project is not None and policy.may(self.actor, Action.READ_MERGE_REQUEST, project.subject):
                by_project[project.id] = project
        if not by_project:
            return
        params = {"project_ids": sorted(by_project), "iids": sorted({iid for _, iid in keys})}
        rows = {(row.project_id, row.iid): row for row in run(self.db, _merge_requests_statement(), params)}
        for path, iid in keys:
            project = self._project_of(path)
            if project is None or project.id not in by_project:
                continue
            row = rows.get((project.id, iid))
            if row is not None:
                self._found[MERGE_REQUEST][(path, iid)] = (project, row)

    def _labels(self, keys: set[Any]) -> None:
        for key in keys:
            self._found[LABEL][key] = None
        if self.project is None and not self.group_ids:
            return
        params = {
            "project_id": self.project.id if self.project is not None else 0,
            "group_ids": self.group_ids,
            "titles": sorted(k for k in keys if isinstance(k, str)),
            "ids": sorted(k for k in keys if isinstance(k, int)),
        }
        # A project's own label wins over a group's of the same title.
        rows = sorted(run(self.db, _labels_statement(), params), key=lambda r: r.project_id is None)
        for row in reversed(rows):
            for key in (row.id, row.title):
                if key in keys:
                    self._found[LABEL][key] = row

    def _milestones(self, keys: set[Any]) -> None:
        for key in keys:
            self._found[MILESTONE][key] = None
        if self.project is None and not self.group_ids:
            return
        params = {
            "project_id": self.project.id if self.project is not None else 0,
            "group_ids": self.group_ids,
            "titles": sorted(k for k in keys if isinstance(k, str)),
            "iids": sorted(k for k in keys if isinstance(k, int)),
        }
        rows = sorted(run(self.db, _milestones_statement(), params), key=lambda r: r.project_id is None)
        for row in reversed(rows):
            if row.title in keys:
                self._found[MILESTONE][row.title] = row
            # `%3` is the iid of the project's milestone (of the group's, for a group's text).
            if row.iid in keys and (row.project_id is not None or self.project is None):
                self._found[MILESTONE][row.iid] = row

    def _epics(self, keys: set[tuple[str, int]]) -> None:
        for key in keys:
            self._found[EPIC][key] = None
        paths = sorted({path for path, _ in keys if path})
        if self.group is None and not paths:
            return
        params = {
            **self._viewer(),
            "group_id": self.group.id if self.group is not None else 0,
            "paths": paths,
            "iids": sorted({iid for _, iid in keys}),
        }
        for row in run(self.db, _epics_statement(self.actor is not None), params):
            ns = NamespaceRow._make(row[_E : _E + _N])
            here = self.group is not None and ns.id == self.group.id
            key = ("" if here else ns.full_path.lower(), row.iid)
            if key not in keys:
                key = (ns.full_path.lower(), row.iid)
                if key not in keys:
                    continue
            subject = GroupSubject(group=ns, level=row.level, related=bool(row.related))
            if policy.may_read_epic(self.actor, subject, row.confidential, row.author_id):
                self._found[EPIC][key] = (ns, row)

    def _users(self, names: set[str]) -> None:
        for name in names:
            self._found[USER][name] = None
        users = sorted(n for n in names if "/" not in n and n != "all")
        if users:
            for row in run(self.db, _users_statement(), {"names": users}):
                self._found[USER][row.username.lower()] = ("user", row)
        groups = sorted(n for n in names if self._found[USER][n] is None and n != "all")
        if groups:
            for row in run(
                self.db, _groups_statement(self.actor is not None), {**self._viewer(), "paths": groups}
            ):
                ns = NamespaceRow._make(row[:_N])
                subject = GroupSubject(group=ns, level=row.level, related=bool(row.related))
                if policy.may(self.actor, Action.READ_GROUP, subject):
                    self._found[USER][ns.full_path.lower()] = ("group", ns)
        if "all" in names and self.project is not None:
            self._found[USER]["all"] = ("all", self.project)

    # -- links ---------------------------------------------------------------------------------

    def _anchor(self, ref: Reference) -> str | None:
        found = self._found[ref.kind].get(ref.key)
        if found is None:
            return None
        base = self.base
        if ref.kind == ISSUE:
            project, row = found
            text = ref.text + (" (closed)" if row.state == CLOSED else "")
            return _a(
                f"{base}/{project.path}/-/issues/{row.iid}",
                text,
                "gfm gfm-issue",
                ISSUE,
                ref.text,
                title=row.title,
                project=project.id,
                **{"project-path": project.path, "issue": row.id, "iid": row.iid},
            )
        if ref.kind == MERGE_REQUEST:
            project, row = found
            return _a(
                f"{base}/{project.path}/-/merge_requests/{row.iid}",
                ref.text + _MERGE_REQUEST_STATES.get(row.state, ""),
                "gfm gfm-merge_request",
                MERGE_REQUEST,
                ref.text,
                title=row.title,
                project=project.id,
                **{"project-path": project.path, "merge-request": row.id, "iid": row.iid},
            )
        if ref.kind == LABEL:
            return _a(
                f"{self._issues_url()}?label_name={quote(found.title)}",
                found.title,
                "gfm gfm-label",
                LABEL,
                ref.text,
                title=found.description or None,
                label=found.id,
                project=self.project.id if self.project is not None else None,
            )
        if ref.kind == MILESTONE:
            owner = (
                self.project.path
                if found.project_id is not None and self.project is not None
                else f"groups/{self._group_path(found.group_id)}"
            )
            return _a(
                f"{base}/{owner}/-/milestones/{found.iid}",
                f"%{found.title}",
                "gfm gfm-milestone",
                MILESTONE,
                ref.text,
                title=found.title,
                milestone=found.id,
                project=self.project.id if self.project is not None else None,
            )
        if ref.kind == EPIC:
            ns, row = found
            return _a(
                f"{base}/groups/{ns.full_path}/-/epics/{row.iid}",
                ref.text + (" (closed)" if row.state == CLOSED else ""),
                "gfm gfm-epic",
                EPIC,
                ref.text,
                title=row.title,
                group=ns.id,
                epic=row.id,
                iid=row.iid,
            )
        what, row = found
        if what == "user":
            return _a(
                f"{base}/{row.username}", ref.text, "gfm gfm-project_member", USER, ref.text, user=row.id
            )
        if what == "group":
            return _a(
                f"{base}/{row.full_path}", ref.text, "gfm gfm-project_member", USER, ref.text, group=row.id
            )
        return _a(
            f"{base}/{row.path}",
            ref.text,
            "gfm gfm-project_member",
            USER,
            ref.text,
            title="All Project and Group Members",
            project=row.id,
        )

    def _issues_url(self) -> str:
        if self.project is not None:
            return f"{self.base}/{self.project.path}/-/issues"
        return f"{self.base}/groups/{self.group.full_path}/-/epics"

    def _group_path(self, group_id: int | None) -> str:
        # Group milestones and labels seen here belong to the text's group or an ancestor;
        # its path is the text's group's full path cut to that ancestor's depth.
        parts = self.group.full_path.split("/") if self.group is not None else []
        depth = self.group_ids.index(group_id) + 1 if group_id in self.group_ids else len(parts)
        return "/".join(parts[:depth])


def _a(
    href: str, text: str, classes: str, kind: str, original: str, *, title: str | None = None, **data: Any
) -> str:
    """An anchor with every value escaped (titles are user text)."""
    attributes = [f'href="{html.escape(href)}"', f'data-reference-type="{kind}"']
    attributes.append(f'data-original="{html.escape(original)}"')
    attributes.append('data-link="false"')
    attributes += [
        f'data-{name}="{html.escape(str(value))}"' for name, value in data.items() if value is not None
    ]
    if title:
        attributes.append(f'title="{html.escape(title)}"')
    attributes.append(f'class="{classes}"')
    return f"<a {' '.join(attributes)}>{html.escape(text, quote=False)}</a>"


# -- statements, built once ------------------------------------------------------------------

_PROJECTS, _NAMESPACES = Project.__table__, Namespace.__table__
_P, _N = len(_PROJECTS.c), len(_NAMESPACES.c)
_E = 7  # epic columns before the namespace's


def _today() -> Any:
    return bindparam("today", type_=Date())


@cache
def _projects_statement(signed_in: bool) -> Select[Any]:
    stmt = select(*row_columns(_PROJECTS), *row_columns(_NAMESPACES)).join_from(
        Project, Namespace, Namespace.id == Project.namespace_id
    )
    if signed_in:
        levels = access.project_levels(bindparam("viewer_id"), None, _today())
        stmt = stmt.add_columns(levels.c.level).outerjoin(levels, levels.c.project_id == Project.id)
    else:
        stmt = stmt.add_columns(null().label("level"))
    return stmt.where(
        func.lower(Namespace.full_path).in_(bindparam("namespaces", expanding=True)),
        func.lower(Project.path).in_(bindparam("names", expanding=True)),
    )


@cache
def _issues_statement() -> Select[Any]:
    assigned = exists().where(
        IssueAssignee.issue_id == Issue.id, IssueAssignee.user_id == bindparam("viewer_id")
    )
    return select(
        Issue.id,
        Issue.iid,
        Issue.project_id,
        Issue.title,
        Issue.state,
        Issue.confidential,
        Issue.author_id,
        assigned.label("assigned"),
    ).where(
        Issue.project_id.in_(bindparam("project_ids", expanding=True)),
        Issue.iid.in_(bindparam("iids", expanding=True)),
    )


@cache
def _merge_requests_statement() -> Select[Any]:
    return select(
        MergeRequest.id, MergeRequest.iid, MergeRequest.project_id, MergeRequest.title, MergeRequest.state
    ).where(
        MergeRequest.project_id.in_(bindparam("project_ids", expanding=True)),
        MergeRequest.iid.in_(bindparam("iids", expanding=True)),
    )


@cache
def _labels_statement() -> Select[Any]:
    return select(Label.id, Label.title, Label.description, Label.project_id, Label.group_id).where(
        or_(
            Label.project_id == bindparam("project_id"),
            Label.group_id.in_(bindparam("group_ids", expanding=True)),
        ),
        or_(
            Label.title.in_(bindparam("titles", expanding=True)),
            Label.id.in_(bindparam("ids", expanding=True)),
        ),
    )


@cache
def _milestones_statement() -> Select[Any]:
    return select(
        Milestone.id, Milestone.iid, Milestone.title, Milestone.project_id, Milestone.group_id
    ).where(
        or_(
            Milestone.project_id == bindparam("project_id"),
            Milestone.group_id.in_(bindparam("group_ids", expanding=True)),
        ),
        or_(
            Milestone.title.in_(bindparam("titles", expanding=True)),
            Milestone.iid.in_(bindparam("iids", expanding=True)),
        ),
    )


def _standing(signed_in: bool) -> list[Any]:
    """The viewer's level on the namespaces row and whether something inside relates them."""
    if not signed_in:
        return [null().label("level"), false().label("related")]
    viewer, today = bindparam("viewer_id"), _today()
    return [
        access.group_level_column(_NAMESPACES, viewer, today).label("level"),
        access.related_column(_NAMESPACES, viewer, today).label("related"),
    ]


@cache
def _epics_statement(signed_in: bool) -> Select[Any]:
    return (
        select(
            Epic.id,
            Epic.iid,
            Epic.title,
            Epic.state,
            Epic.confidential,
            Epic.author_id,
            Epic.group_id,
            *row_columns(_NAMESPACES),
            *_standing(signed_in),
        )
        .join_from(Epic, _NAMESPACES, _NAMESPACES.c.id == Epic.group_id)
        .where(
            or_(
                Epic.group_id == bindparam("group_id"),
                func.lower(_NAMESPACES.c.full_path).in_(bindparam("paths", expanding=True)),
            ),
            Epic.iid.in_(bindparam("iids", expanding=True)),
        )
    )


@cache
def _users_statement() -> Select[Any]:
    return select(User.id, User.username).where(
        func.lower(User.username).in_(bindparam("names", expanding=True))
    )


@cache
def _groups_statement(signed_in: bool) -> Select[Any]:
    return select(*row_columns(_NAMESPACES), *_standing(signed_in)).where(
        _NAMESPACES.c.kind == KIND_GROUP,
        func.lower(_NAMESPACES.c.full_path).in_(bindparam("paths", expanding=True)),
    )
