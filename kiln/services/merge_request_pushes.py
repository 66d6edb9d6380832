"""`git push -o merge_request.*` (GitLab's push options for merge requests): after a branch
push, open a merge request for the branch (`merge_request.create`) or change the open one
(target, title, description, draft, labels, assignees, milestone, source branch removal,
merge when the pipeline succeeds). Runs in the push's refresh job
(kiln.services.merge_request_diffs); opening and changing go through the merge request
services, as through the API. What they refuse is left undone, as GitLab reports it to the
pusher and carries on."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import KilnError
from kiln.git import diffs as git_diffs
from kiln.git.refs import branch_tip
from kiln.models import MergeRequest, Project
from kiln.models.merge_requests import OPENED, draft_title
from kiln.queries import merge_request_pushes as reads
from kiln.queries import merge_requests as mr_finder
from kiln.schemas.merge_requests import MergeRequestCreate, MergeRequestUpdate
from kiln.services import repositories

log = logging.getLogger(__name__)

# The namespaces GitLab reads (`mr.` is its short form) and the keys that may repeat.
_NAMESPACES = ("merge_request.", "mr.")
_MULTIPLE = ("label", "unlabel", "assign", "unassign")


@dataclass(slots=True)
class Options:
    """The merge request push options of one push."""

    create: bool = False
    target: str | None = None
    title: str | None = None
    description: str | None = None
    draft: bool = False
    auto_merge: bool = False
    remove_source_branch: bool = False
    milestone: str | None = None
    label: list[str] = field(default_factory=list)
    unlabel: list[str] = field(default_factory=list)
    assign: list[str] = field(default_factory=list)
    unassign: list[str] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return self != Options()


def _unquoted(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def parse(push_options: list[str]) -> Options:
    """The merge request options among a push's (`merge_request.key` or `key=value`); the
    last value of a key wins, except labels and assignees, which add up."""
    out = Options()
    for option in push_options:
        name, has_value, raw = option.partition("=")
        name = name.strip()
        namespace = next((n for n in _NAMESPACES if name.startswith(n)), None)
        if namespace is None:
            continue
        key = name[len(namespace) :]
        value = _unquoted(raw) if has_value else None
        if key in _MULTIPLE:
            if value:
                getattr(out, key).append(value)
        elif key == "create":
            out.create = True
        elif key == "draft":
            out.draft = value is None or value.lower() != "false"
        elif key in ("merge_when_pipeline_succeeds", "auto_merge"):
            out.auto_merge = value is None or value.lower() != "false"
        elif key == "remove_source_branch":
            out.remove_source_branch = value is None or value.lower() != "false"
        elif key in ("target", "title", "description", "milestone") and value is not None:
            setattr(out, key, value)
    return out


def apply(
    db: Session,
    settings: Settings,
    actor: Actor | None,
    project_id: int,
    branch: str,
    push_options: list[str],
) -> None:
    """Act on a push's merge request options (nothing without any, or without a pusher)."""
    options = parse(push_options)
    if actor is None or not options.any:
        return
    project = db.get(Project, project_id)
    if project is None:
        return
    target_project_id = project.forked_from_id or project.id
    existing = reads.open_for_branch(db, project_id, branch)
    try:
        if existing is None:
            if options.create:
                _create(db, settings, actor, project, target_project_id, branch, options)
            return
        _update(db, settings, actor, existing, options)
    except KilnError as refused:
        log.info("push options for %s of project %s refused: %s", branch, project_id, refused)


def _title(settings: Settings, project: Project, target_project_id: int, branch: str, target: str) -> str:
    """GitLab's default: the commit's title when the branch adds one commit, else the branch
    name made readable."""
    store = repositories.store(settings)
    try:
        repo = store.open(project.id)
        head = branch_tip(repo, branch)
        start = branch_tip(store.open(target_project_id), target)
        if head is not None and start is not None and repo.get(start) is not None:
            commits = git_diffs.commits_between(repo, start, head)
            if len(commits) == 1:
                return commits[0].message.split("\n", 1)[0].strip() or branch
    except (KeyError, OSError, pygit2.GitError):
        pass
    words = branch.replace("-", " ").replace("_", " ").strip()
    return words[:1].upper() + words[1:].lower() if words else branch


def _create(
    db: Session,
    settings: Settings,
    actor: Actor,
    project: Project,
    target_project_id: int,
    branch: str,
    options: Options,
) -> None:
    from kiln.services import merge_requests  # it imports merges, which imports this module

    target_branch = options.target or reads.default_branch(db, target_project_id) or "main"
    title = options.title or _title(settings, project, target_project_id, branch, target_branch)
    if options.draft:
        title = f"Draft: {title}"
    body: dict[str, Any] = {
        "id": str(project.id),
        "source_branch": branch,
        "target_branch": target_branch,
        "title": title,
    }
    if target_project_id != project.id:
        body["target_project_id"] = target_project_id
    if options.description is not None:
        body["description"] = options.description
    if options.label:
        body["labels"] = ",".join(options.label)
    if options.assign:
        body["assignee_ids"] = reads.user_ids(db, options.assign)
    if options.milestone:
        milestone = reads.milestone_id(db, target_project_id, options.milestone)
        if milestone is not None:
            body["milestone_id"] = milestone
    if options.remove_source_branch:
        body["remove_source_branch"] = True
    merge_requests.create_merge_request(db, actor, settings, MergeRequestCreate.model_validate(body))
    mr = reads.open_for_branch(db, project.id, branch)
    if mr is not None and options.auto_merge:
        _auto_merge(db, settings, actor, mr)


def _update(db: Session, settings: Settings, actor: Actor, mr: MergeRequest, options: Options) -> None:
    from kiln.services import merge_requests

    body: dict[str, Any] = {"id": str(mr.project_id), "merge_request_iid": mr.iid}
    title = options.title if options.title is not None else None
    if options.draft:
        base = title if title is not None else mr.title
        title = base if draft_title(base) else f"Draft: {base}"
    if title is not None:
        body["title"] = title
    if options.description is not None:
        body["description"] = options.description
    if options.target is not None:
        body["target_branch"] = options.target
    if options.label:
        body["add_labels"] = ",".join(options.label)
    if options.unlabel:
        body["remove_labels"] = ",".join(options.unlabel)
    if options.assign or options.unassign:
        current = reads.assignee_ids(db, mr.id)
        gone = set(reads.user_ids(db, options.unassign))
        wanted = [i for i in current if i not in gone]
        wanted += [i for i in reads.user_ids(db, options.assign) if i not in wanted]
        body["assignee_ids"] = wanted
    if options.milestone:
        milestone = reads.milestone_id(db, mr.project_id, options.milestone)
        if milestone is not None:
            body["milestone_id"] = milestone
    if options.remove_source_branch:
        body["remove_source_branch"] = True
    if len(body) > 2:
        merge_requests.update_merge_request(db, actor, settings, MergeRequestUpdate.model_validate(body))
    if options.auto_merge:
        _auto_merge(db, settings, actor, mr)


def _auto_merge(db: Session, settings: Settings, actor: Actor, mr: MergeRequest) -> None:
    """Merge when the pipeline succeeds, set as GitLab's push option sets it: at once, whether
    or not the push's pipeline exists yet (it is made by another job)."""
    from kiln.services import merges

    with transaction(db):
        locked = mr_finder.locked(db, mr.id)
        if locked is not None and locked.state == OPENED:
            merges.enable_auto_merge(db, actor, locked)
