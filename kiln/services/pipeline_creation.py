"""Making a pipeline, as GitLab's Ci::CreatePipelineService makes one: the ref resolved, the
configuration read at the commit with what it may read (predefined, instance, group, project
and pipeline variables), planned by kiln.services.ci_yaml, then the pipeline, its variables
and its jobs written and processed once (kiln.services.pipeline_processing), inside the
caller's transaction.

Every refusal is decided before anything is written, so a caller that catches it (a push)
keeps its transaction clean. Refusals are GitLab's `{"message": {"base": [...]}}` errors.

Callers: the pipelines API (`source` "api", `save_on_errors` off: an invalid configuration is
a 400 and no pipeline), pushes (the `ci.create_pipeline` job below: an invalid configuration
is a failed pipeline with its `yaml_errors`; `[skip ci]` or `-o ci.skip` a skipped one),
schedules (`schedule_id`) and trigger tokens (`trigger_id`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2
import yaml
from sqlalchemy.orm import Session

from kiln import jobs, policy
from kiln.auth.actor import Actor
from kiln.auth.sealing import seal
from kiln.config import Settings
from kiln.errors import ValidationFailed
from kiln.git import branches as git_refs
from kiln.git import files as git_files
from kiln.git.refs import ZERO
from kiln.models import Namespace, Project
from kiln.models.ci import CiJob, Pipeline, PipelineVariable
from kiln.models.projects import DISABLED
from kiln.policy import Action
from kiln.queries import users as user_finder
from kiln.services import (
    ci_config,
    ci_predefined,
    ci_variables,
    ci_yaml,
    internal_ids,
    pipeline_processing,
    repositories,
    subjects,
)
from kiln.services.ci_yaml import JobPlan, PipelinePlan

CREATE_FROM_PUSH = "ci.create_pipeline"
PIPELINE_IIDS = "ci_pipelines"

REFERENCE_NOT_FOUND = "Reference not found"
MISSING_CONFIG = "Missing CI config file"
FILTERED = "Pipeline filtered out by workflow rules."
NO_JOBS = "No stages / jobs for this pipeline."
PROTECTED_REF = "Insufficient permissions for protected ref"
# GitLab's ci.skip push option and commit message markers.
SKIP_OPTION = "ci.skip"
VARIABLE_OPTION = "ci.variable"
_SKIP_MESSAGE = re.compile(r"\[(ci[ _-]skip|skip[ _-]ci)\]", re.IGNORECASE)
# A variable key breaking GitLab's rule (Ci::HasVariable; kiln.services.ci_variables.KEY_FORMAT).
BAD_KEY = "Variables key can contain only letters, digits and '_'."


class Refused(ValidationFailed):
    """No pipeline: GitLab's 400 `{"message": {"base": [reason, ...]}}`."""

    def __init__(self, *reasons: str) -> None:
        super().__init__({"base": list(reasons)})
        self.reasons = list(reasons)


@dataclass(frozen=True, slots=True)
class Target:
    """The ref a pipeline runs for and the commit it runs on."""

    ref: str
    tag: bool
    protected: bool
    commit: pygit2.Commit

    @property
    def sha(self) -> str:
        return str(self.commit.id)


def short_ref(ref: str) -> tuple[str, bool | None]:
    """`refs/heads/x` → ("x", False), `refs/tags/x` → ("x", True), a bare name → (name, None)."""
    if ref.startswith("refs/heads/"):
        return ref[len("refs/heads/") :], False
    if ref.startswith("refs/tags/"):
        return ref[len("refs/tags/") :], True
    return ref, None


def resolve(
    db: Session, repo: pygit2.Repository | None, project_id: int, ref: str, sha: str | None = None
) -> Target:
    """The branch (first) or tag named `ref`, protected as its rules say, at `sha` when given
    (a push's new tip) or the ref's tip."""
    name, is_tag = short_ref(ref)
    if repo is None or not name:
        raise Refused(REFERENCE_NOT_FOUND)
    commit: pygit2.Commit | None = None
    tag = False
    branch = git_refs.find_branch(repo, name) if is_tag is not True else None
    if branch is not None:
        commit = branch.commit
    else:
        found = git_refs.find_tag(repo, name) if is_tag is not False else None
        if found is not None and found.commit is not None:
            commit, tag = found.commit, True
    if commit is None:
        raise Refused(REFERENCE_NOT_FOUND)
    if sha is not None and sha != str(commit.id):
        try:
            commit = repo[sha].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            raise Refused(REFERENCE_NOT_FOUND) from None
    protected = not tag and repositories.protection_for(db, project_id, name) is not None
    return Target(ref=name, tag=tag, protected=protected, commit=commit)


# ----------------------------------------------------------------------------- configuration


def _message(commit: pygit2.Commit) -> str:
    return bytes(commit.raw_message).decode("utf-8", errors="replace")


def _blob_text(repo: pygit2.Repository, commit: pygit2.Commit, path: str) -> str | None:
    found = git_files.find_file(repo, commit, path)
    if found is None:
        return None
    data = repo[found.blob_id].data
    return bytes(data).decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class Config:
    """The configuration as read: its text (None: there is none), its path as configured
    (CI_CONFIG_PATH), or why another project's file could not be read (a configuration
    error, as GitLab reports an `include: project` it cannot read)."""

    text: str | None
    path: str
    error: str | None = None


def config_text(
    db: Session,
    settings: Settings,
    actor: Actor | None,
    project_id: int,
    repo: pygit2.Repository,
    commit: pygit2.Commit,
) -> Config:
    """The configuration at the commit. Another project's file is read at its ref (default
    branch when none is named) when the pipeline's user may read that project's code; a
    remote one becomes an `include: remote` the reader fetches."""
    where = ci_config.for_project(db, project_id)
    if where.kind == "repository":
        return Config(_blob_text(repo, commit, where.file or ci_config.DEFAULT_PATH), where.configured)
    if where.kind == "remote":
        return Config(yaml.safe_dump({"include": [{"remote": where.url}]}), where.configured)
    name, file = where.project or "", where.file or ""
    s = subjects.find_project(db, actor, name, rows=True)
    other = repositories.store(settings).find(s.project.id) if s is not None else None
    if s is None or other is None or not policy.may(actor, Action.READ_CODE, s):
        return Config(None, where.configured, f"Project `{name}` not found or access denied!")
    ref = where.ref or s.project.default_branch or "HEAD"
    try:
        at = other.revparse_single(ref).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return Config(None, where.configured, f"Project `{name}` reference `{ref}` does not exist!")
    text = _blob_text(other, at, file)
    if text is None:
        return Config(None, where.configured, f"Project `{name}` file `{file}` does not exist!")
    return Config(text, where.configured)


# ----------------------------------------------------------------------------- variables


def predefined(
    settings: Settings,
    project: Project,
    namespace: Namespace,
    target: Target,
    *,
    source: str,
    actor: Actor | None,
    before_sha: str,
    config_path: str,
    message: str,
) -> dict[str, str]:
    """The predefined variables a configuration's rules may read (GitLab's
    Ci::Variables::Builder for a pipeline being created)."""
    base = settings.external_url.rstrip("/")
    full_path = f"{namespace.full_path}/{project.path}"
    title, description = ci_predefined.commit_text(message)
    out = {v["key"]: v["value"] for v in ci_predefined.server_variables(settings)}
    out.update(
        ci_yaml.basic_variables(full_path, project.default_branch, target.ref, target.tag, source, target.sha)
    )
    out.update(
        {
            "CI_PROJECT_ID": str(project.id),
            "CI_PROJECT_TITLE": project.name,
            "CI_PROJECT_NAMESPACE_ID": str(namespace.id),
            "CI_PROJECT_ROOT_NAMESPACE": namespace.full_path.split("/", 1)[0],
            "CI_PROJECT_URL": f"{base}/{full_path}",
            "CI_PROJECT_VISIBILITY": project.visibility,
            "CI_CONFIG_PATH": config_path,
            "CI_COMMIT_BEFORE_SHA": before_sha,
            "CI_COMMIT_REF_PROTECTED": "true" if target.protected else "false",
            "CI_COMMIT_MESSAGE": message,
            "CI_COMMIT_TITLE": title,
            "CI_COMMIT_DESCRIPTION": description,
            "CI_COMMIT_TIMESTAMP": datetime.fromtimestamp(target.commit.commit_time, UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
            "CI_COMMIT_AUTHOR": f"{target.commit.author.name} <{target.commit.author.email}>",
        }
    )
    if source == "trigger":
        out["CI_PIPELINE_TRIGGERED"] = "true"
    if actor is not None:
        out.update(
            GITLAB_USER_ID=str(actor.id),
            GITLAB_USER_LOGIN=actor.user.username,
            GITLAB_USER_NAME=actor.user.name,
            GITLAB_USER_EMAIL=actor.user.email or "",
        )
    return out


def _given(variables: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pipeline variables as given, checked (GitLab's key rule); the last of a key wins."""
    kept: dict[str, dict[str, Any]] = {}
    for v in variables:
        key = str(v.get("key") or "")
        if not ci_variables.KEY_FORMAT.fullmatch(key):
            raise Refused(BAD_KEY)
        kept.pop(key, None)
        kept[key] = {
            "key": key,
            "value": "" if v.get("value") is None else str(v.get("value")),
            "variable_type": v.get("variable_type") or "env_var",
            "raw": bool(v.get("raw", False)),
        }
    return list(kept.values())


# ----------------------------------------------------------------------------- creation


def _job_row(
    pipeline: Pipeline, plan: JobPlan, global_vars: Sequence[dict[str, Any]], user_id: int | None
) -> CiJob:
    options = dict(plan.options)
    if plan.needs is not None:
        options["needs"] = [
            {"job": n.job, "artifacts": n.artifacts, "optional": n.optional} for n in plan.needs
        ]
    if plan.start_in is not None:
        options["start_in"] = plan.start_in
    own = {v["key"] for v in plan.variables}
    variables = [v for v in global_vars if v["key"] not in own] + list(plan.variables)
    return CiJob(
        pipeline_id=pipeline.id,
        project_id=pipeline.project_id,
        type=plan.type,
        name=plan.name,
        stage=plan.stage,
        stage_idx=plan.stage_idx,
        when=plan.when,
        allow_failure=plan.allow_failure,
        scheduling_type="dag" if plan.needs is not None else "stage",
        options=options,
        yaml_variables=variables,
        tag_list=list(plan.tags),
        ref=pipeline.ref,
        sha=pipeline.sha,
        tag=pipeline.tag,
        protected=pipeline.protected,
        user_id=user_id,
    )


def _plan(
    db: Session,
    settings: Settings,
    project: Project,
    namespace: Namespace,
    repo: pygit2.Repository,
    target: Target,
    text: str,
    *,
    source: str,
    actor: Actor | None,
    given: list[dict[str, Any]],
    before_sha: str,
    config_path: str,
    message: str,
    extra: dict[str, str | None] | None = None,
    compare_to: str | None = None,
) -> PipelinePlan:
    variables = predefined(
        settings,
        project,
        namespace,
        target,
        source=source,
        actor=actor,
        before_sha=before_sha,
        config_path=config_path,
        message=message,
    )
    # A merge request pipeline's own variables (None: a variable it does not have).
    for key, value in (extra or {}).items():
        if value is None:
            variables.pop(key, None)
        else:
            variables[key] = value
    for v in ci_variables.for_pipeline(
        db,
        settings,
        project_id=project.id,
        namespace_ids=namespace.ancestor_ids if namespace.is_group else [],
        protected_ref=target.protected,
        environment=None,
    ):
        variables[v["key"]] = v["value"]
    for v in given:
        variables[v["key"]] = v["value"]
    ctx = ci_yaml.commit_context(
        repo,
        target.sha,
        variables=variables,
        ref=target.ref,
        tag=target.tag,
        source=source,
        before_sha=compare_to or before_sha,
        max_includes=150,
    )
    return ci_yaml.plan_pipeline(text, ctx)


def create(
    db: Session,
    settings: Settings,
    *,
    project: Project,
    ref: str,
    source: str,
    actor: Actor | None,
    variables: Iterable[dict[str, Any]] = (),
    sha: str | None = None,
    before_sha: str | None = None,
    schedule_id: int | None = None,
    trigger_id: int | None = None,
    commit_message: str | None = None,
    save_on_errors: bool = True,
    skip: bool = False,
    target: Target | None = None,
    merge_request_id: int | None = None,
    extra_variables: dict[str, str | None] | None = None,
    compare_to: str | None = None,
) -> Pipeline:
    """A new pipeline of `project` for `ref`, inside the caller's transaction, processed once
    (its first jobs pending). Refused (nothing written) when the ref or the configuration is
    missing, workflow rules filter it out, it has no job, or (`save_on_errors` off) the
    configuration is invalid. `skip`: a skipped pipeline without jobs ([skip ci]).
    `commit_message`: the head commit's message when the caller read it (a push), else it
    is read from the commit. A merge request pipeline (kiln.services.merge_request_pipelines)
    gives its `target` (the merge request's head ref), `merge_request_id`, its variables and
    the commit `rules: changes` compare with (the merge request's diff base)."""
    namespace = db.get(Namespace, project.namespace_id)
    assert namespace is not None
    repo = repositories.store(settings).find(project.id)
    target = target or resolve(db, repo, project.id, ref, sha)
    assert repo is not None
    given = _given(variables)
    config = config_text(db, settings, actor, project.id, repo, target.commit)
    if config.text is None and config.error is None:
        raise Refused(MISSING_CONFIG)
    config_path = config.path
    before = before_sha or ZERO
    # GitLab's order: the configuration is read (its errors fail the pipeline), then a
    # requested skip wins over workflow rules and the jobs.
    if config.text is None:
        plan = PipelinePlan(errors=[config.error or MISSING_CONFIG])
    else:
        plan = _plan(
            db,
            settings,
            project,
            namespace,
            repo,
            target,
            config.text,
            source=source,
            actor=actor,
            given=given,
            before_sha=before,
            config_path=config_path,
            message=commit_message if commit_message is not None else _message(target.commit),
            extra=extra_variables,
            compare_to=compare_to,
        )
    if plan.errors:
        if not save_on_errors:
            raise Refused(plan.errors[0])
        skip = False
    elif not skip and plan.filtered:
        raise Refused(FILTERED)
    elif not skip and not plan.jobs:
        raise Refused(NO_JOBS)
    pipeline = Pipeline(
        iid=internal_ids.next_iid(db, PIPELINE_IIDS, project.id),
        project_id=project.id,
        ref=target.ref,
        sha=target.sha,
        before_sha=before,
        tag=target.tag,
        protected=target.protected,
        source=source,
        config_path=config_path,
        user_id=actor.id if actor is not None else None,
        schedule_id=schedule_id,
        trigger_id=trigger_id,
        merge_request_id=merge_request_id,
        committed_at=datetime.fromtimestamp(target.commit.commit_time, UTC),
        name=plan.name,
    )
    if plan.errors:
        # GitLab keeps the first error (Chain::Config::Process).
        pipeline.yaml_errors = plan.errors[0]
        pipeline.failure_reason = "config_error"
    db.add(pipeline)
    db.flush()
    for v in given:
        db.add(
            PipelineVariable(
                pipeline_id=pipeline.id,
                key=v["key"],
                value=seal(settings, v["value"]),
                variable_type=v["variable_type"],
                raw=v["raw"],
            )
        )
    if not plan.errors and not skip:
        user_id = actor.id if actor is not None else None
        for job in plan.jobs:
            db.add(_job_row(pipeline, job, plan.variables, user_id))
    db.flush()
    pipeline_processing.record_pipeline_event(
        db,
        pipeline,
        "pipeline_created",
        actor=actor,
        previous=None,
        extra={"sha": pipeline.sha, "source": source},
    )
    # A job-less pipeline composes as skipped ([skip ci]), or failed with its yaml_errors.
    pipeline_processing.process(db, pipeline.id, actor=actor)
    return pipeline


# ----------------------------------------------------------------------------- pushes


def skip_requested(message: str, push_options: Iterable[str]) -> bool:
    """`git push -o ci.skip`, or `[skip ci]` / `[ci skip]` in the head commit's message."""
    return any(o.strip() == SKIP_OPTION for o in push_options) or bool(_SKIP_MESSAGE.search(message))


def push_variables(push_options: Iterable[str]) -> list[dict[str, Any]]:
    """`git push -o ci.variable="KEY=value"`: variables of the push's pipeline."""
    out = []
    for option in push_options:
        name, sep, rest = option.partition("=")
        if name.strip() != VARIABLE_OPTION or not sep:
            continue
        key, has_value, value = rest.partition("=")
        if has_value and key:
            out.append({"key": key, "value": value})
    return out


def enqueue_for_push(
    db: Session,
    project_id: int,
    actor: Actor | None,
    ref: str,
    before: str,
    after: str,
    push_options: Sequence[str] = (),
) -> None:
    """Queue the pipeline of one ref update (branches and tags, not deletions)."""
    if after == ZERO or not ref.startswith(("refs/heads/", "refs/tags/")):
        return
    enqueue_push_job(db, CREATE_FROM_PUSH, project_id, actor, ref, before, after, push_options)


def enqueue_push_job(
    db: Session,
    kind: str,
    project_id: int,
    actor: Actor | None,
    ref: str,
    before: str,
    after: str,
    push_options: Sequence[str],
) -> None:
    """Queue job `kind` with what a job acting on one ref update is given (this module's
    pipeline, kiln.services.merge_request_diffs' merge request refresh); the pusher comes
    back through job_actor."""
    jobs.enqueue(
        db,
        kind,
        {
            "project_id": project_id,
            "ref": ref,
            "before": before,
            "after": after,
            "user_id": actor.id if actor is not None else None,
            "push_options": list(push_options),
        },
    )


def job_actor(db: Session, user_id: Any) -> Actor | None:
    """The user a job acts for (the pusher), as an actor; None when gone."""
    if user_id is None:
        return None
    user = user_finder.row_by_id(db, int(user_id))
    return Actor(user=user, via="session", scopes=None) if user is not None else None


@jobs.handler(CREATE_FROM_PUSH)
def _create_from_push(ctx: jobs.JobContext, payload: dict[str, Any]) -> None:
    """A push's pipeline, source `push`: none without a configuration or when the ref is gone;
    a skipped one when the push asked so; `-o ci.variable=K=v` variables given to it."""
    db = ctx.db
    project = db.get(Project, int(payload["project_id"]))
    repo = repositories.store(ctx.settings).find(project.id) if project is not None else None
    if project is None or repo is None or project.builds_access_level == DISABLED:
        return
    after = str(payload["after"])
    try:
        commit = repo[after].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return
    actor = job_actor(db, payload.get("user_id"))
    message = _message(commit)
    options = [str(o) for o in payload.get("push_options") or []]
    skip = skip_requested(message, options)
    try:
        create(
            db,
            ctx.settings,
            project=project,
            ref=str(payload["ref"]),
            source="push",
            actor=actor,
            sha=after,
            before_sha=str(payload.get("before") or ZERO),
            commit_message=message,
            skip=skip,
            variables=push_variables(options),
        )
    except Refused:
        return
