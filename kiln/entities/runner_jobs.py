"""What the runner protocol answers: the job payload a runner runs (GitLab's spec.Job, as its
runners read it), and the job as `GET /job` shows it to the job's own token.

Runners written against GitLab's protocol are strict in places: every variable value is a
string, `image` (null allowed) and `services` (a list) are always there, and a dependency
without artifacts has no `artifacts_file` key at all."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kiln.entities._format import iso
from kiln.entities.ci_jobs import job_fields
from kiln.entities.pipelines import basic_fields
from kiln.models.ci import FAILURE_REASONS

if TYPE_CHECKING:
    from kiln.models.ci import CiJob
    from kiln.queries.runner_jobs import PayloadSources


def job_payload(
    src: PayloadSources,
    *,
    token: str,
    repo_url: str,
    timeout: int,
    variables: list[dict[str, Any]],
    queue_size: int,
) -> dict[str, Any]:
    job, pipeline, project = src.job, src.pipeline, src.project
    namespace = src.namespaces[-1] if src.namespaces else None
    root = src.namespaces[0] if src.namespaces else None
    namespace_path = namespace.full_path if namespace is not None else ""
    full_path = f"{namespace_path}/{project.path}" if namespace_path else project.path
    options = job.options or {}
    queued = job.queued_at or job.created_at
    in_queue = (job.started_at - queued).total_seconds() if job.started_at and queued else 0.0
    return {
        "id": job.id,
        "token": token,
        "allow_git_fetch": True,
        "job_info": {
            "id": job.id,
            "name": job.name,
            "stage": job.stage,
            "project_id": project.id,
            "project_name": project.name,
            "project_full_path": full_path,
            "pipeline_id": pipeline.id,
            "namespace_id": namespace.id if namespace is not None else None,
            "root_namespace_id": root.id if root is not None else None,
            "user_id": job.user_id,
            "time_in_queue_seconds": max(in_queue, 0.0),
            "queue_size": queue_size,
            "queue_depth": 0,
            "project_jobs_running_on_instance_runners_count": "0",
        },
        "git_info": {
            "repo_url": repo_url,
            "repo_object_format": "sha1",
            "ref": job.ref,
            "sha": job.sha,
            "before_sha": pipeline.before_sha or "0" * 40,
            "ref_type": "tag" if job.tag else "branch",
            "refspecs": refspecs(job, pipeline.id),
            "depth": project.ci_default_git_depth or 0,
            "protected": bool(job.protected),
        },
        "runner_info": {"timeout": timeout, "runner_session_url": None},
        "variables": [_variable(v) for v in variables],
        "steps": steps(options, timeout),
        "image": image(options.get("image")),
        "services": [s for s in (image(s) for s in _listed(options.get("services"))) if s is not None],
        "artifacts": artifacts(options.get("artifacts")),
        "cache": caches(options.get("cache")),
        "credentials": [],
        "dependencies": dependencies(src, token),
        "features": {"trace_sections": True, "failure_reasons": list(FAILURE_REASONS)},
        "hooks": [],
    }


def refspecs(job: CiJob, pipeline_id: int) -> list[str]:
    """The ref the job runs on, and its commit under the pipeline's own ref (GitLab's)."""
    if job.tag:
        own = f"+refs/tags/{job.ref}:refs/tags/{job.ref}"
    elif job.ref.startswith("refs/merge-requests/"):
        # A merge request pipeline's ref is its head ref in the target project, fetched as is.
        own = f"+{job.ref}:{job.ref}"
    else:
        own = f"+refs/heads/{job.ref}:refs/remotes/origin/{job.ref}"
    return [own, f"+{job.sha}:refs/pipelines/{pipeline_id}"]


def _variable(v: dict[str, Any]) -> dict[str, Any]:
    """A variable of the runner's shape whatever it came as; its value always a string."""
    value = v.get("value")
    if value is None:
        text = ""
    elif isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = str(value)
    return {
        "key": str(v.get("key", "")),
        "value": text,
        "public": bool(v.get("public", True)),
        "masked": bool(v.get("masked", False)),
        "file": bool(v.get("file", False)),
        "raw": bool(v.get("raw", False)),
    }


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _lines(value: Any) -> list[str]:
    """A script as a list of lines (a nested list, as YAML anchors leave them, flattened)."""
    out: list[str] = []
    for item in _listed(value):
        if isinstance(item, list | tuple):
            out.extend(_lines(item))
        elif item is not None:
            out.append(str(item))
    return out


def steps(options: dict[str, Any], timeout: int) -> list[dict[str, Any]]:
    """GitLab's steps: the script (before_script then script), then after_script if any."""
    found = [
        {
            "name": "script",
            "script": _lines(options.get("before_script")) + _lines(options.get("script")),
            "timeout": timeout,
            "when": "on_success",
            "allow_failure": False,
        }
    ]
    after = _lines(options.get("after_script"))
    if after:
        found.append(
            {
                "name": "after_script",
                "script": after,
                "timeout": timeout,
                "when": "always",
                "allow_failure": True,
            }
        )
    return found


def image(value: Any) -> dict[str, Any] | None:
    """An image or service as the runner reads it: {name, …}; a bare string is a name."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return {"name": value}
    if isinstance(value, dict):
        return dict(value)
    return None


def _artifact(item: dict[str, Any], artifact_type: str, artifact_format: str) -> dict[str, Any]:
    """One entry of the runner's `artifacts`: what to pick up, when, and how to pack it."""
    return {
        "name": item.get("name"),
        "untracked": bool(item.get("untracked", False)),
        "paths": _lines(item.get("paths")),
        "exclude": _lines(item.get("exclude")),
        "when": item.get("when") or "on_success",
        "artifact_type": artifact_type,
        "artifact_format": artifact_format,
        "expire_in": item.get("expire_in"),
    }


def artifacts(value: Any) -> list[dict[str, Any]]:
    """The job's artifacts: a list of the runner's shape already (the configuration reader
    writes it so), or GitLab's YAML form (paths, reports, …), which is turned into it."""
    found: list[dict[str, Any]] = []
    for item in _listed(value):
        if not isinstance(item, dict):
            continue
        if "artifact_type" in item:
            found.append(_artifact(item, item["artifact_type"], item.get("artifact_format") or "zip"))
            continue
        if item.get("paths") or item.get("untracked"):
            found.append(_artifact(item, "archive", "zip"))
        for kind, paths in (item.get("reports") or {}).items():
            report = {"paths": paths, "when": "always", "expire_in": item.get("expire_in")}
            found.append(_artifact(report, kind, "gzip" if kind == "junit" else "raw"))
    return found


def caches(value: Any) -> list[dict[str, Any]]:
    found = []
    for item in _listed(value):
        if not isinstance(item, dict):
            continue
        key = item.get("key")
        if isinstance(key, dict):  # cache:key:files, left to the configuration reader
            key = key.get("prefix") or "default"
        found.append(
            {
                "key": str(key) if key is not None else "default",
                "untracked": bool(item.get("untracked", False)),
                "policy": item.get("policy") or "pull-push",
                "paths": _lines(item.get("paths")),
                "when": item.get("when") or "on_success",
                "fallback_keys": _lines(item.get("fallback_keys")),
            }
        )
    return found


def dependencies(src: PayloadSources, token: str) -> list[dict[str, Any]]:
    """The jobs whose artifacts this one downloads, each with the requesting job's token (a
    running job of the project may fetch them): those named by `dependencies`, else those
    of `needs` that pass artifacts, else every job of the earlier stages. `artifacts_file`
    only for a job that has an archive."""
    job = src.job
    options = job.options or {}
    earlier = {j.name: j for j in src.earlier}
    named = options.get("dependencies")
    needs = options.get("needs")
    if isinstance(named, list):
        chosen = [earlier[n] for n in named if isinstance(n, str) and n in earlier]
    elif isinstance(needs, list) and job.scheduling_type == "dag":
        chosen = [
            earlier[n["job"]]
            for n in needs
            if isinstance(n, dict) and n.get("artifacts", True) and n.get("job") in earlier
        ]
    else:
        chosen = [j for j in src.earlier if j.stage_idx < job.stage_idx]
    found = []
    for dep in chosen:
        entry: dict[str, Any] = {"id": dep.id, "name": dep.name, "token": token}
        archive = src.archives.get(dep.id)
        if archive is not None:
            entry["artifacts_file"] = {"filename": archive.filename, "size": archive.size}
        found.append(entry)
    return found


def current_job(src: PayloadSources, base_url: str) -> dict[str, Any]:
    """GET /job: the job as its own token sees it (GitLab's Ci::Job entity, in brief)."""
    job, pipeline, project = src.job, src.pipeline, src.project
    namespace_path = src.namespaces[-1].full_path if src.namespaces else ""
    full_path = f"{namespace_path}/{project.path}" if namespace_path else project.path
    user = src.user
    return {
        **job_fields(job, datetime.now(UTC)),
        "user": None
        if user is None
        else {"id": user.id, "username": user.username, "name": user.name, "state": user.state},
        "commit": {"id": job.sha, "short_id": job.sha[:8]},
        "pipeline": basic_fields(pipeline, f"{base_url}/{full_path}/-/pipelines/{pipeline.id}"),
        "web_url": f"{base_url}/{full_path}/-/jobs/{job.id}",
        "project": {"id": project.id, "name": project.name, "path_with_namespace": full_path},
        "runner": None
        if src.runner is None
        else {"id": src.runner.id, "description": src.runner.description},
        "tag_list": list(job.tag_list or []),
        "artifacts_expire_at": iso(job.artifacts_expire_at),
    }


def artifact_upload(job: CiJob) -> dict[str, Any]:
    """What an artifact upload answers (the runner reads nothing of it)."""
    return {"id": job.id, "status": job.status, "artifacts_expire_at": iso(job.artifacts_expire_at)}
