"""Merge request pipelines (GitLab's detached merge request pipelines): made when a merge
request is opened or its source branch is pushed, and on request, for its head as kept in
the target repository (`refs/merge-requests/<iid>/head`), with source
`merge_request_event`. Only jobs whose rules admit that source run; a configuration without
any makes no pipeline. The merge request's pipelines list reads them with the branch
pipelines of its heads."""

from __future__ import annotations

from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln import policy
from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.db import transaction
from kiln.models import MergeRequest, Project
from kiln.models.ci import Pipeline
from kiln.models.merge_requests import OPENED
from kiln.models.projects import DISABLED
from kiln.pagination import Page, PageResult
from kiln.policy import Action
from kiln.queries import merge_request_pipelines as reads
from kiln.queries import pipelines as pipeline_reads
from kiln.queries import users as user_finder
from kiln.services import ci_predefined, merge_request_diffs, pipeline_creation, repositories, subjects
from kiln.services.pipelines import Detail

SOURCE = "merge_request_event"
# GitLab's detached merge request pipeline (no merged results, no merge train).
DETACHED = "detached"
PREFIX = "refs/merge-requests/"


def variables(db: Session, settings: Settings, mr: MergeRequest) -> dict[str, str]:
    """The CI_MERGE_REQUEST_* variables of a merge request pipeline (GitLab's
    Ci::Pipeline#merge_request_variables for a detached pipeline), and its ref name: the
    source branch."""
    base = settings.external_url.rstrip("/")
    found = reads.facts(db, mr)
    out = {
        "CI_MERGE_REQUEST_ID": str(mr.id),
        "CI_MERGE_REQUEST_IID": str(mr.iid),
        "CI_MERGE_REQUEST_REF_PATH": merge_request_diffs.head_ref(mr.iid),
        "CI_MERGE_REQUEST_PROJECT_ID": str(mr.project_id),
        "CI_MERGE_REQUEST_PROJECT_PATH": found.target_path,
        "CI_MERGE_REQUEST_PROJECT_URL": f"{base}/{found.target_path}",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": mr.target_branch,
        "CI_MERGE_REQUEST_TARGET_BRANCH_PROTECTED": "false",
        "CI_MERGE_REQUEST_TARGET_BRANCH_SHA": "",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": str(mr.source_project_id or ""),
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": found.source_path,
        "CI_MERGE_REQUEST_SOURCE_PROJECT_URL": f"{base}/{found.source_path}",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": mr.source_branch,
        "CI_MERGE_REQUEST_SOURCE_BRANCH_PROTECTED": "false",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "",
        "CI_MERGE_REQUEST_TITLE": mr.title,
        "CI_MERGE_REQUEST_DRAFT": "true" if mr.draft else "false",
        "CI_MERGE_REQUEST_EVENT_TYPE": DETACHED,
        "CI_COMMIT_REF_NAME": mr.source_branch,
        "CI_COMMIT_REF_SLUG": ci_predefined.slug(mr.source_branch),
    }
    if found.diff_base_sha:
        out["CI_MERGE_REQUEST_DIFF_BASE_SHA"] = found.diff_base_sha
    if found.diff_id is not None:
        out["CI_MERGE_REQUEST_DIFF_ID"] = str(found.diff_id)
    if found.labels:
        out["CI_MERGE_REQUEST_LABELS"] = ",".join(found.labels)
    if found.assignees:
        out["CI_MERGE_REQUEST_ASSIGNEES"] = ",".join(found.assignees)
    if found.milestone:
        out["CI_MERGE_REQUEST_MILESTONE"] = found.milestone
    return out


def job_variables(db: Session, settings: Settings, pipeline: Pipeline) -> list[dict[str, Any]]:
    """A merge request pipeline's variables in the runner's shape (none for other pipelines);
    they come after the predefined ones, so the source branch is the job's ref name."""
    if pipeline.merge_request_id is None:
        return []
    mr = db.get(MergeRequest, pipeline.merge_request_id)
    if mr is None:
        return []
    return [ci_predefined.variable(k, v) for k, v in variables(db, settings, mr).items()]


def create(
    db: Session, settings: Settings, actor: Actor | None, mr: MergeRequest, *, save_on_errors: bool = True
) -> Pipeline:
    """A merge request pipeline for the merge request's head, in the target project (refused,
    nothing written, as pipeline_creation refuses: no configuration, no job admitting
    merge request events, …). `rules: changes` compare with the diff base."""
    project = db.get(Project, mr.project_id)
    repo = repositories.store(settings).find(mr.project_id)
    if project is None or repo is None or not mr.head_sha:
        raise pipeline_creation.Refused(pipeline_creation.REFERENCE_NOT_FOUND)
    try:
        commit = repo[mr.head_sha].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise pipeline_creation.Refused(pipeline_creation.REFERENCE_NOT_FOUND) from None
    ref = merge_request_diffs.head_ref(mr.iid)
    extra: dict[str, str | None] = {**variables(db, settings, mr), "CI_COMMIT_BRANCH": None}
    return pipeline_creation.create(
        db,
        settings,
        project=project,
        ref=ref,
        source=SOURCE,
        actor=actor,
        sha=mr.head_sha,
        target=pipeline_creation.Target(ref=ref, tag=False, protected=False, commit=commit),
        merge_request_id=mr.id,
        extra_variables=extra,
        compare_to=extra.get("CI_MERGE_REQUEST_DIFF_BASE_SHA"),
        save_on_errors=save_on_errors,
    )


def create_quietly(db: Session, settings: Settings, actor: Actor | None, mr: MergeRequest) -> Pipeline | None:
    """The pipeline an opened or pushed merge request gets, when its configuration has jobs
    for merge request events (None otherwise, or while CI is off for the project). None for
    a merge request from a fork: its code would run with the target project's variables and
    runners, which GitLab leaves to a target member's explicit request (POST …/pipelines);
    GitLab runs it in the fork instead, which kiln does not."""
    if mr.source_project_id != mr.project_id:
        return None
    project = db.get(Project, mr.project_id)
    if project is None or project.builds_access_level == DISABLED or mr.state != OPENED:
        return None
    try:
        # Every refusal comes before anything is written: the caller's transaction stays clean.
        return create(db, settings, actor, mr)
    except pipeline_creation.Refused:
        return None


# ----------------------------------------------------------------------------- routes


def list_pipelines(db: Session, actor: Actor | None, ident: str, iid: int, page: Page) -> PageResult:
    """The merge request's pipelines, newest first (PipelineRow); 403 for those who may read
    the merge request but not the project's pipelines."""
    s = subjects.merge_request(db, actor, ident, iid)
    policy.require(actor, Action.READ_PIPELINE, s.project)
    return reads.page_of(db, s.merge_request, page)


def create_pipeline(db: Session, settings: Settings, actor: Actor, ident: str, iid: int) -> Detail:
    """POST …/pipelines: a merge request pipeline now (Developers of the target project); a
    configuration without jobs for merge request events, or an invalid one, is GitLab's 400
    and no pipeline."""
    with transaction(db):
        s = subjects.merge_request(db, actor, ident, iid, Action.CREATE_PIPELINE)
        pipeline_id = create(db, settings, actor, s.merge_request, save_on_errors=False).id
    row = pipeline_reads.row_of(db, s.project.project.id, pipeline_id)
    assert row is not None
    user = user_finder.row_by_id(db, row.user_id) if row.user_id is not None else None
    return Detail(row, user, pipeline_reads.coverage_of(db, row.id), False)
