"""Request contracts for jobs and their artifacts (GitLab's lib/api/ci/jobs.rb,
lib/api/ci/job_artifacts.rb and the job lists of lib/api/ci/pipelines.rb).

`scope` is one status, an array of them (`scope[]=`), or a hash whose values are statuses
(`scope[0]=`), as GitLab coerces it; anything else, or an unknown status, is invalid."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from kiln.schemas._types import Flag, Int, PageParams, Params
from kiln.schemas.pipelines import Status


def _scope(value: Any) -> Any:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return value
    return ["unknown"]


Scope = Annotated[list[Status], BeforeValidator(_scope)]


class JobList(PageParams):
    id: str
    scope: Scope | None = None
    # A project's list holds retried jobs, as GitLab's does; false leaves them out.
    include_retried: Flag = True


class PipelineJobList(PageParams):
    id: str
    pipeline_id: Int
    scope: Scope | None = None
    include_retried: Flag = False


class JobGet(Params):
    id: str
    job_id: Int


class JobCancel(JobGet):
    force: Flag = False


class JobVariable(Params):
    key: str
    value: str


class JobPlay(JobGet):
    job_variables_attributes: list[JobVariable] | None = None


class ArtifactFile(JobGet):
    artifact_path: Annotated[str, Field(min_length=1)]


class ProjectArtifacts(Params):
    id: str


class RefRoute(Params):
    """`…/jobs/artifacts/<ref_name>/download` and `…/jobs/artifacts/<ref_name>/raw/<path>`:
    a ref name may hold slashes, so the router splits what follows `artifacts/` itself."""

    id: str
    rest: str
    job: str
    search_recent_successful_pipelines: Flag = False
