"""The predefined CI/CD variables a job is given by the server, as GitLab documents them
("Predefined CI/CD variables reference"): the server, the project, the commit, the pipeline,
the job, the runner and the user who started it. Every value is a string.

Variables the runner sets itself (CI_PROJECT_DIR, CI_BUILDS_DIR, CI_SERVER_TLS_CA_FILE,
CI_RUNNER_VERSION, CI_RUNNER_EXECUTABLE_ARCH, CI_DISPOSABLE_ENVIRONMENT, …) are left to it,
as GitLab leaves them: a runner takes the last value of a name, so a server's value would
override the runner's own paths."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from kiln import COMPATIBLE_GITLAB_VERSION
from kiln.config import Settings
from kiln.queries.runner_jobs import PayloadSources

_SLUG_OUT = re.compile(r"[^a-z0-9]")


# What every pipeline and job has, whatever the server and the commit.
CI_FLAGS = {"CI": "true", "GITLAB_CI": "true", "CI_SERVER": "yes"}


def slug(value: str, limit: int = 63) -> str:
    """GitLab's slugify: lowercased, every other character a `-` (a run of them is not
    folded into one), at most 63 characters, no `-` at either end."""
    return _SLUG_OUT.sub("-", value.lower())[:limit].strip("-")


def environment_slug(name: str) -> str:
    """CI_ENVIRONMENT_SLUG as GitLab makes it: a slug that starts with a letter, with runs
    of dashes folded, at most 24 characters; one that is not the name itself is cut to 17
    and given a suffix (GitLab's is random and kept with the environment; kiln keeps no
    environments, so the suffix comes from the name and stays the same)."""
    made = _SLUG_OUT.sub("-", name.lower())
    if not made[:1].isalpha():
        made = "env-" + made
    made = re.sub(r"-{2,}", "-", made)
    if len(made) > 24 or made != name:
        return f"{made[:17]}-{hashlib.sha256(name.encode()).hexdigest()[:6]}"
    return made.removesuffix("-")


@dataclass(frozen=True, slots=True)
class CommitFacts:
    """What the commit itself says (empty when the repository does not have it)."""

    message: str = ""
    timestamp: datetime | None = None
    author: str = ""
    tag_message: str = ""


NO_COMMIT_MESSAGE = "No commit message"


def commit_text(message: str) -> tuple[str, str]:
    """CI_COMMIT_TITLE and CI_COMMIT_DESCRIPTION as GitLab's Commit reads them: the title is
    the first line; the description the rest (less one final line break), or the whole
    message when the title is 100 characters or longer."""
    if not message.strip():
        return NO_COMMIT_MESSAGE, NO_COMMIT_MESSAGE
    title = re.split(r"[\r\n]", message, maxsplit=1)[0]
    if len(title) >= 100:
        return title, message
    _, newline, rest = message.partition("\n")
    if not newline:
        return title, ""
    return title, rest.removesuffix("\n").removesuffix("\r")


def variable(key: str, value: Any, *, public: bool = True, masked: bool = False) -> dict[str, Any]:
    """A runner variable of GitLab's shape, its value a string."""
    return {
        "key": key,
        "value": _text(value),
        "public": public,
        "masked": masked,
        "file": False,
        "raw": False,
    }


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return _iso(value)
    return str(value)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def server_variables(settings: Settings) -> list[dict[str, Any]]:
    base = settings.external_url.rstrip("/")
    parts = urlsplit(base)
    protocol = parts.scheme or "http"
    port = parts.port or (443 if protocol == "https" else 80)
    major, minor, patch = [*COMPATIBLE_GITLAB_VERSION.split("."), "0", "0"][:3]
    return [
        *(variable(key, value) for key, value in CI_FLAGS.items()),
        variable("CI_SERVER_URL", base),
        variable("CI_SERVER_HOST", parts.hostname or ""),
        variable("CI_SERVER_PORT", port),
        variable("CI_SERVER_PROTOCOL", protocol),
        variable("CI_SERVER_FQDN", parts.netloc),
        variable("CI_SERVER_SHELL_SSH_HOST", parts.hostname or ""),
        variable("CI_SERVER_SHELL_SSH_PORT", 22),
        variable("CI_SERVER_NAME", "GitLab"),
        variable("CI_SERVER_VERSION", COMPATIBLE_GITLAB_VERSION),
        variable("CI_SERVER_VERSION_MAJOR", major),
        variable("CI_SERVER_VERSION_MINOR", minor),
        variable("CI_SERVER_VERSION_PATCH", patch),
        variable("CI_SERVER_REVISION", ""),
        variable("CI_API_V4_URL", f"{base}/api/v4"),
        variable("CI_API_GRAPHQL_URL", f"{base}/api/graphql"),
        variable("GITLAB_FEATURES", ""),
    ]


def for_job(
    settings: Settings,
    src: PayloadSources,
    *,
    token: str,
    repo_url: str,
    timeout: int,
    config_path: str,
    commit: CommitFacts,
) -> list[dict[str, Any]]:
    """Every predefined variable of `src.job`, in GitLab's order."""
    base = settings.external_url.rstrip("/")
    job, pipeline, project = src.job, src.pipeline, src.project
    namespace = src.namespaces[-1] if src.namespaces else None
    root = src.namespaces[0] if src.namespaces else None
    namespace_path = namespace.full_path if namespace is not None else ""
    full_path = f"{namespace_path}/{project.path}" if namespace_path else project.path
    project_url = f"{base}/{full_path}"
    found = server_variables(settings)
    add = found.append

    add(variable("CI_PROJECT_ID", project.id))
    add(variable("CI_PROJECT_NAME", project.path))
    add(variable("CI_PROJECT_TITLE", project.name))
    add(variable("CI_PROJECT_DESCRIPTION", project.description or ""))
    add(variable("CI_PROJECT_PATH", full_path))
    add(variable("CI_PROJECT_PATH_SLUG", slug(full_path)))
    add(variable("CI_PROJECT_NAMESPACE", namespace_path))
    add(variable("CI_PROJECT_NAMESPACE_ID", namespace.id if namespace is not None else ""))
    add(variable("CI_PROJECT_NAMESPACE_SLUG", slug(namespace_path)))
    add(variable("CI_PROJECT_ROOT_NAMESPACE", root.path if root is not None else ""))
    add(variable("CI_PROJECT_URL", project_url))
    add(variable("CI_PROJECT_VISIBILITY", project.visibility))
    languages = sorted((project.languages or {}).items(), key=lambda kv: -kv[1])
    add(variable("CI_PROJECT_REPOSITORY_LANGUAGES", ",".join(name.lower() for name, _ in languages[:5])))
    add(variable("CI_PROJECT_CLASSIFICATION_LABEL", ""))
    add(variable("CI_DEFAULT_BRANCH", project.default_branch or ""))
    add(variable("CI_DEFAULT_BRANCH_SLUG", slug(project.default_branch or "")))
    add(variable("CI_CONFIG_PATH", config_path))
    add(variable("CI_PAGES_DOMAIN", urlsplit(base).hostname or ""))
    add(variable("CI_PAGES_URL", ""))
    add(variable("CI_REGISTRY_USER", "gitlab-ci-token"))
    add(variable("CI_REGISTRY_PASSWORD", token, public=False, masked=True))
    add(variable("CI_REPOSITORY_URL", repo_url, public=False))
    add(variable("CI_DEPENDENCY_PROXY_USER", "gitlab-ci-token"))
    add(variable("CI_DEPENDENCY_PROXY_PASSWORD", token, public=False, masked=True))

    add(variable("CI_JOB_NAME", job.name))
    add(variable("CI_JOB_NAME_SLUG", slug(job.name)))
    add(variable("CI_JOB_STAGE", job.stage))
    add(variable("CI_JOB_ID", job.id))
    add(variable("CI_JOB_URL", f"{project_url}/-/jobs/{job.id}"))
    add(variable("CI_JOB_TOKEN", token, public=False, masked=True))
    add(variable("CI_JOB_STARTED_AT", job.started_at))
    add(variable("CI_JOB_TIMEOUT", timeout))
    if job.when == "manual":
        add(variable("CI_JOB_MANUAL", "true"))
    image = job.options.get("image")
    if isinstance(image, dict) and image.get("name"):
        add(variable("CI_JOB_IMAGE", image["name"]))
    elif isinstance(image, str) and image:
        add(variable("CI_JOB_IMAGE", image))
    if pipeline.source == "trigger":
        add(variable("CI_JOB_TRIGGERED", "true"))
    parallel = job.options.get("parallel")
    if isinstance(parallel, dict) and parallel.get("number"):
        add(variable("CI_NODE_INDEX", parallel["number"]))
        add(variable("CI_NODE_TOTAL", parallel.get("total") or 1))
    else:
        add(variable("CI_NODE_TOTAL", 1))
    environment = job.options.get("environment")
    if isinstance(environment, dict) and environment.get("name"):
        add(variable("CI_ENVIRONMENT_NAME", environment["name"]))
        add(variable("CI_ENVIRONMENT_SLUG", environment_slug(str(environment["name"]))))
        add(variable("CI_ENVIRONMENT_ACTION", environment.get("action") or "start"))
        if environment.get("url"):
            add(variable("CI_ENVIRONMENT_URL", environment["url"]))

    add(variable("CI_PIPELINE_ID", pipeline.id))
    add(variable("CI_PIPELINE_IID", pipeline.iid))
    add(variable("CI_PIPELINE_SOURCE", pipeline.source))
    add(variable("CI_PIPELINE_URL", f"{project_url}/-/pipelines/{pipeline.id}"))
    add(variable("CI_PIPELINE_CREATED_AT", pipeline.created_at))
    if pipeline.name:
        add(variable("CI_PIPELINE_NAME", pipeline.name))
    if pipeline.schedule_id is not None:
        add(variable("CI_PIPELINE_SCHEDULE_ID", pipeline.schedule_id))

    title, description = commit_text(commit.message)
    add(variable("CI_COMMIT_SHA", job.sha))
    add(variable("CI_COMMIT_SHORT_SHA", job.sha[:8]))
    add(variable("CI_COMMIT_BEFORE_SHA", pipeline.before_sha or "0" * 40))
    add(variable("CI_COMMIT_REF_NAME", job.ref))
    add(variable("CI_COMMIT_REF_SLUG", slug(job.ref)))
    if job.tag:
        add(variable("CI_COMMIT_TAG", job.ref))
        add(variable("CI_COMMIT_TAG_MESSAGE", commit.tag_message))
    elif pipeline.merge_request_id is None:
        # A merge request pipeline has no branch of its own (kiln.services.merge_request_pipelines).
        add(variable("CI_COMMIT_BRANCH", job.ref))
    add(variable("CI_COMMIT_MESSAGE", commit.message))
    add(variable("CI_COMMIT_TITLE", title))
    add(variable("CI_COMMIT_DESCRIPTION", description))
    add(variable("CI_COMMIT_TIMESTAMP", commit.timestamp))
    add(variable("CI_COMMIT_AUTHOR", commit.author))
    add(variable("CI_COMMIT_REF_PROTECTED", bool(job.protected)))

    if src.runner is not None:
        add(variable("CI_RUNNER_ID", src.runner.id))
        add(variable("CI_RUNNER_DESCRIPTION", src.runner.description or ""))
        add(variable("CI_RUNNER_TAGS", json.dumps(src.runner_tags)))

    user = src.user
    if user is not None:
        add(variable("GITLAB_USER_ID", user.id))
        add(variable("GITLAB_USER_EMAIL", user.email or ""))
        add(variable("GITLAB_USER_LOGIN", user.username))
        add(variable("GITLAB_USER_NAME", user.name))
    return found
