"""Issues, labels, milestones, epics and notes, written through the models with the
services' rules (iids from the scope's counter, labels carried through label links)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from sqlalchemy.orm import Session

from kiln.config import Settings
from kiln.db import transaction
from kiln.models import (
    Epic,
    EpicIssue,
    Issue,
    IssueAssignee,
    Label,
    LabelLink,
    Milestone,
    Namespace,
    Note,
    Project,
)
from kiln.models.notes import EPIC, ISSUE
from kiln.services import internal_ids
from kiln.services.system_notes import new_discussion_id
from tests.factories.users import MadeUser


def _id(thing: Any) -> int:
    return thing if isinstance(thing, int) else thing.id


class PlanningFactory:
    db: Session
    settings: Settings

    def seq(self) -> int:
        raise NotImplementedError

    def label(
        self,
        *,
        project: Project | int | None = None,
        group: Namespace | int | None = None,
        title: str | None = None,
        color: str = "#428bca",
        **fields: Any,
    ) -> Label:
        """A project label, or a group label with `group`."""
        with transaction(self.db):
            label = Label(
                project_id=_id(project) if project is not None else None,
                group_id=_id(group) if group is not None else None,
                title=title or f"label{self.seq()}",
                color=color,
                **fields,
            )
            self.db.add(label)
            self.db.flush()
        return label

    def milestone(
        self,
        *,
        project: Project | int | None = None,
        group: Namespace | int | None = None,
        title: str | None = None,
        **fields: Any,
    ) -> Milestone:
        """A project milestone, or a group milestone with `group`."""
        with transaction(self.db):
            if project is not None:
                iid = internal_ids.next_iid(self.db, "milestones", _id(project))
            else:
                iid = internal_ids.next_iid(self.db, "group_milestones", _id(group))
            milestone = Milestone(
                iid=iid,
                project_id=_id(project) if project is not None else None,
                group_id=_id(group) if group is not None else None,
                title=title or f"milestone{self.seq()}",
                **fields,
            )
            self.db.add(milestone)
            self.db.flush()
        return milestone

    def issue(
        self,
        project: Project | int,
        author: MadeUser | int,
        *,
        title: str | None = None,
        labels: Sequence[Label] = (),
        assignees: Sequence[MadeUser | int] = (),
        milestone: Milestone | None = None,
        **fields: Any,
    ) -> Issue:
        """An open issue (fields such as state, confidential, due_date, weight, created_at
        as given), with its labels and assignees."""
        with transaction(self.db):
            project_id = _id(project)
            issue = Issue(
                iid=internal_ids.next_iid(self.db, "issues", project_id),
                project_id=project_id,
                author_id=_id(author),
                title=title or f"Issue {self.seq()}",
                milestone_id=milestone.id if milestone is not None else None,
                **fields,
            )
            self.db.add(issue)
            self.db.flush()
            for label in labels:
                self.db.add(LabelLink(label_id=label.id, target_type=ISSUE, target_id=issue.id))
            for user in assignees:
                self.db.add(IssueAssignee(issue_id=issue.id, user_id=_id(user)))
            self.db.flush()
        return issue

    def epic(
        self,
        group: Namespace | int,
        author: MadeUser | int,
        *,
        title: str | None = None,
        labels: Sequence[Label] = (),
        issues: Sequence[Issue] = (),
        start_date: date | None = None,
        due_date: date | None = None,
        **fields: Any,
    ) -> Epic:
        """An open epic; start and due dates given here are fixed ones."""
        with transaction(self.db):
            group_id = _id(group)
            if start_date is not None:
                fields.update(start_date_is_fixed=True, start_date_fixed=start_date, start_date=start_date)
            if due_date is not None:
                fields.update(due_date_is_fixed=True, due_date_fixed=due_date, due_date=due_date)
            epic = Epic(
                iid=internal_ids.next_iid(self.db, "epics", group_id),
                group_id=group_id,
                author_id=_id(author),
                title=title or f"Epic {self.seq()}",
                **fields,
            )
            self.db.add(epic)
            self.db.flush()
            for label in labels:
                self.db.add(LabelLink(label_id=label.id, target_type=EPIC, target_id=epic.id))
            for issue in issues:
                self.db.add(EpicIssue(epic_id=epic.id, issue_id=issue.id))
            self.db.flush()
        return epic

    def note(
        self,
        noteable: Issue | Epic,
        author: MadeUser | int,
        *,
        body: str = "A comment",
        system: bool = False,
        **fields: Any,
    ) -> Note:
        """A note on an issue or epic (its own thread), counted in user_notes_count unless a
        system note."""
        with transaction(self.db):
            is_issue = isinstance(noteable, Issue)
            note = Note(
                noteable_type=ISSUE if is_issue else EPIC,
                noteable_id=noteable.id,
                project_id=noteable.project_id if is_issue else None,
                group_id=None if is_issue else noteable.group_id,
                author_id=_id(author),
                body=body,
                system=system,
                discussion_id=fields.pop("discussion_id", None) or new_discussion_id(),
                **fields,
            )
            self.db.add(note)
            if not system:
                noteable.user_notes_count = (noteable.user_notes_count or 0) + 1
            self.db.flush()
        return note
