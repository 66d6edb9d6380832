"""The CI Lint API: a configuration sent in (`POST`, Developers: GitLab's create_pipeline) or
the project's own at a commit (`GET`, whoever reads its code), read as pipeline creation reads
it. A static check lists every job; a dry run (`dry_run`) evaluates `workflow`, `rules` and
`only`/`except` for a push to `ref`, as the pipeline would. Reading a configuration writes
nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2
from sqlalchemy.orm import Session

from kiln.auth.actor import Actor
from kiln.config import Settings
from kiln.errors import NotFound
from kiln.git import branches as git_refs
from kiln.git.errors import RefNotFound
from kiln.git.refs import resolve_commit
from kiln.policy import Action
from kiln.schemas.ci_lint import LintContent, LintProject
from kiln.services import ci_config, subjects
from kiln.services.ci_yaml import Context, JobPlan, basic_variables, commit_context, plan_pipeline
from kiln.services.repositories import RepoContext, for_read, store

NO_JOBS = (
    "Pipeline will not run for the selected trigger. The rules configuration prevented any jobs "
    "from being added to the pipeline."
)
FILTERED = "Pipeline filtered out by workflow rules."


@dataclass(slots=True)
class LintResult:
    errors: list[str]
    warnings: list[str]
    merged_yaml: str | None
    includes: list[dict[str, Any]]
    jobs: list[JobPlan] = field(default_factory=list)
    dry_run: bool = False


def _commit(repo: pygit2.Repository | None, ref: str | None) -> pygit2.Commit | None:
    if repo is None or repo.head_is_unborn or (ref is not None and not ref.strip()):
        return None
    try:
        return resolve_commit(repo, ref)
    except RefNotFound:
        return None


def _is_tag(repo: pygit2.Repository | None, ref: str) -> bool:
    """A ref that names a tag and no branch (a dry run's pipeline is for a tag then)."""
    if repo is None:
        return False
    return git_refs.find_branch(repo, ref) is None and git_refs.find_tag(repo, ref) is not None


def _web(rc: RepoContext, settings: Settings) -> str:
    return f"{settings.external_url.rstrip('/')}/{rc.full_path}"


def _context(rc: RepoContext, commit: pygit2.Commit | None, ref: str) -> Context:
    """What the configuration reads: the commit's files, the predefined basic variables."""
    project = rc.project
    tag = _is_tag(rc.repo, ref)
    sha = str(commit.id) if commit is not None else ""
    variables = basic_variables(rc.full_path, project.default_branch, ref, tag, "push", sha)
    if rc.repo is None or commit is None:
        return Context(variables=variables, ref=ref, tag=tag, source="push")
    return commit_context(rc.repo, sha, variables=variables, ref=ref, tag=tag, source="push", before_sha=None)


def _included(includes: list[dict[str, Any]], web: str) -> list[dict[str, Any]]:
    """The included files with their blob and raw addresses in the project at the commit."""
    out = []
    for item in includes:
        sha, location = item.get("context_sha"), item.get("location")
        addresses = {"blob": f"{web}/-/blob/{sha}/{location}", "raw": f"{web}/-/raw/{sha}/{location}"}
        out.append({**item, **addresses} if sha and location else item)
    return out


def _lint(text: str, ctx: Context, dry_run: bool, web: str) -> LintResult:
    plan = plan_pipeline(text, ctx, static=not dry_run)
    errors = list(plan.errors)
    if dry_run and not errors:
        if plan.filtered:
            errors.append(FILTERED)
        elif not plan.jobs:
            errors.append(NO_JOBS)
    return LintResult(
        errors=errors,
        warnings=list(plan.warnings),
        merged_yaml=plan.merged_yaml,
        includes=_included(plan.includes, web),
        jobs=list(plan.jobs) if not errors else [],
        dry_run=dry_run,
    )


def lint_content(db: Session, actor: Actor, p: LintContent, settings: Settings) -> LintResult:
    """A configuration sent in, read in the project's context: its `include: local` files at
    the head of the default branch (a dry run: at `ref`, the default branch by default)."""
    s = subjects.project(db, actor, p.id, Action.CREATE_PIPELINE, rows=True)
    st = store(settings)
    rc = RepoContext(subject=s, store=st, repo=st.find(s.project.id))
    default = s.project.default_branch or ""
    ref = (p.ref or default) if p.dry_run else default
    commit = _commit(rc.repo, ref or None)
    return _lint(p.content, _context(rc, commit, ref), p.dry_run, _web(rc, settings))


def lint_project(db: Session, actor: Actor | None, p: LintProject, settings: Settings) -> LintResult:
    """The project's own configuration at `content_ref` (or `sha`; the head of the default
    branch by default), from where ci_config_path says."""
    rc = for_read(db, actor, p.id, settings)
    if rc.repo is None or rc.repo.head_is_unborn or not git_refs.list_branches(rc.repo):
        raise NotFound("Repository")
    wanted = p.content_ref or p.sha
    commit = _commit(rc.repo, wanted)
    if commit is None:
        raise NotFound("Commit")
    where = ci_config.for_project(db, rc.project.id)
    default = rc.project.default_branch or ""
    ref = (p.dry_run_ref or p.ref or default) if p.dry_run else default
    ctx = _context(rc, commit, ref)
    text = ctx.read_file(where.file) if where.kind == "repository" and where.file else None
    return _lint(text or "", ctx, p.dry_run, _web(rc, settings))
