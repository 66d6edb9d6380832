"""Cross references: an issue or merge request named in another one's title or description,
or in a note on another one, gets the system note "mentioned in issue #4" or "mentioned in merge
request group/project!3" (GitLab's cross_reference system note), the mentioner's reference
as seen from the named one's project. Written by whoever wrote the text, in the transaction
of the write, once per pair, and only where that author may read what they named (a
reader who may not read the mentioner does not see the note: references.hides_any)."""

from __future__ import annotations

from types import SimpleNamespace

from sqlalchemy.orm import Session

from kiln import references
from kiln.auth.actor import Actor
from kiln.entities.issues import Context, references_of
from kiln.models.notes import ISSUE, MERGE_REQUEST
from kiln.policy import ProjectSubject
from kiln.queries import notes as note_finder
from kiln.services import system_notes

# A reference's kind, as the noteable type its note hangs on.
_NOTEABLE = {references.ISSUE: ISSUE, references.MERGE_REQUEST: MERGE_REQUEST}
# How the mentioner is named: word and reference mark, by its noteable type.
_NAMED = {ISSUE: ("issue", "#"), MERGE_REQUEST: ("merge request", "!")}


def text_of(title: str | None, description: str | None) -> str:
    """What of an issue or merge request names others: its title and its description."""
    return "\n\n".join(part for part in (title, description) if part)


def record(
    db: Session,
    actor: Actor,
    text: str | None,
    *,
    kind: str,
    target_id: int,
    iid: int,
    subject: ProjectSubject,
    previous_text: str | None = None,
) -> None:
    """Note on each issue and merge request `text` newly names that it was mentioned in the
    `kind` (noteable type) `target_id` of project `subject`."""
    if kind not in _NAMED:
        return
    before = {(ref.kind, ref.key) for ref in references.scan(previous_text)}
    refs = [
        ref for ref in references.scan(text) if ref.kind in _NOTEABLE and (ref.kind, ref.key) not in before
    ]
    if not refs:
        return
    word, mark = _NAMED[kind]
    project, namespace = subject.project, subject.namespace
    mentioner = SimpleNamespace(
        iid=iid,
        project_id=project.id,
        project_path=f"{namespace.full_path}/{project.path}",
        namespace_id=namespace.id,
    )
    wanted: dict[tuple[str, int, str], int] = {}
    named = references.References(db, actor, "", project=subject).named((ref.kind, ref.key) for ref in refs)
    for ref_kind, where, row in named:
        noteable_type = _NOTEABLE[ref_kind]
        if (noteable_type, row.id) == (kind, target_id):
            continue
        there = where.subject.project
        seen_from = Context(project_id=there.id, namespace_id=there.namespace_id)
        body = f"mentioned in {word} {references_of(mark, mentioner, seen_from)['relative']}"
        wanted[(noteable_type, row.id, body)] = there.id
    present = note_finder.system_notes_present(db, list(wanted))
    for (noteable_type, noteable_id, body), project_id in wanted.items():
        if (noteable_type, noteable_id, body) not in present:
            system_notes.add(
                db,
                actor,
                noteable_type=noteable_type,
                noteable_id=noteable_id,
                body=body,
                project_id=project_id,
            )
