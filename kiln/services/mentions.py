"""Mentions: `@username`, `@group` and `@all` in an issue's, epic's or note's text give a
to-do (`mentioned`, or `directly_addressed` when the text starts with the mention) to the
users they name, as GitLab does:

- only mentions in the text's plain runs count (never in code; kiln.references finds them);
- a group mention names the group's members (its own and its ancestors'), if the author may
  see the group and it has not turned mentions off; `@all` names the project's members, and
  only when the author is one of them; either expansion stops at MEMBERS_LIMIT users;
- only users who may read the target get one: members of a private project, anyone for a
  public one, and for a confidential issue (or an internal note) those who see it;
- never the author, never a blocked user, and an edit (`previous_text`) mentions again only
  whom the text did not mention before.

Writes call `record` in their transaction."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from kiln import policy, references
from kiln.auth.actor import Actor
from kiln.models import Epic, Issue, IssueAssignee, Namespace, Note, User
from kiln.models.namespaces import KIND_GROUP
from kiln.models.notes import EPIC, ISSUE
from kiln.models.todos import DIRECTLY_ADDRESSED, MENTIONED
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import access
from kiln.queries import members as member_finder
from kiln.queries import projects as project_finder
from kiln.queries.reads import run
from kiln.queries.users import rows_by_ids
from kiln.services import todos

# How many users one `@group` or `@all` reaches at most.
MEMBERS_LIMIT = 100

_ALL = "all"
# Mentions at the very start of a text (before anything else is said) address their users.
_LEADING = re.compile(r"\A {0,3}((?:@[A-Za-z0-9_][A-Za-z0-9_./\-]*[\s,:;]*)+)")


def usernames(text: str | None) -> list[str]:
    """The names `text` mentions outside code (users, group paths, `all`), each once, in
    order, as written."""
    seen: dict[str, str] = {}
    for ref in references.scan(text):
        if ref.kind == references.USER:
            seen.setdefault(ref.key, ref.text[1:])
    return list(seen.values())


def _addressed(text: str) -> set[str]:
    """The names mentioned before anything else is said (lower case)."""
    found = _LEADING.match(text)
    if found is None:
        return set()
    return {ref.key for ref in references.find(found.group(1)) if ref.kind == references.USER}


def record(
    db: Session,
    actor: Actor | None,
    text: str | None,
    *,
    target_type: str,
    target_id: int,
    project_id: int | None = None,
    group_id: int | None = None,
    previous_text: str | None = None,
    note_id: int | None = None,
) -> list[int]:
    """To-dos for the users newly mentioned in `text` who may read the target; their ids."""
    before = {name.lower() for name in usernames(previous_text)}
    names = [name.lower() for name in usernames(text) if name.lower() not in before]
    if not names:
        return []
    target = _Target.load(db, target_type, target_id, project_id, group_id, note_id)
    if target is None:
        return []
    addressed = _addressed(text or "")
    reached: dict[int, bool] = {}  # user id -> directly addressed

    def reach(user_ids: list[int], name: str) -> None:
        for user_id in user_ids:
            reached[user_id] = reached.get(user_id, False) or name in addressed

    users = {
        row.username.lower(): row.id
        for row in db.execute(
            select(User.id, User.username).where(
                func.lower(User.username).in_([n for n in names if n != _ALL])
            )
        )
    }
    for name in names:
        if name in users:
            reach([users[name]], name)
    group_names = [n for n in names if n not in users and n != _ALL]
    if group_names:
        for group in db.scalars(
            select(Namespace).where(
                Namespace.kind == KIND_GROUP, func.lower(Namespace.full_path).in_(group_names)
            )
        ):
            if group.mentions_disabled or not _sees_group(db, actor, group):
                continue
            reach(_group_members(db, group), group.full_path.lower())
    if _ALL in names and target.project is not None and _is_member(db, target.project, actor):
        reach(_project_members(db, target.project), _ALL)
    if actor is not None:
        reached.pop(actor.id, None)
    if not reached:
        return []
    out = []
    for user_id in target.readers(db, list(reached)):
        todos.add(
            db,
            user_id=user_id,
            author_id=actor.id if actor is not None else None,
            action=DIRECTLY_ADDRESSED if reached[user_id] else MENTIONED,
            target_type=target_type,
            target_id=target_id,
            project_id=project_id,
            group_id=group_id,
            body=text,
            note_id=note_id,
        )
        out.append(user_id)
    return out


def _sees_group(db: Session, actor: Actor | None, group: Namespace) -> bool:
    level, related = (None, False) if actor is None else access.group_standing(db, actor.id, group.id)
    return policy.may(actor, Action.READ_GROUP, GroupSubject(group=group, level=level, related=related))


def _is_member(db: Session, project: ProjectSubject, actor: Actor | None) -> bool:
    """`@all` is the project members' to use (GitLab ignores it from anyone else)."""
    if actor is None:
        return False
    levels = _members(db, _project_params(project), on_project=True, user_ids=[actor.id])
    return policy.may_mention_all(actor, replace(project, level=levels.get(actor.id)))


def _members(
    db: Session, params: dict[str, Any], *, on_project: bool, user_ids: list[int] | None = None
) -> dict[int, int]:
    """user id -> effective level on the project (or group), of `user_ids` or of the first
    MEMBERS_LIMIT members."""
    stmt = member_finder.listing(on_project=on_project, deep=True, user_ids=user_ids)
    if user_ids is None:
        stmt = stmt.limit(MEMBERS_LIMIT)
    rows = run(db, stmt, {**params, **member_finder.listing_params(user_ids=user_ids)})
    return {row.user_id: row.level for row in rows}


def _group_params(group: Any) -> dict[str, Any]:
    return member_finder.source_params(project_id=None, namespace_id=group.id, chain=group.ancestor_ids[:-1])


def _project_params(project: ProjectSubject) -> dict[str, Any]:
    ns = project.namespace
    return member_finder.source_params(
        project_id=project.project.id, namespace_id=None, chain=ns.ancestor_ids if ns.is_group else []
    )


def _group_members(db: Session, group: Namespace) -> list[int]:
    return list(_members(db, _group_params(group), on_project=False))


def _project_members(db: Session, project: ProjectSubject) -> list[int]:
    return list(_members(db, _project_params(project), on_project=True))


class _Target:
    """What a mention's to-do points at, and who may read it."""

    def __init__(
        self,
        *,
        project: ProjectSubject | None,
        group: GroupSubject | None,
        confidential: bool,
        author_id: int | None,
        assignee_ids: list[int],
        internal: bool,
    ) -> None:
        self.project = project
        self.group = group
        self.confidential = confidential
        self.author_id = author_id
        self.assignee_ids = assignee_ids
        self.internal = internal

    @classmethod
    def load(
        cls,
        db: Session,
        target_type: str,
        target_id: int,
        project_id: int | None,
        group_id: int | None,
        note_id: int | None,
    ) -> _Target | None:
        internal = bool(note_id is not None and db.scalar(select(Note.internal).where(Note.id == note_id)))
        if target_type == ISSUE:
            issue = db.execute(
                select(Issue.project_id, Issue.confidential, Issue.author_id).where(Issue.id == target_id)
            ).first()
            if issue is None:
                return None
            found = project_finder.subject_row(db, str(issue.project_id), None, orm=False)
            if found is None:
                return None
            assignees = db.scalars(
                select(IssueAssignee.user_id).where(IssueAssignee.issue_id == target_id)
            ).all()
            return cls(
                project=ProjectSubject(project=found[0], namespace=found[1], level=None),
                group=None,
                confidential=issue.confidential,
                author_id=issue.author_id,
                assignee_ids=list(assignees),
                internal=internal,
            )
        if target_type == EPIC:
            epic = db.execute(
                select(Epic.group_id, Epic.confidential, Epic.author_id).where(Epic.id == target_id)
            ).first()
            group = db.get(Namespace, epic.group_id) if epic is not None else None
            if epic is None or group is None:
                return None
            return cls(
                project=None,
                group=GroupSubject(group=group, level=None),
                confidential=epic.confidential,
                author_id=epic.author_id,
                assignee_ids=[],
                internal=internal,
            )
        if project_id is not None:  # another kind of project content (merge requests, later)
            found = project_finder.subject_row(db, str(project_id), None, orm=False)
            if found is None:
                return None
            project = ProjectSubject(project=found[0], namespace=found[1], level=None)
            return cls(
                project=project,
                group=None,
                confidential=False,
                author_id=None,
                assignee_ids=[],
                internal=internal,
            )
        return None

    def readers(self, db: Session, user_ids: list[int]) -> list[int]:
        """Those of `user_ids` (active users) who may read the target, in the order given."""
        users = {u.id: u for u in rows_by_ids(db, user_ids) if u.state == "active"}
        if self.project is not None:
            levels = _members(db, _project_params(self.project), on_project=True, user_ids=list(users))
        elif self.group is not None:
            levels = _members(db, _group_params(self.group.group), on_project=False, user_ids=list(users))
        else:
            return []
        out = []
        for user_id in user_ids:
            user = users.get(user_id)
            if user is not None and self._may_read(
                Actor(user=user, via="session", scopes=None), levels.get(user_id)
            ):
                out.append(user_id)
        return out

    def _may_read(self, reader: Actor, level: int | None) -> bool:
        if self.project is not None:
            s = ProjectSubject(project=self.project.project, namespace=self.project.namespace, level=level)
            if not policy.may_read_issue(reader, s, self.confidential, self.author_id, self.assignee_ids):
                return False
            return not self.internal or policy.sees_confidential(reader, s)
        assert self.group is not None
        g = GroupSubject(group=self.group.group, level=level)
        if not policy.may_read_epic(reader, g, self.confidential, self.author_id):
            return False
        return not self.internal or policy.sees_confidential(reader, g)
