"""Which labels an issue, epic or merge request carries: titles resolved against the labels
its project (and the groups above) or its group (and the groups above) sees, missing ones
created where the actor may (GitLab's find-or-create), and each change recorded as a
resource label event. Called by the carrying resource's writes, in their transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.models import Label, LabelLink
from kiln.services import resource_events

# GitLab's Label::DEFAULT_COLOR, given to labels created by naming them.
DEFAULT_COLOR = "#6699cc"


@dataclass(slots=True, frozen=True)
class LabelScope:
    """Where labels are looked up: the project's own (None for a group's epics) and those of
    `group_ids` (the group and its ancestors); new labels go to the project, else the first group."""

    project_id: int | None
    group_ids: Sequence[int]


def visible_labels(db: Session, scope: LabelScope, titles: Iterable[str] | None = None) -> list[Label]:
    """Labels the scope sees (named `titles` only, when given); a project's own come first."""
    owners = []
    if scope.project_id is not None:
        owners.append(Label.project_id == scope.project_id)
    if scope.group_ids:
        owners.append(Label.group_id.in_(list(scope.group_ids)))
    if not owners:
        return []
    stmt = select(Label).where(or_(*owners))
    if titles is not None:
        stmt = stmt.where(Label.title.in_(list(titles)))
    found = db.scalars(stmt).all()
    return sorted(found, key=lambda label: (label.project_id is None, label.id))


def resolve(db: Session, scope: LabelScope, titles: Iterable[str], *, create: bool) -> list[Label]:
    """The labels named `titles` (blank names skipped, each once, in the order named); a name
    nothing matches is created when `create`, otherwise left out."""
    wanted: list[str] = []
    for named in titles:
        title = named.strip()
        if title and title not in wanted:
            wanted.append(title)
    if not wanted:
        return []
    by_title: dict[str, Label] = {}
    for label in visible_labels(db, scope, wanted):
        by_title.setdefault(label.title, label)
    out = []
    for title in wanted:
        label = by_title.get(title)
        if label is None and create:
            if scope.project_id is not None:
                label = Label(project_id=scope.project_id, title=title, color=DEFAULT_COLOR)
            else:
                label = Label(group_id=scope.group_ids[-1], title=title, color=DEFAULT_COLOR)
            db.add(label)
            db.flush()
            by_title[title] = label
        if label is not None:
            out.append(label)
    return out


def label_ids_of(db: Session, target_type: str, target_id: int) -> list[int]:
    return list(
        db.scalars(
            select(LabelLink.label_id)
            .where(LabelLink.target_type == target_type, LabelLink.target_id == target_id)
            .order_by(LabelLink.id)
        )
    )


def set_labels(
    db: Session, actor: Actor | None, target_type: str, target_id: int, label_ids: Sequence[int]
) -> tuple[list[int], list[int]]:
    """Make the target carry exactly `label_ids`; returns (added, removed) and records them
    as resource label events."""
    current = label_ids_of(db, target_type, target_id)
    added = [i for i in dict.fromkeys(label_ids) if i not in current]
    removed = [i for i in current if i not in label_ids]
    if removed:
        db.execute(
            delete(LabelLink).where(
                LabelLink.target_type == target_type,
                LabelLink.target_id == target_id,
                LabelLink.label_id.in_(removed),
            ),
            execution_options={"synchronize_session": False},
        )
    for label_id in added:
        db.add(LabelLink(label_id=label_id, target_type=target_type, target_id=target_id))
    if added or removed:
        resource_events.labels_changed(db, actor, target_type, target_id, added, removed)
        db.flush()
    return added, removed
