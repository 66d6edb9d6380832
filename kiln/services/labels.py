"""Labels of projects and groups (GitLab's Labels and Group Labels APIs): listing what a
project or group sees, one label by id or title, creating, changing, deleting, promoting a
project's label to its group, and subscribing to a label.

A project sees its own labels and those of its group and the groups above it; a group its
own and its ancestors'. Reading takes sight of the project or group; changing labels is
GitLab's admin_label (Reporter and up), and a group's label is changed only by those who may
change the group's labels. Colours are kept as `#rgb`/`#rrggbb`; a CSS colour name is kept as
the hex it names, as GitLab converts it."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Literal

import nh3
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.errors import BadRequest, Conflict, NotFound, ValidationFailed
from kiln.models import (
    BoardLabel,
    BoardList,
    Label,
    LabelLink,
    LabelPriority,
    Namespace,
    ResourceLabelEvent,
    Subscription,
)
from kiln.pagination import Page, PageResult
from kiln.policy import Action, GroupSubject, ProjectSubject
from kiln.queries import labels as finder
from kiln.queries.labels import SUBSCRIBABLE, Counts, LabelRow
from kiln.schemas.labels import LabelCreate, LabelGet, LabelList, LabelUpdate
from kiln.services import subjects, subscriptions

Kind = Literal["groups", "projects"]
Subject = GroupSubject | ProjectSubject

TITLE_LIMIT = 255
INVALID_COLOR = "must be a valid color code"
_HEX = re.compile(r"#(?:[0-9A-Fa-f]{3}){1,2}")
EXISTS = "Label already exists"
PROMOTE_FAILED = "Failed to promote project label to group label"
LOCKED = "Label is locked and was not removed"

# The CSS named colours (CSS Color Module Level 4), each with the hex kept for it.
_CSS_COLORS = """
aliceblue f0f8ff antiquewhite faebd7 aqua 00ffff aquamarine 7fffd4 azure f0ffff beige f5f5dc
bisque ffe4c4 black 000000 blanchedalmond ffebcd blue 0000ff blueviolet 8a2be2 brown a52a2a
burlywood deb887 cadetblue 5f9ea0 chartreuse 7fff00 chocolate d2691e coral ff7f50
cornflowerblue 6495ed cornsilk fff8dc crimson dc143c cyan 00ffff darkblue 00008b darkcyan 008b8b
darkgoldenrod b8860b darkgray a9a9a9 darkgreen 006400 darkgrey a9a9a9 darkkhaki bdb76b
darkmagenta 8b008b darkolivegreen 556b2f darkorange ff8c00 darkorchid 9932cc darkred 8b0000
darksalmon e9967a darkseagreen 8fbc8f darkslateblue 483d8b darkslategray 2f4f4f
darkslategrey 2f4f4f darkturquoise 00ced1 darkviolet 9400d3 deeppink ff1493 deepskyblue 00bfff
dimgray 696969 dimgrey 696969 dodgerblue 1e90ff firebrick b22222 floralwhite fffaf0
forestgreen 228b22 fuchsia ff00ff gainsboro dcdcdc ghostwhite f8f8ff gold ffd700
goldenrod daa520 gray 808080 green 008000 greenyellow adff2f grey 808080 honeydew f0fff0
hotpink ff69b4 indianred cd5c5c indigo 4b0082 ivory fffff0 khaki f0e68c lavender e6e6fa
lavenderblush fff0f5 lawngreen 7cfc00 lemonchiffon fffacd lightblue add8e6 lightcoral f08080
lightcyan e0ffff lightgoldenrodyellow fafad2 lightgray d3d3d3 lightgreen 90ee90
lightgrey d3d3d3 lightpink ffb6c1 lightsalmon ffa07a lightseagreen 20b2aa lightskyblue 87cefa
lightslategray 778899 lightslategrey 778899 lightsteelblue b0c4de lightyellow ffffe0
lime 00ff00 limegreen 32cd32 linen faf0e6 magenta ff00ff maroon 800000
mediumaquamarine 66cdaa mediumblue 0000cd mediumorchid ba55d3 mediumpurple 9370db
mediumseagreen 3cb371 mediumslateblue 7b68ee mediumspringgreen 00fa9a mediumturquoise 48d1cc
mediumvioletred c71585 midnightblue 191970 mintcream f5fffa mistyrose ffe4e1 moccasin ffe4b5
navajowhite ffdead navy 000080 oldlace fdf5e6 olive 808000 olivedrab 6b8e23 orange ffa500
orangered ff4500 orchid da70d6 palegoldenrod eee8aa palegreen 98fb98 paleturquoise afeeee
palevioletred db7093 papayawhip ffefd5 peachpuff ffdab9 peru cd853f pink ffc0cb plum dda0dd
powderblue b0e0e6 purple 800080 rebeccapurple 663399 red ff0000 rosybrown bc8f8f
royalblue 4169e1 saddlebrown 8b4513 salmon fa8072 sandybrown f4a460 seagreen 2e8b57
seashell fff5ee sienna a0522d silver c0c0c0 skyblue 87ceeb slateblue 6a5acd slategray 708090
slategrey 708090 snow fffafa springgreen 00ff7f steelblue 4682b4 tan d2b48c teal 008080
thistle d8bfd8 tomato ff6347 turquoise 40e0d0 violet ee82ee wheat f5deb3 white ffffff
whitesmoke f5f5f5 yellow ffff00 yellowgreen 9acd32
"""
_WORDS = _CSS_COLORS.split()
NAMED_COLORS: dict[str, str] = {
    name: f"#{hex_.upper()}" for name, hex_ in zip(_WORDS[::2], _WORDS[1::2], strict=True)
}


@dataclass(slots=True)
class Labels:
    page: PageResult  # items: LabelRow
    subscribed: set[int]
    counts: dict[int, Counts] | None  # None: not asked for
    in_project: bool


@dataclass(slots=True)
class OneLabel:
    row: LabelRow
    subscribed: bool
    in_project: bool


@dataclass(slots=True, frozen=True)
class Scope:
    """Whose labels a route sees: `project_ids` and `group_ids` own them; `project_group_ids`
    adds the labels of the projects the caller sees in those groups (None: not asked for)."""

    project_ids: list[int]
    group_ids: list[int]
    project_group_ids: list[int] | None = None
    priority_project: int | None = None


# ----------------------------------------------------------------------------- subjects


def _subject(db: Session, actor: Actor | None, kind: Kind, ident: str, *, admin: bool = False) -> Subject:
    """The project or group, read (`admin` off, as rows) or to change its labels (models)."""
    if kind == "groups":
        return subjects.group(
            db, actor, ident, Action.ADMIN_LABELS if admin else Action.READ_GROUP, rows=not admin
        )
    return subjects.project(
        db, actor, ident, Action.ADMIN_LABELS if admin else Action.READ_PROJECT, rows=not admin
    )


def _scope(
    db: Session,
    actor: Actor | None,
    s: Subject,
    *,
    ancestors: bool = True,
    descendants: bool = False,
    only_group_labels: bool = True,
) -> Scope:
    """GitLab's LabelsFinder: a project's own labels and its group's (and, with `ancestors`,
    the groups' above); a group's own (with its ancestors', and with `descendants` those of
    the groups below it the caller sees, and unless `only_group_labels` those of the projects
    the caller sees inside)."""
    if isinstance(s, ProjectSubject):
        ns = s.namespace
        groups: list[int] = []
        if ns.is_group:
            groups = list(ns.ancestor_ids) if ancestors else [ns.id]
        return Scope([s.project.id], groups, priority_project=s.project.id)
    g = s.group
    below = finder.groups_below(db, actor, g.traversal, g.id) if descendants else []
    groups = (list(g.ancestor_ids) if ancestors else [g.id]) + below
    inside = None if only_group_labels else [g.id, *below]
    return Scope([], groups, inside)


def _find(db: Session, actor: Actor | None, scope: Scope, ident: str) -> LabelRow:
    row = finder.find_label(
        db,
        actor,
        ident,
        project_ids=scope.project_ids,
        group_ids=scope.group_ids,
        project_group_ids=scope.project_group_ids,
        priority_project=scope.priority_project,
    )
    if row is None:
        raise NotFound("Label")
    return row


def _user_id(actor: Actor | None) -> int | None:
    return actor.user.id if actor is not None else None


def _one(db: Session, actor: Actor | None, s: Subject, label_id: int) -> OneLabel:
    """A label as the subject shows it, read after a change."""
    row = _find(db, actor, _scope(db, actor, s), str(label_id))
    if row.id != label_id:
        raise NotFound("Label")
    subscribed = finder.subscribed_ids(db, _user_id(actor), [row.id])
    return OneLabel(row, row.id in subscribed, isinstance(s, ProjectSubject))


# ----------------------------------------------------------------------------- reading


def list_labels(db: Session, actor: Actor | None, kind: Kind, q: LabelList, page: Page) -> Labels:
    """The labels the project or group sees, in title order; `search` keeps those whose title
    or description holds it. Subscriptions and counts are one statement each for the page."""
    s = _subject(db, actor, kind, q.id)
    scope = _scope(
        db,
        actor,
        s,
        ancestors=q.include_ancestor_groups,
        descendants=q.include_descendant_groups,
        only_group_labels=q.only_group_labels,
    )
    result = finder.page_of_labels(
        db,
        actor,
        page,
        project_ids=scope.project_ids,
        group_ids=scope.group_ids,
        project_group_ids=scope.project_group_ids,
        priority_project=scope.priority_project,
        search=q.search or None,
    )
    ids = [row.id for row in result.items]
    subscribed = finder.subscribed_ids(db, _user_id(actor), ids)
    counts = finder.issue_counts(db, actor, ids) if q.with_counts else None
    return Labels(result, subscribed, counts, isinstance(s, ProjectSubject))


def get_label(db: Session, actor: Actor | None, kind: Kind, q: LabelGet) -> OneLabel:
    s = _subject(db, actor, kind, q.id)
    scope = _scope(
        db,
        actor,
        s,
        ancestors=q.include_ancestor_groups,
        descendants=q.include_descendant_groups,
        only_group_labels=q.only_group_labels,
    )
    row = _find(db, actor, scope, q.label_id)
    subscribed = finder.subscribed_ids(db, _user_id(actor), [row.id])
    return OneLabel(row, row.id in subscribed, isinstance(s, ProjectSubject))


# ----------------------------------------------------------------------------- validation


def clean_title(text: str) -> str:
    """GitLab keeps a title without markup (tags taken out, entities read) and trimmed."""
    return html.unescape(nh3.clean(text, tags=set())).strip()


def color_of(text: str) -> str | None:
    """The colour to store: `#rgb`/`#rrggbb` as given, a CSS colour name as its hex; None if
    it is neither."""
    value = text.strip()
    named = NAMED_COLORS.get(value.lower())
    if named is not None:
        return named
    return value if _HEX.fullmatch(value) else None


def _title_problem(title: str) -> str | None:
    if not title:
        return "can't be blank"
    if len(title) > TITLE_LIMIT:
        return f"is too long (maximum is {TITLE_LIMIT} characters)"
    if "," in title:
        return "is invalid"
    return None


def _validate(
    *, title: str | None, color: str | None, color_given: bool, priority: int | None
) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if color_given and color is None:
        errors["color"] = [INVALID_COLOR]
    if title is not None and (problem := _title_problem(title)) is not None:
        errors["title"] = [problem]
    if priority is not None and priority < 0:
        errors["priority"] = ["must be greater than or equal to 0"]
    return errors


# ----------------------------------------------------------------------------- changing


def _owner(s: Subject) -> dict[str, int]:
    if isinstance(s, GroupSubject):
        return {"group_id": s.group.id}
    return {"project_id": s.project.id}


def _prioritize(db: Session, project_id: int, label_id: int, priority: int | None) -> None:
    """Rank the label for the project, or (None) take its rank away."""
    found = db.scalars(
        select(LabelPriority).where(
            LabelPriority.project_id == project_id, LabelPriority.label_id == label_id
        )
    ).first()
    if priority is None:
        if found is not None:
            db.delete(found)
    elif found is None:
        db.add(LabelPriority(project_id=project_id, label_id=label_id, priority=priority))
    else:
        found.priority = priority


def create_label(db: Session, actor: Actor, kind: Kind, p: LabelCreate) -> OneLabel:
    """A new label; a title the project or group already sees (its own, its groups') is a
    409, as GitLab's create checks the labels available to it."""
    s = _subject(db, actor, kind, p.id, admin=True)
    title, color = clean_title(p.name), color_of(p.color)
    priority = p.priority if isinstance(s, ProjectSubject) else None
    errors = _validate(title=title, color=color, color_given=True, priority=priority)
    if errors:
        raise ValidationFailed(errors)
    scope = _scope(db, actor, s)
    with transaction(db):
        if finder.titled(db, title, project_ids=scope.project_ids, group_ids=scope.group_ids):
            raise Conflict(EXISTS)
        label = Label(title=title, color=color, description=p.description, **_owner(s))
        db.add(label)
        db.flush()
        label_id = label.id
        if isinstance(s, ProjectSubject) and priority is not None:
            _prioritize(db, s.project.id, label_id, priority)
    return _one(db, actor, s, label_id)


def _own_label(db: Session, actor: Actor, s: Subject, ident: str) -> Label:
    """The label a write names: the subject's own, or a project's group's label, which only
    those who may change the group's labels change (GitLab finds it without ancestors)."""
    scope = _scope(db, actor, s, ancestors=False)
    row = _find(db, actor, scope, ident)
    if row.group_id is not None and isinstance(s, ProjectSubject):
        group = subjects.of_namespace(db, actor, s.namespace)
        policy.authorize(actor, Action.ADMIN_LABELS, group, "Group")
    label = db.get(Label, row.id)
    if label is None:
        raise NotFound("Label")
    return label


def _rename_problem(db: Session, s: Subject, label: Label, title: str) -> str | None:
    """GitLab's model checks on a new title: unique among its owner's labels, and a project's
    label not named as a label of the groups above the project."""
    same_owner = finder.titled(
        db,
        title,
        project_ids=[label.project_id] if label.project_id is not None else [],
        group_ids=[label.group_id] if label.group_id is not None else [],
    )
    if any(row[0] != label.id for row in same_owner):
        return "has already been taken"
    if label.project_id is not None and isinstance(s, ProjectSubject) and s.namespace.is_group:
        groups = finder.titled(db, title, project_ids=[], group_ids=list(s.namespace.ancestor_ids))
        if groups:
            owner = db.get(Namespace, groups[0][2])
            name = owner.name if owner is not None else ""
            return f"already exists at group level for {name}. Please choose another one."
    return None


def update_label(db: Session, actor: Actor, kind: Kind, p: LabelUpdate) -> OneLabel:
    """Change a label's title (`new_name`), colour or description, and for a project its rank
    (`priority`; null takes it away)."""
    s = _subject(db, actor, kind, p.id, admin=True)
    given = p.given()
    title = clean_title(p.new_name) if p.new_name is not None else None
    color = color_of(p.color) if p.color is not None else None
    prioritize = isinstance(s, ProjectSubject) and "priority" in given
    if title == "":
        title = None  # a blank title leaves the title as it is, as GitLab's title= does
    errors = _validate(
        title=title, color=color, color_given=p.color is not None, priority=p.priority if prioritize else None
    )
    if errors:
        raise ValidationFailed(errors)
    with transaction(db):
        label = _own_label(db, actor, s, p.ident())
        if title is not None and title != label.title:
            problem = _rename_problem(db, s, label, title)
            if problem is not None:
                raise ValidationFailed({"title": [problem]})
            label.title = title
        if color is not None:
            label.color = color
        if p.description is not None:
            label.description = p.description
        if prioritize and isinstance(s, ProjectSubject):
            _prioritize(db, s.project.id, label.id, p.priority)
        db.flush()
        label_id = label.id
    return _one(db, actor, s, label_id)


def _remove(db: Session, label_ids: list[int]) -> None:
    """Delete labels with what hangs off them by id alone (their subscriptions); links,
    priorities and board lists go with the rows (their foreign keys cascade)."""
    db.execute(
        delete(Subscription).where(
            Subscription.subscribable_type == SUBSCRIBABLE, Subscription.subscribable_id.in_(label_ids)
        ),
        execution_options={"synchronize_session": False},
    )
    db.execute(delete(Label).where(Label.id.in_(label_ids)), execution_options={"synchronize_session": False})


def delete_label(db: Session, actor: Actor, kind: Kind, ident: str, label_ident: str) -> None:
    """Delete a label: the issues and epics carrying it lose it, ranks and board lists of it go."""
    s = _subject(db, actor, kind, ident, admin=True)
    with transaction(db):
        label = _own_label(db, actor, s, label_ident)
        if label.lock_on_merge:
            raise BadRequest(LOCKED, raw=True)
        _remove(db, [label.id])


# ----------------------------------------------------------------------------- promote


def _move_unique(db: Session, model: Any, key: str, old_ids: list[int], new_id: int, *others: str) -> None:
    """Point `model.key` from `old_ids` to `new_id`, dropping the rows that would then repeat
    one already there (the same `others` values)."""
    column = getattr(model, key)
    taken = {
        tuple(row)
        for row in db.execute(select(*[getattr(model, o) for o in others]).where(column == new_id)).all()
    }
    rows = db.execute(select(model.id, *[getattr(model, o) for o in others]).where(column.in_(old_ids))).all()
    drop: list[int] = []
    for row in rows:
        values = tuple(row[1:])
        if values in taken:
            drop.append(row[0])
        else:
            taken.add(values)
    if drop:
        db.execute(delete(model).where(model.id.in_(drop)), execution_options={"synchronize_session": False})
    db.execute(
        update(model).where(column.in_(old_ids)).values({key: new_id}),
        execution_options={"synchronize_session": False},
    )


def promote_label(db: Session, actor: Actor, ident: str, label_ident: str) -> OneLabel:
    """Make a project's label a label of the project's group: the group's label of that title
    (made now, unless there is one) takes the place of every project label so titled in the
    group, with their issues, events, board lists, ranks and subscribers."""
    s = subjects.project(db, actor, ident, Action.READ_PROJECT)
    if not s.namespace.is_group:
        raise BadRequest(PROMOTE_FAILED, raw=True)
    group = subjects.of_namespace(db, actor, s.namespace)
    policy.authorize(actor, Action.ADMIN_LABELS, group, "Group")
    found = _find(db, actor, _scope(db, actor, s, ancestors=False), label_ident)
    if found.project_id is None:
        raise BadRequest(PROMOTE_FAILED, raw=True)
    with transaction(db):
        label = db.get(Label, found.id)
        if label is None:
            raise NotFound("Label")
        existing = db.scalars(
            select(Label).where(Label.group_id == group.group.id, Label.title == label.title)
        ).first()
        if existing is None:
            existing = Label(
                group_id=group.group.id, title=label.title, color=label.color, description=label.description
            )
            db.add(existing)
            db.flush()
        new_id = existing.id
        old_ids = finder.project_labels_titled_within(db, group.group.traversal, label.title)
        _move_unique(db, LabelLink, "label_id", old_ids, new_id, "target_type", "target_id")
        db.execute(
            update(ResourceLabelEvent)
            .where(ResourceLabelEvent.label_id.in_(old_ids))
            .values(label_id=new_id),
            execution_options={"synchronize_session": False},
        )
        _move_unique(db, BoardList, "label_id", old_ids, new_id, "board_id")
        _move_unique(db, BoardLabel, "label_id", old_ids, new_id, "board_id")
        _move_unique(db, LabelPriority, "label_id", old_ids, new_id, "project_id")
        _move_subscriptions(db, old_ids, new_id)
        db.execute(
            delete(Label).where(Label.id.in_(old_ids)), execution_options={"synchronize_session": False}
        )
    db.expire_all()
    return _one(db, actor, group, new_id)


def _move_subscriptions(db: Session, old_ids: list[int], new_id: int) -> None:
    """Subscribers of the merged labels become the group label's, one subscription each: the
    group label's own, else their latest."""
    rows = db.execute(
        select(Subscription.id, Subscription.user_id, Subscription.subscribable_id)
        .where(
            Subscription.subscribable_type == SUBSCRIBABLE,
            Subscription.subscribable_id.in_([*old_ids, new_id]),
        )
        .order_by(Subscription.id)
    ).all()
    keep: dict[int, tuple[int, int]] = {}
    for sub_id, user_id, target in rows:
        if user_id in keep and keep[user_id][1] == new_id:
            continue
        keep[user_id] = (sub_id, target)
    kept = {sub_id for sub_id, _ in keep.values()}
    drop = [row[0] for row in rows if row[0] not in kept]
    if drop:
        db.execute(
            delete(Subscription).where(Subscription.id.in_(drop)),
            execution_options={"synchronize_session": False},
        )
    db.execute(
        update(Subscription)
        .where(Subscription.subscribable_type == SUBSCRIBABLE, Subscription.subscribable_id.in_(old_ids))
        .values(subscribable_id=new_id, project_id=None),
        execution_options={"synchronize_session": False},
    )


# ----------------------------------------------------------------------------- subscriptions


def set_subscribed(
    db: Session, actor: Actor, kind: Kind, ident: str, label_ident: str, subscribed: bool
) -> OneLabel | None:
    """Subscribe to a label the project or group sees, or unsubscribe; None when it was so
    already (the routes' 304)."""
    s = _subject(db, actor, kind, ident)
    row = _find(db, actor, _scope(db, actor, s), label_ident)
    project_id = s.project.id if isinstance(s, ProjectSubject) else None
    with transaction(db):
        changed = subscriptions.set_subscribed(
            db, actor.user.id, SUBSCRIBABLE, row.id, subscribed, project_id=project_id
        )
    if not changed:
        return None
    return OneLabel(row, subscribed, isinstance(s, ProjectSubject))
