"""The CI Lint API's answer (GitLab's Entities::Ci::Lint::Result and the jobs it lists)."""

from __future__ import annotations

from typing import Any

# The lint service's LintResult and the reader's JobPlan, read by their attributes.
LintResult = Any
JobPlan = Any


def _job(job: JobPlan, dry_run: bool) -> dict[str, Any]:
    """A job as the lint endpoint lists it; a static check also shows only, except and needs."""
    environment = job.options.get("environment")
    out: dict[str, Any] = {
        "name": job.name,
        "stage": job.stage,
        "before_script": list(job.options.get("before_script", [])),
        "script": list(job.options.get("script", [])),
        "after_script": list(job.options.get("after_script", [])),
        "tag_list": list(job.tags),
        "environment": environment["name"] if environment else None,
        "when": job.when,
        "allow_failure": job.allow_failure,
    }
    if not dry_run:
        out["only"] = job.only
        out["except"] = job.except_
        out["needs"] = (
            [{"name": n.job, "artifacts": n.artifacts, "optional": n.optional} for n in job.needs]
            if job.needs is not None
            else None
        )
    return out


def lint_result(result: LintResult, include_jobs: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "valid": not result.errors,
        "errors": list(result.errors),
        "warnings": list(result.warnings),
        "merged_yaml": result.merged_yaml,
        "includes": list(result.includes),
    }
    if include_jobs:
        out["jobs"] = [_job(j, result.dry_run) for j in result.jobs]
    return out
