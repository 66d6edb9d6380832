"""Time tracking of issues (and, through the same functions, merge requests): an estimate and
the time spent, written as GitLab's time tracking writes them. Durations are GitLab's human
form ("1mo 2w 3d 4h 30m", "3h30m", "1.5", a bare number being hours; "-1h" subtracts spent
time), counted as GitLab counts by default: a month is 4 weeks, a week 5 days, a day 8 hours.
Spent time is a time log per change (a reset logs the total's negative), and the target's
total_time_spent is kept with each log. Changing either takes GitLab's admin ability on the
issue (Reporter and up); reading them, sight of the issue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from kiln import events
from kiln.auth.actor import Actor
from kiln.db import transaction
from kiln.durations import human, parse_duration
from kiln.errors import ValidationFailed
from kiln.models import Issue, MergeRequest, Timelog
from kiln.models.base import utcnow
from kiln.models.notes import ISSUE, MERGE_REQUEST
from kiln.policy import Action
from kiln.queries.time_tracking import TimeStats
from kiln.services import issuables, merge_request_events, subjects

# The most an estimate holds (GitLab keeps a larger one as this: its integer column's limit).
MAX_ESTIMATE = 2**31 - 1
# The most time spent an issue may total (GitLab's Timelog::MAX_TOTAL_TIME_SPENT, a year).
MAX_TOTAL_SPENT = 31_557_600
SUMMARY_LIMIT = 255

ESTIMATE_INVALID = "must have a valid format and be greater than or equal to zero."
SPENT_INVALID = "can't be blank"
SUBTRACT_TOO_MUCH = "Time to subtract exceeds the total time spent"
SPENT_TOO_MUCH = "Total time spent cannot exceed a year."


@dataclass(slots=True, frozen=True)
class Trackable:
    """What time is tracked on: an issue or a merge request (the model), its type for time
    logs and notes, where it lives, and what its hook events are called."""

    target: Any  # the model: time_estimate, total_time_spent, id, iid
    target_type: str
    project_id: int
    hook: str


def _of_issue(issue: Issue) -> Trackable:
    return Trackable(issue, ISSUE, issue.project_id, "confidential_issue" if issue.confidential else "issue")


def _stats(t: Trackable) -> TimeStats:
    return TimeStats(t.target.time_estimate or 0, t.target.total_time_spent or 0)


def _of_merge_request(mr: MergeRequest) -> Trackable:
    return Trackable(mr, MERGE_REQUEST, mr.project_id, merge_request_events.HOOK)


def _changed(db: Session, actor: Actor, t: Trackable, changes: dict[str, Any]) -> None:
    if t.target_type == MERGE_REQUEST:
        merge_request_events.record(db, actor, t.target, merge_request_events.UPDATE, changes)
        return
    events.record(
        db,
        "updated",
        project_id=t.project_id,
        actor=actor,
        target_type=t.target_type,
        target_id=t.target.id,
        data={"hook": t.hook, "hook_action": "update", "iid": t.target.iid, "changes": changes},
    )


# ----------------------------------------------------------------------------- any trackable


def set_estimate(db: Session, actor: Actor, t: Trackable, seconds: int) -> TimeStats:
    """The estimate becomes `seconds` (0: none), noted in the thread when it changes."""
    seconds = min(seconds, MAX_ESTIMATE)
    with transaction(db):
        _fresh(db, t)
        previous = t.target.time_estimate or 0
        if seconds != previous:
            t.target.time_estimate = seconds
            t.target.updated_at = utcnow()
            body = f"changed time estimate to {human(seconds)}" if seconds else "removed time estimate"
            _note(db, actor, t, body)
            _changed(db, actor, t, {"time_estimate": {"previous": previous, "current": seconds}})
    return _stats(t)


def spend(db: Session, actor: Actor, t: Trackable, seconds: int, summary: str | None) -> TimeStats:
    """Log `seconds` spent (negative: subtracted); the total may go neither below zero nor
    past GitLab's limit. Nothing is logged for no time at all."""
    if summary is not None and len(summary) > SUMMARY_LIMIT:
        raise ValidationFailed({"timelogs.summary": [f"is too long (maximum is {SUMMARY_LIMIT} characters)"]})
    with transaction(db):
        _fresh(db, t)
        total = t.target.total_time_spent or 0
        if seconds < 0 and -seconds > total:
            raise ValidationFailed({"base": [SUBTRACT_TOO_MUCH]})
        if total + seconds > MAX_TOTAL_SPENT:
            raise ValidationFailed({"base": [SPENT_TOO_MUCH]})
        if seconds:
            _log(db, actor, t, seconds, summary)
            verb = "added" if seconds > 0 else "subtracted"
            _note(db, actor, t, f"{verb} {human(abs(seconds))} of time spent")
    return _stats(t)


def reset_spent(db: Session, actor: Actor, t: Trackable) -> TimeStats:
    """The total back to zero, by logging its negative (nothing when nothing is spent)."""
    with transaction(db):
        _fresh(db, t)
        total = t.target.total_time_spent or 0
        if total:
            _log(db, actor, t, -total, None)
            _note(db, actor, t, "removed time spent")
    return _stats(t)


def _fresh(db: Session, t: Trackable) -> None:
    """The counts as the write finds them, the row held until it ends (concurrent writes
    each add to the total the other left)."""
    db.refresh(t.target, attribute_names=["time_estimate", "total_time_spent"], with_for_update=True)


def _log(db: Session, actor: Actor, t: Trackable, seconds: int, summary: str | None) -> None:
    previous = t.target.total_time_spent or 0
    db.add(
        Timelog(
            target_type=t.target_type,
            target_id=t.target.id,
            project_id=t.project_id,
            user_id=actor.id,
            time_spent=seconds,
            summary=summary,
        )
    )
    t.target.total_time_spent = previous + seconds
    _changed(
        db,
        actor,
        t,
        {"total_time_spent": {"previous": previous, "current": previous + seconds}, "time_change": seconds},
    )


def _note(db: Session, actor: Actor, t: Trackable, body: str) -> None:
    issuables.note(db, actor, t.target_type, t.target, body)


# ----------------------------------------------------------------------------- issues, merge requests
# Reading takes sight of the issue (merge request); changing, GitLab's admin_issue
# (admin_merge_request). `kind`: ISSUE or MERGE_REQUEST (kiln.models.notes).

_READ = {ISSUE: Action.READ_ISSUE, MERGE_REQUEST: Action.READ_MERGE_REQUEST}
_ADMIN = {ISSUE: Action.ADMIN_ISSUE, MERGE_REQUEST: Action.ADMIN_MERGE_REQUEST}


def _trackable(
    db: Session, actor: Actor | None, kind: str, ident: str, iid: int, *, change: bool
) -> Trackable:
    action = (_ADMIN if change else _READ)[kind]
    if kind == ISSUE:
        return _of_issue(subjects.issue(db, actor, ident, iid, action).issue)
    return _of_merge_request(subjects.merge_request(db, actor, ident, iid, action).merge_request)


def _estimate_seconds(duration: str) -> int:
    seconds = parse_duration(duration)
    if seconds is None or seconds < 0:
        raise ValidationFailed({"time_estimate": [ESTIMATE_INVALID]})
    return seconds


def time_stats_of(db: Session, actor: Actor | None, ident: str, iid: int, *, kind: str) -> TimeStats:
    return _stats(_trackable(db, actor, kind, ident, iid, change=False))


def set_estimate_of(
    db: Session, actor: Actor, ident: str, iid: int, duration: str, *, kind: str
) -> TimeStats:
    t = _trackable(db, actor, kind, ident, iid, change=True)
    return set_estimate(db, actor, t, _estimate_seconds(duration))


def reset_estimate_of(db: Session, actor: Actor, ident: str, iid: int, *, kind: str) -> TimeStats:
    return set_estimate(db, actor, _trackable(db, actor, kind, ident, iid, change=True), 0)


def add_spent_of(
    db: Session, actor: Actor, ident: str, iid: int, duration: str, summary: str | None, *, kind: str
) -> TimeStats:
    t = _trackable(db, actor, kind, ident, iid, change=True)
    seconds = parse_duration(duration)
    if seconds is None:
        raise ValidationFailed({"timelogs.time_spent": [SPENT_INVALID]})
    return spend(db, actor, t, seconds, summary)


def reset_spent_of(db: Session, actor: Actor, ident: str, iid: int, *, kind: str) -> TimeStats:
    return reset_spent(db, actor, _trackable(db, actor, kind, ident, iid, change=True))
