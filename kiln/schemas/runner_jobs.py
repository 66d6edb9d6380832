"""Request contracts of the runner protocol (GitLab's lib/api/ci/runner.rb parameters).

Runners in use send these loosely (a hash or a string for `info`, numbers as strings, no
`system_id` or `last_update` at all): everything but the path's id is taken as it comes and
read by the service, so that a runner with a valid token is never refused for its body."""

from __future__ import annotations

from typing import Any

from kiln.schemas._types import Int, Params, UploadFile


class JobRequest(Params):
    token: Any = None
    info: Any = None
    system_id: Any = None
    last_update: Any = None
    session: Any = None


class JobCall(Params):
    """A job's own call: the job's id in the path, its token (or the JOB-TOKEN header)."""

    id: Int
    token: Any = None


class JobUpdate(JobCall):
    state: str | None = None
    failure_reason: str | None = None
    exit_code: Any = None
    output: Any = None
    checksum: Any = None
    trace: str | None = None
    info: Any = None


class JobTrace(JobCall):
    debug_trace: Any = None


class ArtifactsAuthorize(JobCall):
    filesize: Any = None
    artifact_type: Any = None
    artifact_format: Any = None


class ArtifactsUpload(JobCall):
    file: UploadFile | None = None
    metadata: UploadFile | None = None
    artifact_type: str | None = None
    artifact_format: str | None = None
    expire_in: str | None = None


class ArtifactsDownload(JobCall):
    direct_download: Any = None


class CurrentJob(Params):
    pass
