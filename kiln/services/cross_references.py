"""Cross references: an issue or merge request named in another one's title or description,
in a note on another one, or in the message of a commit pushed, gets the system note
"mentioned in issue #4", "mentioned in merge request group/project!3" or "mentioned in commit
<sha>" (GitLab's cross_reference system note), the mentioner's reference as seen from the
named one's project. Written by whoever wrote the text, in the transaction
of the write, once per pair, and only where that author may read what they named (a
reader who may not read the mentioner does not see the note: references.hides_any)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from sqlalchemy.orm import Session

from kiln import jobs, references
from kiln.auth.actor import Actor
from kiln.entities.issues import Context, references_of
from kiln.git.refs import ZERO
from kiln.models import Project
from kiln.models.notes import COMMIT, ISSUE, MERGE_REQUEST
from kiln.policy import ProjectSubject
from kiln.queries import notes as note_finder
from kiln.queries import users as user_finder
from kiln.services import pipeline_creation, subjects, system_notes

# The push job: what the new commits of a branch name (GitLab's ProcessCommitWorker).
PUSHED = "cross_references.pushed"
# At most this many of a push's commits are read, newest first (GitLab's limit).
MAX_PUSHED_COMMITS = 100

# A reference's kind, as the noteable type its note hangs on.
_NOTEABLE = {references.ISSUE: ISSUE, references.MERGE_REQUEST: MERGE_REQUEST}
# How the mentioner is named: word and reference mark, by its noteable type.
_NAMED = {ISSUE: ("issue", "#"), MERGE_REQUEST: ("merge request", "!"), COMMIT: ("commit", "@")}


def text_of(title: str | None, description: str | None) -> str:
    """What of an issue or merge request names others: its title and its description."""
    return "\n\n".join(part for part in (title, description) if part)


def record_issuable(
    db: Session,
    actor: Actor,
    kind: str,
    issuable: Any,
    subject: ProjectSubject,
    previous_text: str | None = None,
) -> None:
    """`record` for an issue or merge request (`kind`) as its title and description now
    read; `previous_text`: its `text_of` before the change."""
    text = text_of(issuable.title, issuable.description)
    record(
        db,
        actor,
        text,
        kind=kind,
        target_id=issuable.id,
        iid=issuable.iid,
        subject=subject,
        previous_text=previous_text,
    )


def record(
    db: Session,
    actor: Actor,
    text: str | None,
    *,
    kind: str,
    target_id: int | None,
    iid: int | str,
    subject: ProjectSubject,
    previous_text: str | None = None,
    leaving_out: frozenset[int] = frozenset(),
) -> None:
    """Note on each issue and merge request `text` newly names that it was mentioned in the
    `kind` (noteable type) `target_id` of project `subject` (a commit: `iid` is its sha);
    not on the issues `leaving_out` (those a commit has just closed)."""
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
        iid=iid if kind != COMMIT else "",
        project_id=project.id,
        project_path=f"{namespace.full_path}/{project.path}",
        namespace_id=namespace.id,
    )
    wanted: dict[tuple[str, int, str], int] = {}
    named = references.References(db, actor, "", project=subject).named((ref.kind, ref.key) for ref in refs)
    for ref_kind, where, row in named:
        noteable_type = _NOTEABLE[ref_kind]
        if (noteable_type, row.id) == (kind, target_id) or (noteable_type == ISSUE and row.id in leaving_out):
            continue
        there = where.subject.project
        seen_from = Context(project_id=there.id, namespace_id=there.namespace_id)
        reference = references_of(mark, mentioner, seen_from)["relative"]
        if kind == COMMIT:  # a commit is its sha in its own project, path@sha elsewhere
            reference = str(iid) if reference == mark else f"{reference}{iid}"
        body = f"mentioned in {word} {reference}"
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


def names_anything(message: str) -> bool:
    """Whether a commit's message may name an issue or merge request (a reference, or an
    issue's URL, which closes as `#1` does): a push whose new commits name nothing queues no
    job."""
    return "/issues/" in message or any(ref.kind in _NOTEABLE for ref in references.scan(message))


def enqueue_for_push(
    db: Session, project_id: int, actor: Actor | None, ref: str, before: str, after: str
) -> None:
    """Queue what a branch update's new commits name (tags and deletions bring none)."""
    if after == ZERO or not ref.startswith("refs/heads/"):
        return
    pipeline_creation.enqueue_push_job(db, PUSHED, project_id, actor, ref, before, after, ())


@jobs.handler(PUSHED)
def _pushed(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """Each new commit, oldest first, as its author (the user of its author's address, else
    the pusher): on the default branch it closes what it says it closes (issues.close_by_commit);
    what else it names is noted as mentioned in it."""
    from kiln.services import issues, repositories

    db, settings = ctx.db, ctx.settings
    project = db.get(Project, int(payload["project_id"]))
    repo = repositories.store(settings).find(project.id) if project is not None else None
    if project is None or repo is None:
        return
    ref = str(payload["ref"])
    before, after = str(payload.get("before") or ZERO), str(payload.get("after") or ZERO)
    pusher = pipeline_creation.job_actor(db, payload.get("user_id"))
    default = ref == f"refs/heads/{project.default_branch}"
    for commit in reversed(repositories.new_commits(repo, ref, before, after, MAX_PUSHED_COMMITS)):
        if not names_anything(commit.message):
            continue
        author_id = user_finder.id_by_email(db, commit.author.email)
        author = pipeline_creation.job_actor(db, author_id) if author_id is not None else pusher
        s = subjects.find_project(db, author, str(project.id), rows=True) if author is not None else None
        if author is None or s is None:
            continue
        closed = issues.close_by_commit(db, author, settings, s, commit) if default else []
        record(
            db,
            author,
            commit.message,
            kind=COMMIT,
            target_id=None,
            iid=str(commit.id),
            subject=s,
            leaving_out=frozenset(closed),
        )
