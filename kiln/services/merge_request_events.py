"""What happens to a merge request, recorded in the outbox in the transaction that changes it:
the one place merge request events are written, so hooks (`Merge Request Hook`, action
open, close, reopen, update, merge, approved, unapproved, approval, unapproval) and activity
read one shape."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from kiln import events
from kiln.auth.actor import Actor
from kiln.models import MergeRequest
from kiln.models.notes import MERGE_REQUEST

HOOK = "merge_request"
# The hook actions GitLab sends (object_attributes.action).
OPEN, CLOSE, REOPEN, UPDATE, MERGE = "open", "close", "reopen", "update", "merge"
APPROVED, UNAPPROVED, APPROVAL, UNAPPROVAL = "approved", "unapproved", "approval", "unapproval"
# The activity actions (GitLab's event action names) each hook action is shown as.
_ACTIVITY = {
    OPEN: "opened",
    CLOSE: "closed",
    REOPEN: "reopened",
    UPDATE: "updated",
    MERGE: "merged",
    APPROVED: "approved",
    APPROVAL: "approved",
    UNAPPROVED: "unapproved",
    UNAPPROVAL: "unapproved",
}


def record(
    db: Session,
    actor: Actor | None,
    mr: MergeRequest,
    hook_action: str,
    changes: dict[str, Any] | None = None,
) -> None:
    """One merge request event (not flushed). `changes`: {field: {"previous", "current"}} for
    an update, as the hook's `changes` carries them."""
    data: dict[str, Any] = {"hook": HOOK, "hook_action": hook_action, "iid": mr.iid}
    if changes:
        data["changes"] = changes
    events.record(
        db,
        _ACTIVITY[hook_action],
        project_id=mr.project_id,
        actor=actor,
        target_type=MERGE_REQUEST,
        target_id=mr.id,
        data=data,
    )
