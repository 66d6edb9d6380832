"""Runners, pipelines and jobs, written through the models with the services' rules (pipeline
iids from the project's counter, runner tokens kept as digests, statuses composed by
kiln.services.pipeline_processing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from kiln.auth.tokens import digest, new_secret
from kiln.config import Settings
from kiln.db import transaction
from kiln.models import CiJob, Namespace, Pipeline, Project, Runner, RunnerNamespace, RunnerProject, RunnerTag
from kiln.models.ci import GROUP_TYPE, INSTANCE_TYPE, PROJECT_TYPE
from kiln.services import internal_ids, pipeline_processing

PIPELINE_IIDS = "ci_pipelines"


def _id(thing: Any) -> int:
    return thing if isinstance(thing, int) else thing.id


@dataclass(frozen=True, slots=True)
class MadeRunner:
    """A runner and the authentication token it was given (shown once, as on registration)."""

    row: Runner
    token: str

    @property
    def id(self) -> int:
        return self.row.id


class CiFactory:
    db: Session
    settings: Settings

    def seq(self) -> int:
        raise NotImplementedError

    def runner(
        self,
        *,
        project: Project | int | None = None,
        projects: Sequence[Project | int] = (),
        group: Namespace | int | None = None,
        tags: Sequence[str] = (),
        **fields: Any,
    ) -> MadeRunner:
        """An instance runner, a project runner with `project` (or `projects`, the first one
        its owner), or a group runner with `group`."""
        token = new_secret("glrt-")
        owners = [project] if project is not None else list(projects)
        kind = PROJECT_TYPE if owners else GROUP_TYPE if group is not None else INSTANCE_TYPE
        with transaction(self.db):
            row = Runner(
                runner_type=kind,
                token_digest=digest(token),
                token_prefix=token[:9],
                description=fields.pop("description", f"runner {self.seq()}"),
                **fields,
            )
            self.db.add(row)
            self.db.flush()
            for owner in owners:
                self.db.add(RunnerProject(runner_id=row.id, project_id=_id(owner)))
            if group is not None:
                self.db.add(RunnerNamespace(runner_id=row.id, namespace_id=_id(group)))
            for tag in tags:
                self.db.add(RunnerTag(runner_id=row.id, name=tag))
        return MadeRunner(row, token)

    def pipeline(
        self,
        project: Project | int,
        *,
        ref: str = "main",
        sha: str | None = None,
        source: str = "push",
        user: Any = None,
        jobs: Sequence[dict[str, Any]] = (),
        process: bool = True,
        **fields: Any,
    ) -> Pipeline:
        """A pipeline with `jobs` (each a dict of CiJob columns; `name` required, `stage_idx`
        defaults to its position's stage), processed as creation would process it unless
        process=False (all jobs stay as given)."""
        pid = _id(project)
        with transaction(self.db):
            pipeline = Pipeline(
                iid=internal_ids.next_iid(self.db, PIPELINE_IIDS, pid),
                project_id=pid,
                ref=ref,
                sha=sha or f"{self.seq():040x}",
                source=source,
                user_id=_id(user) if user is not None else None,
                **fields,
            )
            self.db.add(pipeline)
            self.db.flush()
            for spec in jobs:
                self._job(pipeline, spec)
            if process and jobs:
                pipeline_processing.process(self.db, pipeline.id)
        return pipeline

    def ci_job(self, pipeline: Pipeline, *, process: bool = False, **fields: Any) -> CiJob:
        """One more job of `pipeline` (CiJob columns), optionally processed."""
        with transaction(self.db):
            job = self._job(pipeline, fields)
            if process:
                pipeline_processing.process(self.db, pipeline.id)
        return job

    def _job(self, pipeline: Pipeline, spec: dict[str, Any]) -> CiJob:
        fields = dict(spec)
        fields.setdefault("name", f"job{self.seq()}")
        fields.setdefault("stage", "test")
        fields.setdefault("options", {"script": ["echo hello"]})
        job = CiJob(
            pipeline_id=pipeline.id,
            project_id=pipeline.project_id,
            ref=pipeline.ref,
            sha=pipeline.sha,
            tag=pipeline.tag,
            protected=pipeline.protected,
            user_id=pipeline.user_id,
            **fields,
        )
        self.db.add(job)
        self.db.flush()
        return job
