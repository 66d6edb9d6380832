"""What issues and merge requests (and epics, for the text checks) share: a title that is there
and fits, and a description that fits (GitLab's Issuable validations), before anything is
written; the label scope and milestones a project's issuables may use; and the system notes
and to-dos of their writes (labels, assignees, reviewers), which differ only in the kind of
target (kiln.models.notes: ISSUE, MERGE_REQUEST)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.errors import ValidationFailed
from kiln.models import Milestone
from kiln.models.todos import ASSIGNED, REVIEW_REQUESTED
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import issuables as finder
from kiln.queries import users as user_finder
from kiln.queries.paging import list_page
from kiln.services import label_links, resource_events, system_notes, todos
from kiln.services.label_links import LabelScope

TITLE_LIMIT = 255
DESCRIPTION_LIMIT = 1_048_576


def validate_text(title: str | None, description: str | None, *, creating: bool) -> None:
    """400 {"message": {"title": [...], "description": [...]}} for a blank or long title (given,
    or needed on creation) and a long description."""
    errors: dict[str, list[str]] = {}
    if title is not None or creating:
        if not (title or "").strip():
            errors["title"] = ["can't be blank"]
        elif len(title or "") > TITLE_LIMIT:
            errors["title"] = [f"is too long (maximum is {TITLE_LIMIT} characters)"]
    if description is not None and len(description) > DESCRIPTION_LIMIT:
        errors["description"] = [f"is too long (maximum is {DESCRIPTION_LIMIT} characters)"]
    if errors:
        raise ValidationFailed(errors)


def now() -> datetime:
    return datetime.now(UTC)


def label_scope(s: ProjectSubject) -> LabelScope:
    """The labels a project's issuables use: its own, then its groups' (nearest first)."""
    ns = s.namespace
    return LabelScope(s.project.id, list(reversed(ns.ancestor_ids)) if ns.is_group else [])


def group_ids(s: ProjectSubject) -> list[int]:
    return list(s.namespace.ancestor_ids) if s.namespace.is_group else []


def usable_milestone(db: Session, s: ProjectSubject, milestone_id: int) -> Milestone | None:
    """A milestone the project may use: its own or one of its groups'."""
    m = db.get(Milestone, milestone_id)
    if m is None:
        return None
    if m.project_id == s.project.id or (m.group_id is not None and m.group_id in group_ids(s)):
        return m
    return None


def at(names: dict[int, str], ids: list[int]) -> str:
    """ "@a, @b and @c", as GitLab's system notes name people."""
    return " and ".join(", ".join(f"@{names[i]}" for i in ids if i in names).rsplit(", ", 1))


def note(db: Session, actor: Actor | None, kind: str, target: Any, body: str) -> None:
    """A system note on `target` (an issue or merge request model) of type `kind`."""
    system_notes.add(
        db, actor, noteable_type=kind, noteable_id=target.id, body=body, project_id=target.project_id
    )


def label_note(
    db: Session, actor: Actor, kind: str, target: Any, added: list[int], removed: list[int]
) -> None:
    """The system note of a label change: `added ~"a" label and removed ~"b" ~"c" labels`."""
    if not added and not removed:
        return
    titles = finder.label_titles(db, added + removed)

    def refs(ids: list[int]) -> str:
        noun = "label" if len(ids) == 1 else "labels"
        return " ".join(f'~"{titles[i]}"' for i in ids if i in titles) + f" {noun}"

    parts = []
    if added:
        parts.append(f"added {refs(added)}")
    if removed:
        parts.append(f"removed {refs(removed)}")
    note(db, actor, kind, target, " and ".join(parts))


def set_people(
    db: Session,
    actor: Actor,
    kind: str,
    target: Any,
    table: Any,
    current: list[int],
    wanted: list[int],
    *,
    review: bool = False,
) -> bool:
    """Assign (or, `review`, ask to review) exactly `wanted`: the rows of `table` (keyed by its
    first foreign key column to `target`, then user_id), the system note, ASSIGNED (or
    REVIEW_REQUESTED) to-dos for the new ones. False when nothing changed."""
    added = [i for i in wanted if i not in current]
    removed = [i for i in current if i not in wanted]
    if not added and not removed:
        return False
    owner = _owner_column(table)
    if removed:
        finder.remove_people(db, table, owner, target.id, removed)
    for uid in added:
        db.add(table(**{owner: target.id, "user_id": uid}))
    names = finder.usernames(db, added + removed)
    parts = []
    if review:
        if added:
            parts.append(f"requested review from {at(names, added)}")
        if removed:
            parts.append(f"removed review request for {at(names, removed)}")
    else:
        if added:
            parts.append(f"assigned to {at(names, added)}")
        if removed:
            parts.append(f"unassigned {at(names, removed)}")
    note(db, actor, kind, target, " and ".join(parts))
    for uid in added:
        if uid != actor.id:
            todos.add(
                db,
                user_id=uid,
                author_id=actor.id,
                action=REVIEW_REQUESTED if review else ASSIGNED,
                target_type=kind,
                target_id=target.id,
                project_id=target.project_id,
            )
    return True


def _owner_column(table: Any) -> str:
    """The column of a people table naming what they are on (issue_id, merge_request_id)."""
    for column in table.__table__.c:
        if column.key != "user_id" and column.foreign_keys:
            return str(column.key)
    raise ValueError(table)  # pragma: no cover - every people table has one


def readers(
    db: Session, s: ProjectSubject, ids: list[int], may_read: Callable[[Actor, ProjectSubject], bool]
) -> list[int]:
    """The users of `ids` who may be assigned (asked to review): active, and able to read the
    target as `may_read` decides with their level on the project (GitLab leaves the others
    out); 0 and unknown ids dropped, each id kept once."""
    wanted = list(dict.fromkeys(i for i in ids if i and i > 0))
    out = []
    today = date.today()
    for user in user_finder.rows_by_ids(db, wanted):
        level = finder.project_level(db, user.id, s.project.id, today)
        seen_as = Actor(user=user, via="personal_access_token", scopes=None)
        if user.is_active and may_read(seen_as, replace(s, level=level)):
            out.append(user.id)
    return out


def wanted_labels(
    db: Session, actor: Actor, s: Any, scope: LabelScope, current: list[int], p: Any, given: set[str]
) -> list[int]:
    """The label ids an update asks for, each once: `labels` replaces `current`, then
    `add_labels` adds and `remove_labels` takes away; titles that name no label in `scope` are
    created for those who may admin_labels on `s` (a project or group subject), else left out."""
    create = policy.may(actor, Action.ADMIN_LABELS, s)
    if "labels" in given:
        wanted = [label.id for label in label_links.resolve(db, scope, p.labels or [], create=create)]
    else:
        wanted = list(current)
    if p.add_labels:
        wanted += [label.id for label in label_links.resolve(db, scope, p.add_labels, create=create)]
    if p.remove_labels:
        gone = {label.id for label in label_links.resolve(db, scope, p.remove_labels, create=False)}
        wanted = [i for i in wanted if i not in gone]
    return list(dict.fromkeys(wanted))


def update_labels(
    db: Session,
    actor: Actor,
    kind: str,
    s: ProjectSubject,
    target: Any,
    p: Any,
    given: set[str],
    changed: Any,
) -> bool:
    """The labels of an update (admin_issue, admin_merge_request): `labels` replaces them,
    `add_labels` adds, `remove_labels` removes (labels that don't exist are created for those
    who may admin_labels); the links, the system note and `changed("labels", ...)`. False when
    they stay as they are."""
    if not {"labels", "add_labels", "remove_labels"} & given:
        return False
    current = label_links.label_ids_of(db, kind, target.id)
    wanted = wanted_labels(db, actor, s, label_scope(s), current, p, given)
    added, removed = label_links.set_labels(db, actor, kind, target.id, wanted)
    if not added and not removed:
        return False
    label_note(db, actor, kind, target, added, removed)
    changed("labels", current, wanted)
    return True


def update_milestone(
    db: Session,
    actor: Actor,
    kind: str,
    s: ProjectSubject,
    target: Any,
    milestone_id: int | None,
    changed: Any,
) -> bool:
    """Move `target` to milestone `milestone_id` (one the project may use, else none): the
    system note, the milestone event and `changed("milestone_id", ...)`. False when it stays."""
    m = usable_milestone(db, s, milestone_id) if milestone_id else None
    new_id = m.id if m is not None else None
    if new_id == target.milestone_id:
        return False
    before = db.get(Milestone, target.milestone_id) if target.milestone_id is not None else None
    if m is not None:
        note(db, actor, kind, target, f'changed milestone to %"{m.title}"')
    else:
        note(
            db, actor, kind, target, f'removed milestone %"{before.title}"' if before else "removed milestone"
        )
    resource_events.milestone_changed(db, actor, kind, target.id, new_id, target.milestone_id, target.state)
    changed("milestone_id", target.milestone_id, new_id)
    target.milestone_id = new_id
    return True


def update_lock(
    db: Session, actor: Actor, kind: str, target: Any, locked: bool | None, what: str, changed: Any
) -> None:
    """Lock (unlock) the discussion of `target`: the system note "locked `what`" and
    `changed("discussion_locked", ...)`; nothing when `locked` is None or already so."""
    if locked is None or locked == bool(target.discussion_locked):
        return
    note(db, actor, kind, target, f"locked {what}" if locked else f"unlocked {what}")
    changed("discussion_locked", target.discussion_locked, locked)
    target.discussion_locked = locked


def delete_dependents(db: Session, kind: str, target_id: int) -> None:
    """What hangs off a deleted issue, merge request or epic by (type, id) (queries.issuables)."""
    finder.delete_dependents(db, kind, target_id)


def takes_part(db: Session, kind: str, target_id: int, user_id: int, people: Iterable[int | None]) -> bool:
    """The user is one of `people` (author, assignees, reviewers) or commented on the target:
    a participant, subscribed by default."""
    return user_id in set(people) or finder.commented_by(db, kind, target_id, user_id)


def participants(
    db: Session, kind: str, target_id: int, people: Iterable[int | None], page: Page, *, internal: bool = True
) -> PageResult:
    """`people` (author, assignees, reviewers) and those who commented on the target (without
    `internal`, not those of internal notes only), each once, a page of user rows."""
    ids = dict.fromkeys(uid for uid in people if uid is not None)
    ids.update(dict.fromkeys(finder.commenters(db, kind, target_id, internal=internal)))
    return list_page(user_finder.rows_by_ids(db, list(ids)), page)
