"""Where a project's CI configuration comes from, as GitLab decides it (Project#ci_config_path_or_default
and Gitlab::Ci::ProjectConfig's sources).

The configured path is the project's own `ci_config_path` when it has one, else the
instance's `default_ci_config_path`, else `.gitlab-ci.yml`. (GitLab copies the instance
default into a project when it is created; kiln reads it whenever the project has no path of
its own, so projects made before the setting changed follow it too.) The path takes one of
GitLab's three forms:

- a file in the project's own repository: `.gitlab-ci.yml`, `ci/pipeline.yml`;
- a file in another project, `path/to/file.yml@group/project`, optionally at a ref:
  `path/to/file.yml@group/project:refname` (the file must end in yml or yaml);
- a remote file, an `http://` or `https://` URL (fetched through kiln.outbound when CI reads it).

GitLab tries them in that order: a value that reads as another project's file is one even if
it also looks like a URL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from kiln.models import Project
from kiln.services import instance_settings

DEFAULT_PATH = ".gitlab-ci.yml"
# GitLab's validation of a ci_config_path (ProjectCiCdSetting): no leading slash, no "..".
UNSAFE = "cannot include leading slash or directory traversal."
MAX_LENGTH = 255

_EXTERNAL = re.compile(r"\A.+(yml|yaml)@.+\Z", re.DOTALL)
_REMOTE = re.compile(r"\Ahttps?://[^\s/?#]+[^\s]*\Z", re.IGNORECASE)

Kind = Literal["repository", "external_project", "remote"]


@dataclass(frozen=True, slots=True)
class CiConfig:
    """Where CI reads a project's configuration from."""

    kind: Kind
    # The path as configured (what the project API shows as ci_config_path, or the default).
    configured: str
    # The file: in this project's repository, or in `project`'s.
    file: str | None = None
    # Another project's full path, and the ref to read there (None: its default branch).
    project: str | None = None
    ref: str | None = None
    # A remote configuration's URL.
    url: str | None = None


def configured_path(own: str | None, default: str | None) -> str:
    """The project's own path, else the instance default, else `.gitlab-ci.yml`."""
    for candidate in (own, default):
        if candidate is not None and candidate.replace("\0", "").strip():
            return candidate.replace("\0", "")
    return DEFAULT_PATH


def parse(configured: str) -> CiConfig:
    """The form of a configured path, as GitLab's ProjectConfig sources read it."""
    if _EXTERNAL.match(configured):
        file, _, where = configured.partition("@")
        project, sep, ref = where.partition(":")
        return CiConfig(
            kind="external_project",
            configured=configured,
            file=file,
            project=project,
            ref=ref if sep and ref else None,
        )
    if _REMOTE.match(configured):
        return CiConfig(kind="remote", configured=configured, url=configured)
    return CiConfig(kind="repository", configured=configured, file=configured)


def for_project(db: Session, project_id: int) -> CiConfig:
    """Where the project's CI configuration comes from now (one read of the project's own
    path, one of the instance settings)."""
    own = db.scalar(select(Project.ci_config_path).where(Project.id == project_id))
    default = instance_settings.current(db)["default_ci_config_path"]
    return parse(configured_path(own, default))


def problems(value: str | None) -> list[str]:
    """What is wrong with a ci_config_path someone sets (GitLab's messages), for the
    settings that store one."""
    if not value:
        return []
    found = []
    if value.startswith("/") or ".." in value:
        found.append(UNSAFE)
    if len(value) > MAX_LENGTH:
        found.append(f"is too long (maximum is {MAX_LENGTH} characters)")
    return found
