"""A pipeline moves as GitLab's does: stages in order (or `needs`), `when` deciding what runs
after a failure, allowed failures and untouched manual jobs not holding the pipeline back."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from kiln.db import transaction
from kiln.models import CiJob, Pipeline
from kiln.models.ci import (
    CANCELED,
    CREATED,
    FAILED,
    MANUAL,
    PENDING,
    RUNNING,
    SCHEDULED,
    SKIPPED,
    SUCCESS,
)
from kiln.services import pipeline_processing as processing
from kiln.services.pipeline_processing import Seen, composite


def statuses(db: Any, pipeline: Pipeline) -> dict[str, str]:
    db.expire_all()
    rows = db.scalars(select(CiJob).where(CiJob.pipeline_id == pipeline.id, CiJob.retried.is_(False)))
    return {j.name: j.status for j in rows}


def finish(db: Any, pipeline: Pipeline, name: str, status: str) -> None:
    with transaction(db):
        job = db.scalar(
            select(CiJob).where(
                CiJob.pipeline_id == pipeline.id, CiJob.name == name, CiJob.retried.is_(False)
            )
        )
        if status in (SUCCESS, FAILED):
            processing.transition(db, job, RUNNING)
        processing.transition(db, job, status)
        processing.process(db, pipeline.id)


def status_of(db: Any, pipeline: Pipeline) -> str:
    db.expire_all()
    return db.get(Pipeline, pipeline.id).status


THREE_STAGES = [
    {"name": "build", "stage": "build", "stage_idx": 0},
    {"name": "test", "stage": "test", "stage_idx": 1},
    {"name": "deploy", "stage": "deploy", "stage_idx": 2},
]


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        ([], None),
        ([(SUCCESS, False), (SKIPPED, False)], SUCCESS),
        ([(SKIPPED, False)], SKIPPED),
        ([(SUCCESS, False), (FAILED, True)], SUCCESS),
        ([(SUCCESS, False), (MANUAL, True)], SUCCESS),
        ([(SUCCESS, False), (MANUAL, False)], MANUAL),
        ([(SUCCESS, False), (FAILED, False)], FAILED),
        ([(PENDING, False), (CREATED, False)], PENDING),
        ([(RUNNING, False), (CREATED, False)], RUNNING),
        ([(SUCCESS, False), (CREATED, False)], RUNNING),
        ([(CANCELED, False), (SUCCESS, False)], CANCELED),
        ([(SCHEDULED, False), (SUCCESS, False)], SCHEDULED),
    ],
)
def test_composite_status(seen, expected):
    assert composite(Seen(s, a) for s, a in seen) == expected


def test_a_new_pipeline_runs_its_first_stage(make, db):
    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    assert statuses(db, pipeline) == {"build": PENDING, "test": CREATED, "deploy": CREATED}
    assert status_of(db, pipeline) == PENDING


def test_a_stage_starts_when_the_earlier_ones_passed(make, db):
    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    finish(db, pipeline, "build", SUCCESS)
    assert statuses(db, pipeline)["test"] == PENDING
    assert status_of(db, pipeline) == RUNNING


def test_a_failure_skips_the_later_stages_and_fails_the_pipeline(make, db):
    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    finish(db, pipeline, "build", FAILED)
    assert statuses(db, pipeline) == {"build": FAILED, "test": SKIPPED, "deploy": SKIPPED}
    assert status_of(db, pipeline) == FAILED
    db.expire_all()
    assert db.get(Pipeline, pipeline.id).finished_at is not None


def test_on_failure_and_always_jobs_run_after_a_failure(make, db):
    jobs = [
        {"name": "build", "stage": "build", "stage_idx": 0},
        {"name": "cleanup", "stage": "test", "stage_idx": 1, "when": "on_failure"},
        {"name": "report", "stage": "test", "stage_idx": 1, "when": "always"},
        {"name": "ship", "stage": "test", "stage_idx": 1},
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    finish(db, pipeline, "build", FAILED)
    assert statuses(db, pipeline) == {"build": FAILED, "cleanup": PENDING, "report": PENDING, "ship": SKIPPED}


def test_an_allowed_failure_and_an_untouched_manual_job_leave_the_pipeline_green(make, db):
    jobs = [
        {"name": "build", "stage": "build", "stage_idx": 0},
        {"name": "lint", "stage": "build", "stage_idx": 0, "allow_failure": True},
        {"name": "deploy", "stage": "deploy", "stage_idx": 1, "when": "manual", "allow_failure": True},
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    finish(db, pipeline, "lint", FAILED)
    finish(db, pipeline, "build", SUCCESS)
    assert statuses(db, pipeline)["deploy"] == MANUAL
    assert status_of(db, pipeline) == SUCCESS


def test_a_blocking_manual_job_holds_the_later_stages(make, db):
    jobs = [
        {"name": "approve", "stage": "build", "stage_idx": 0, "when": "manual", "allow_failure": False},
        {"name": "deploy", "stage": "deploy", "stage_idx": 1},
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    assert statuses(db, pipeline) == {"approve": MANUAL, "deploy": CREATED}
    assert status_of(db, pipeline) == MANUAL
    with transaction(db):
        processing.play_job(db, db.scalar(select(CiJob).where(CiJob.name == "approve")), actor=None)
    assert statuses(db, pipeline)["approve"] == PENDING
    finish(db, pipeline, "approve", SUCCESS)
    assert statuses(db, pipeline)["deploy"] == PENDING


def test_needs_start_a_job_before_its_stage(make, db):
    jobs = [
        {"name": "build", "stage": "build", "stage_idx": 0},
        {"name": "slow", "stage": "build", "stage_idx": 0},
        {
            "name": "test",
            "stage": "test",
            "stage_idx": 1,
            "scheduling_type": "dag",
            "options": {"script": ["true"], "needs": [{"job": "build", "artifacts": True}]},
        },
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    finish(db, pipeline, "build", SUCCESS)
    assert statuses(db, pipeline) == {"build": SUCCESS, "slow": PENDING, "test": PENDING}


def test_empty_needs_start_at_once(make, db):
    jobs = [
        {"name": "build", "stage": "build", "stage_idx": 0},
        {
            "name": "docs",
            "stage": "deploy",
            "stage_idx": 1,
            "scheduling_type": "dag",
            "options": {"needs": []},
        },
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    assert statuses(db, pipeline) == {"build": PENDING, "docs": PENDING}


def test_a_delayed_job_is_scheduled(make, db):
    jobs = [{"name": "later", "stage_idx": 0, "when": "delayed", "options": {"start_in": 3600}}]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    assert statuses(db, pipeline) == {"later": SCHEDULED}
    db.expire_all()
    assert db.scalar(select(CiJob.scheduled_at)) is not None


def test_cancel_cancels_what_has_not_finished(make, db):
    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    finish(db, pipeline, "build", SUCCESS)
    with transaction(db):
        processing.cancel_pipeline(db, db.get(Pipeline, pipeline.id), actor=None)
    assert statuses(db, pipeline) == {"build": SUCCESS, "test": CANCELED, "deploy": CANCELED}
    assert status_of(db, pipeline) == CANCELED


def test_retry_runs_the_failed_jobs_again_and_reopens_what_they_skipped(make, db):
    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    finish(db, pipeline, "build", FAILED)
    with transaction(db):
        processing.retry_pipeline(db, db.get(Pipeline, pipeline.id), actor=None)
    assert statuses(db, pipeline) == {"build": PENDING, "test": CREATED, "deploy": CREATED}
    assert status_of(db, pipeline) == PENDING
    assert db.scalar(select(CiJob).where(CiJob.retried.is_(True))).status == FAILED


def test_a_job_change_is_recorded_for_hooks(make, db):
    from kiln.models import Event

    pipeline = make.pipeline(make.project(), jobs=THREE_STAGES)
    kinds = [(e.target_type, e.data["status"]) for e in db.scalars(select(Event).order_by(Event.id))]
    assert ("CiJob", PENDING) in kinds
    assert ("Pipeline", PENDING) in kinds
    assert pipeline.id


def test_playing_a_manual_job_reopens_the_jobs_that_need_it(make, db):
    """A job that needs a manual job is skipped while it waits, and waits again once the
    manual job is played (GitLab's ResetSkippedJobsService)."""
    jobs = [
        {"name": "approve", "stage_idx": 0, "when": "manual", "allow_failure": True},
        {
            "name": "deploy",
            "stage_idx": 1,
            "scheduling_type": "dag",
            "options": {"script": ["x"], "needs": [{"job": "approve", "artifacts": True}]},
        },
    ]
    pipeline = make.pipeline(make.project(), jobs=jobs)
    assert statuses(db, pipeline) == {"approve": MANUAL, "deploy": SKIPPED}
    with transaction(db):
        processing.play_job(db, db.scalar(select(CiJob).where(CiJob.name == "approve")), actor=None)
    assert statuses(db, pipeline) == {"approve": PENDING, "deploy": CREATED}
    finish(db, pipeline, "approve", SUCCESS)
    assert statuses(db, pipeline)["deploy"] == PENDING
