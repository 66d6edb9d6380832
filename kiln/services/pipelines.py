"""The pipelines API: a project's pipelines with GitLab's filters, one pipeline, the latest of
a ref, its variables and test report; creating one (kiln.services.pipeline_creation), retry,
cancel (kiln.services.pipeline_processing moves the statuses), renaming and deleting.

Reading takes GitLab's read_pipeline (Reporters, or anyone who sees the project when its
pipelines are public); creating, retrying and cancelling a Developer who may also push to the
ref when it is protected; a pipeline's variables its Developers or the user who ran it;
deleting an Owner. Deleting removes the pipeline's jobs and their stored logs and artifacts."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kiln import policy, storage
from kiln.auth.actor import Actor
from kiln.auth.sealing import SealError, unseal
from kiln.config import Settings
from kiln.db import transaction
from kiln.errors import Forbidden, NotFound
from kiln.git import branches as git_refs
from kiln.models.ci import CiJob, JobArtifact, Pipeline, PipelineVariable
from kiln.pagination import Page, PageResult
from kiln.policy import Action, ProjectSubject
from kiln.queries import pipelines as finder
from kiln.queries import users as user_finder
from kiln.queries.pipelines import Filters, PipelineRow, VariableRow
from kiln.queries.users import UserRow
from kiln.schemas.pipelines import PipelineCreate, PipelineList
from kiln.services import pipeline_creation, pipeline_processing, repositories, subjects

# A pipeline that is not the project's: GitLab's RecordNotFound answer.
PIPELINE_NOT_FOUND = "404 Not found"


@dataclass(slots=True)
class Detail:
    """A pipeline with what its detail view shows beside its own columns."""

    row: PipelineRow
    user: UserRow | None
    coverage: float | None
    warnings: bool = False


def _readable(db: Session, actor: Actor | None, ident: str) -> ProjectSubject:
    return subjects.project(db, actor, ident, Action.READ_PIPELINE, rows=True)


def _row(db: Session, s: ProjectSubject, pipeline_id: int) -> PipelineRow:
    row = finder.row_of(db, s.project.id, pipeline_id)
    if row is None:
        raise NotFound(message=PIPELINE_NOT_FOUND)
    return row


def _detail(db: Session, row: PipelineRow) -> Detail:
    user = user_finder.row_by_id(db, row.user_id) if row.user_id is not None else None
    warnings = row.status == "success" and finder.has_warnings(db, row.id)
    return Detail(row, user, finder.coverage_of(db, row.id), warnings)


def _may_write_ref(db: Session, actor: Actor, s: ProjectSubject, ref: str, tag: bool) -> bool:
    """A protected branch's pipelines are changed only by those who may push to it."""
    if tag:
        return True
    return repositories.protection_for(db, s.project.id, ref) is None or repositories.may_push(
        db, actor, s, ref
    )


# ----------------------------------------------------------------------------- reading


def list_pipelines(
    db: Session, actor: Actor | None, q: PipelineList, page: Page, settings: Settings
) -> PageResult:
    """The project's pipelines, newest first unless asked otherwise. The `branches` and `tags`
    scopes hold the newest pipeline of each branch or tag the repository has."""
    s = _readable(db, actor, q.id)
    refs: list[str] = []
    if q.scope in ("branches", "tags"):
        repo = repositories.store(settings).find(s.project.id)
        if repo is not None:
            found = git_refs.list_branches(repo) if q.scope == "branches" else git_refs.list_tags(repo)
            refs = [r.name for r in found]
    filters = Filters(
        scope=q.scope,
        status=q.status,
        ref=q.ref,
        sha=q.sha,
        yaml_errors=q.yaml_errors,
        source=q.source,
        name=q.name,
        username=q.username,
        updated_after=q.updated_after,
        updated_before=q.updated_before,
        created_after=q.created_after,
        created_before=q.created_before,
        refs=refs,
        order_by=q.order_by,
        sort=q.sort,
    )
    return finder.page_of_project(db, s.project.id, filters, page)


def get_pipeline(db: Session, actor: Actor | None, ident: str, pipeline_id: int) -> Detail:
    s = _readable(db, actor, ident)
    return _detail(db, _row(db, s, pipeline_id))


def latest_pipeline(
    db: Session, actor: Actor | None, ident: str, ref: str | None, settings: Settings
) -> Detail:
    """The newest pipeline of the ref's current commit (the default branch when no ref is
    given), as GitLab's Project#latest_pipeline finds it; 403 when there is none, as GitLab
    answers."""
    s = _readable(db, actor, ident)
    name = ref or s.project.default_branch
    repo = repositories.store(settings).find(s.project.id)
    if not name or repo is None:
        raise Forbidden()
    branch = git_refs.find_branch(repo, name)
    commit = branch.commit if branch is not None else None
    if commit is None:
        tag = git_refs.find_tag(repo, name)
        commit = tag.commit if tag is not None else None
    row = finder.latest_for_sha(db, s.project.id, str(commit.id), name) if commit is not None else None
    if row is None:
        # GitLab authorizes reading a pipeline that is not there: a 403.
        raise Forbidden()
    return _detail(db, row)


def variables(
    db: Session, actor: Actor | None, ident: str, pipeline_id: int, settings: Settings
) -> list[tuple[VariableRow, str]]:
    """A pipeline's variables with their values: for its Developers and the user who ran it
    (GitLab's read_pipeline_variable)."""
    s = _readable(db, actor, ident)
    row = _row(db, s, pipeline_id)
    if not policy.may_read_pipeline_variables(actor, s, row.user_id):
        raise Forbidden()
    out = []
    for v in finder.variables_of(db, row.id):
        try:
            value = unseal(settings, v.value)
        except SealError:
            value = ""
        out.append((v, value))
    return out


def test_report(db: Session, actor: Actor | None, ident: str, pipeline_id: int) -> PipelineRow:
    """The pipeline whose (empty) test report is shown."""
    s = _readable(db, actor, ident)
    return _row(db, s, pipeline_id)


# ----------------------------------------------------------------------------- changing


def create_pipeline(db: Session, actor: Actor, p: PipelineCreate, settings: Settings) -> Detail:
    """A pipeline for `ref`, made as the API makes one: an invalid configuration, a missing
    one, a ref that does not exist, or workflow rules that leave nothing are 400s and write
    nothing."""
    s = subjects.project(db, actor, p.id, Action.CREATE_PIPELINE)
    name, is_tag = pipeline_creation.short_ref(p.ref)
    if not _may_write_ref(db, actor, s, name, bool(is_tag)):
        raise pipeline_creation.Refused(pipeline_creation.PROTECTED_REF)
    given = [v.model_dump() for v in p.variables]
    with transaction(db):
        pipeline = pipeline_creation.create(
            db,
            settings,
            project=s.project,
            ref=p.ref,
            source="api",
            actor=actor,
            variables=given,
            save_on_errors=False,
        )
        pipeline_id = pipeline.id
    return _detail(db, _row(db, s, pipeline_id))


def _writable(
    db: Session, actor: Actor, ident: str, pipeline_id: int, action: Action
) -> tuple[ProjectSubject, Pipeline]:
    s = subjects.project(db, actor, ident, Action.READ_PIPELINE)
    pipeline = db.scalars(
        select(Pipeline).where(Pipeline.id == pipeline_id, Pipeline.project_id == s.project.id)
    ).first()
    if pipeline is None:
        raise NotFound(message=PIPELINE_NOT_FOUND)
    policy.require(actor, action, s)
    if action is Action.UPDATE_PIPELINE and not _may_write_ref(db, actor, s, pipeline.ref, pipeline.tag):
        raise Forbidden()
    return s, pipeline


def retry(db: Session, actor: Actor, ident: str, pipeline_id: int) -> Detail:
    """Failed and canceled jobs run again (a copy each); the jobs they skipped wait again."""
    s, pipeline = _writable(db, actor, ident, pipeline_id, Action.UPDATE_PIPELINE)
    with transaction(db):
        pipeline_processing.retry_pipeline(db, pipeline, actor=actor)
    return _detail(db, _row(db, s, pipeline_id))


def cancel(db: Session, actor: Actor, ident: str, pipeline_id: int) -> Detail:
    """Every job that may still be canceled is; a finished pipeline stays as it is."""
    s, pipeline = _writable(db, actor, ident, pipeline_id, Action.UPDATE_PIPELINE)
    with transaction(db):
        pipeline_processing.cancel_pipeline(db, pipeline, actor=actor)
    return _detail(db, _row(db, s, pipeline_id))


def update_metadata(db: Session, actor: Actor, ident: str, pipeline_id: int, name: str) -> Detail:
    """The pipeline's name."""
    s, pipeline = _writable(db, actor, ident, pipeline_id, Action.UPDATE_PIPELINE)
    with transaction(db):
        pipeline.name = name
    return _detail(db, _row(db, s, pipeline_id))


def delete_pipeline(db: Session, actor: Actor, ident: str, pipeline_id: int, settings: Settings) -> None:
    """The pipeline, its variables, its jobs and their artifacts' rows; then the jobs' stored
    logs and artifacts (after the commit: a failed delete removes no file)."""
    s, pipeline = _writable(db, actor, ident, pipeline_id, Action.DESTROY_PIPELINE)
    project_id: int = s.project.id
    with transaction(db):
        job_ids = finder.job_ids_of(db, pipeline.id)
        if job_ids:
            db.execute(delete(JobArtifact).where(JobArtifact.job_id.in_(job_ids)))
        db.execute(delete(CiJob).where(CiJob.pipeline_id == pipeline.id))
        db.execute(delete(PipelineVariable).where(PipelineVariable.pipeline_id == pipeline.id))
        db.delete(pipeline)
    files = storage.ci(settings)
    for job_id in job_ids:
        files.delete_prefix(storage.job_prefix(project_id, job_id))
