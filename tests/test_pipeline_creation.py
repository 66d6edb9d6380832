"""Pipelines are made from the configuration at the commit, as GitLab makes them: from pushes
(none without a configuration, skipped ones for `[skip ci]` and `-o ci.skip`, failed ones with
`yaml_errors` for an invalid configuration), with one job per planned job, processed once."""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln.auth.actor import Actor
from kiln.auth.sealing import seal, unseal
from kiln.db import transaction
from kiln.models import CiJob, Event, Pipeline, PipelineVariable, ProjectVariable
from kiln.models.namespaces import REPORTER
from kiln.queries import users as user_finder
from kiln.services import ci_predefined, pipeline_creation, repositories
from kiln.services.pipeline_creation import Refused
from tests.api.test_git_http import RECEIVE_REQUEST, ZERO, basic, pkt_lines, push_request

CONFIG = """
stages: [build, test, deploy]
build:
  stage: build
  script: echo build
  tags: [linux]
  variables:
    OWN: "1"
test:
  stage: test
  script: echo test
  needs: [build]
  allow_failure: true
deploy:
  stage: deploy
  script: echo deploy
  when: manual
"""


def ci_project(make: Any, owner: Any = None, config: str | None = CONFIG, **fields: Any) -> Any:
    """A project whose default branch holds `config` as its .gitlab-ci.yml."""
    project = make.project_with_repository(owner=owner, **fields)
    if config is not None:
        make.commit(project, {".gitlab-ci.yml": config}, branch=project.default_branch, message="ci")
    return project


def pipelines_of(db: Any, project: Any) -> list[Pipeline]:
    db.expire_all()
    return list(db.scalars(select(Pipeline).where(Pipeline.project_id == project.id).order_by(Pipeline.id)))


def jobs_of(db: Any, pipeline: Pipeline) -> dict[str, CiJob]:
    return {j.name: j for j in db.scalars(select(CiJob).where(CiJob.pipeline_id == pipeline.id))}


def create(db: Any, settings: Any, project: Any, **kw: Any) -> Pipeline:
    kw.setdefault("ref", project.default_branch)
    kw.setdefault("source", "push")
    kw.setdefault("actor", None)
    with transaction(db):
        return pipeline_creation.create(db, settings, project=project, **kw)


def push(
    db: Any, settings: Any, project: Any, before: str, after: str, options: list[str] | None = None
) -> None:
    """What a push records: record_push, which queues the pipeline's creation."""
    repo = repositories.store(settings).open(project.id)
    with transaction(db):
        repositories.record_push(
            db, project, None, f"refs/heads/{project.default_branch}", before, after, repo, options
        )


# ----------------------------------------------------------------------------- jobs


def test_one_job_per_planned_job_with_its_columns(db, settings, make):
    project = ci_project(make)
    pipeline = create(db, settings, project)
    jobs = jobs_of(db, pipeline)
    assert sorted(jobs) == ["build", "deploy", "test"]
    build, test, deploy = jobs["build"], jobs["test"], jobs["deploy"]
    assert (build.stage, build.stage_idx, build.tag_list, build.scheduling_type) == (
        "build",
        0,
        ["linux"],
        "stage",
    )
    assert {"key": "OWN", "value": "1"}.items() <= build.yaml_variables[0].items()
    assert build.options["script"] == ["echo build"]
    assert (test.scheduling_type, test.allow_failure) == ("dag", True)
    assert [n["job"] for n in test.options["needs"]] == ["build"]
    assert (deploy.when, deploy.stage_idx) == ("manual", 2)
    assert all(
        (j.ref, j.sha, j.project_id) == (pipeline.ref, pipeline.sha, project.id) for j in jobs.values()
    )


def test_a_new_pipeline_is_pending_with_its_first_stage_pending(db, settings, make):
    project = ci_project(make)
    pipeline = create(db, settings, project)
    jobs = jobs_of(db, pipeline)
    assert pipeline.status == "pending"
    assert {n: j.status for n, j in jobs.items()} == {
        "build": "pending",
        "test": "created",
        "deploy": "created",
    }


def test_the_pipeline_records_the_ref_commit_and_counter(db, settings, make):
    project = ci_project(make)
    first = create(db, settings, project)
    second = create(db, settings, project, source="api")
    head = str(repositories.store(settings).open(project.id).references["refs/heads/main"].target)
    assert (first.iid, second.iid) == (1, 2)
    assert (second.ref, second.sha, second.tag, second.source) == ("main", head, False, "api")
    assert second.committed_at is not None
    assert second.config_path == ".gitlab-ci.yml"


def test_a_protected_branch_makes_a_protected_pipeline(db, settings, make):
    project = ci_project(make)  # the default branch is protected as the instance protects it
    sha = make.commit(project, {"a.txt": "a"}, branch="feature", start="main")
    assert create(db, settings, project).protected is True
    pipeline = create(db, settings, project, ref="feature")
    assert (pipeline.protected, pipeline.sha) == (False, sha)


def test_a_tag_makes_a_tag_pipeline(db, settings, make):
    project = ci_project(make)
    head = str(repositories.store(settings).open(project.id).references["refs/heads/main"].target)
    make.tag(project, "v1.0", head)
    pipeline = create(db, settings, project, ref="v1.0")
    assert (pipeline.ref, pipeline.tag) == ("v1.0", True)


def test_creation_records_a_pipeline_event(db, settings, make):
    project = ci_project(make)
    pipeline = create(db, settings, project)
    events = db.scalars(
        select(Event)
        .where(Event.target_type == "Pipeline", Event.target_id == pipeline.id)
        .order_by(Event.id)
    ).all()
    assert events[0].action == "pipeline_created"
    assert events[0].data["hook"] == "pipeline"
    assert events[-1].data["status"] == "pending"
    assert [(e.action, e.project_id) for e in events] == [
        ("pipeline_created", project.id),
        ("pipeline_status", project.id),
    ]
    assert events[0].data == {
        "hook": "pipeline",
        "status": "created",
        "previous_status": None,
        "ref": project.default_branch,
        "sha": pipeline.sha,
        "source": "push",
    }
    assert events[1].data == {
        "hook": "pipeline",
        "status": "pending",
        "previous_status": "created",
        "ref": project.default_branch,
    }


def test_pipeline_variables_are_kept_sealed_and_read_by_rules(db, settings, make):
    config = """
only_when_asked:
  script: echo
  rules:
    - if: $DEPLOY == "yes"
"""
    project = ci_project(make, config=config)
    with pytest.raises(Refused):
        create(db, settings, project)
    pipeline = create(db, settings, project, variables=[{"key": "DEPLOY", "value": "yes"}])
    stored = db.scalars(select(PipelineVariable).where(PipelineVariable.pipeline_id == pipeline.id)).one()
    assert stored.value != "yes"
    assert unseal(settings, stored.value) == "yes"
    assert list(jobs_of(db, pipeline)) == ["only_when_asked"]


def test_predefined_variables_are_read_by_rules(db, settings, make):
    config = """
on_push:
  script: echo
  rules:
    - if: $CI_PIPELINE_SOURCE == "push" && $CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH
on_api:
  script: echo
  rules:
    - if: $CI_PIPELINE_SOURCE == "api"
"""
    project = ci_project(make, config=config)
    assert list(jobs_of(db, create(db, settings, project))) == ["on_push"]
    assert list(jobs_of(db, create(db, settings, project, source="api"))) == ["on_api"]


def test_rules_read_the_server_and_the_commit_as_jobs_do(db, settings, make):
    """A job's predefined variables are readable by rules already: the server's port and
    version, and the commit's title and description in GitLab's split."""
    config = """
server:
  script: echo
  rules:
    - if: $CI_SERVER_PORT == "80" && $CI_SERVER_VERSION_MAJOR =~ /^[0-9]+$/ && $CI_SERVER_FQDN
described:
  script: echo
  rules:
    - if: $CI_COMMIT_TITLE == "Add ci" && $CI_COMMIT_DESCRIPTION == "Why it is here"
"""
    project = make.project_with_repository()
    message = "Add ci\nWhy it is here\n"
    make.commit(project, {".gitlab-ci.yml": config}, branch=project.default_branch, message=message)
    assert sorted(jobs_of(db, create(db, settings, project))) == ["described", "server"]


@pytest.mark.parametrize(
    ("message", "title", "description"),
    [
        ("Fix it", "Fix it", ""),
        ("Fix it\n", "Fix it", ""),
        ("Fix it\n\nBecause.\n", "Fix it", "\nBecause."),
        ("Fix it\r\nBody\r\n", "Fix it", "Body"),
        ("x" * 100 + "\nBody", "x" * 100, "x" * 100 + "\nBody"),
        ("  \n", "No commit message", "No commit message"),
    ],
)
def test_a_commits_title_and_description_split_as_gitlabs(message, title, description):
    assert ci_predefined.commit_text(message) == (title, description)


# ----------------------------------------------------------------------------- refusals


def count(db: Any, model: Any) -> int:
    return db.scalar(select(func.count()).select_from(model))


@pytest.mark.parametrize(
    ("config", "ref", "reason"),
    [
        (CONFIG, "nope", "Reference not found"),
        (None, "main", "Missing CI config file"),
        (
            "workflow:\n  rules:\n    - when: never\njob:\n  script: echo\n",
            "main",
            "Pipeline filtered out by workflow rules.",
        ),
        (
            "job:\n  script: echo\n  rules:\n    - when: never\n",
            "main",
            "No stages / jobs for this pipeline.",
        ),
    ],
)
def test_refusals_write_nothing(db, settings, make, config, ref, reason):
    project = ci_project(make, config=config)
    before = (count(db, Pipeline), count(db, CiJob), count(db, Event))
    with pytest.raises(Refused) as refused:
        create(db, settings, project, ref=ref)
    assert refused.value.reasons == [reason]
    assert (count(db, Pipeline), count(db, CiJob), count(db, Event)) == before


def test_an_invalid_configuration_makes_a_failed_pipeline_with_its_errors(db, settings, make):
    project = ci_project(make, config="job:\n  script: echo\n  when: sometimes\n")
    pipeline = create(db, settings, project)
    assert pipeline.status == "failed"
    assert "when" in (pipeline.yaml_errors or "")
    assert pipeline.failure_reason == "config_error"
    assert jobs_of(db, pipeline) == {}


def test_an_invalid_configuration_is_refused_when_errors_are_not_saved(db, settings, make):
    project = ci_project(make, config="job: [unclosed\n")
    with pytest.raises(Refused):
        create(db, settings, project, save_on_errors=False)
    assert pipelines_of(db, project) == []


# ----------------------------------------------------------------------------- pushes


def head(settings: Any, project: Any) -> str:
    return str(
        repositories.store(settings)
        .open(project.id)
        .references[f"refs/heads/{project.default_branch}"]
        .target
    )


def test_a_push_makes_a_push_pipeline_when_the_queue_runs(db, settings, make, drain):
    project = ci_project(make)
    before = head(settings, project)
    after = make.commit(project, {"b.txt": "b"}, branch="main")
    push(db, settings, project, before, after)
    assert pipelines_of(db, project) == []
    drain()
    [pipeline] = pipelines_of(db, project)
    assert (pipeline.source, pipeline.sha, pipeline.before_sha, pipeline.status) == (
        "push",
        after,
        before,
        "pending",
    )


def test_a_push_without_a_configuration_makes_none(db, settings, make, drain):
    project = ci_project(make, config=None)
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {"b.txt": "b"}))
    drain()
    assert pipelines_of(db, project) == []


@pytest.mark.parametrize("message", ["fix [skip ci]", "Fix\n\n[CI SKIP] please", "[Skip CI] x"])
def test_skip_ci_in_the_message_makes_a_skipped_pipeline(db, settings, make, drain, message):
    project = ci_project(make)
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {"b.txt": "b"}, message=message))
    drain()
    [pipeline] = pipelines_of(db, project)
    assert (pipeline.status, jobs_of(db, pipeline)) == ("skipped", {})


def test_the_ci_skip_push_option_makes_a_skipped_pipeline(db, settings, make, drain):
    project = ci_project(make)
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {"b.txt": "b"}), ["ci.skip"])
    drain()
    assert [p.status for p in pipelines_of(db, project)] == ["skipped"]


def test_ci_variable_push_options_are_the_pipelines_variables(db, settings, make, drain):
    config = 'job:\n  script: echo\n  rules:\n    - if: $DEPLOY == "a=b"\n'
    project = ci_project(make, config=config)
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {"b.txt": "b"}), ["ci.variable=DEPLOY=a=b"])
    drain()
    [pipeline] = pipelines_of(db, project)
    stored = db.scalars(select(PipelineVariable).where(PipelineVariable.pipeline_id == pipeline.id)).one()
    assert (stored.key, unseal(settings, stored.value)) == ("DEPLOY", "a=b")
    assert list(jobs_of(db, pipeline)) == ["job"]


def test_a_push_with_an_invalid_configuration_makes_a_failed_pipeline(db, settings, make, drain):
    project = ci_project(make)
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {".gitlab-ci.yml": "job: [unclosed\n"}))
    drain()
    [pipeline] = pipelines_of(db, project)
    assert pipeline.status == "failed"
    assert pipeline.yaml_errors


def test_a_deleted_branch_makes_no_pipeline(db, settings, make, drain):
    project = ci_project(make)
    repo = repositories.store(settings).open(project.id)
    with transaction(db):
        repositories.record_push(
            db, project, None, "refs/heads/gone", head(settings, project), "0" * 40, repo
        )
    drain()
    assert pipelines_of(db, project) == []


def test_workflow_rules_that_filter_a_push_make_none(db, settings, make, drain):
    project = ci_project(make, config="workflow:\n  rules:\n    - when: never\njob:\n  script: echo\n")
    before = head(settings, project)
    push(db, settings, project, before, make.commit(project, {"b.txt": "b"}))
    drain()
    assert pipelines_of(db, project) == []


def test_a_commit_through_the_api_makes_a_pipeline(db, settings, make, api, drain):
    owner = make.user()
    project = ci_project(make, owner=owner)
    r = api(owner).post(
        f"/projects/{project.id}/repository/files/new.txt",
        json={"branch": "main", "content": "x", "commit_message": "add"},
    )
    assert r.status_code == 201, r.text
    drain()
    [pipeline] = pipelines_of(db, project)
    assert (pipeline.source, pipeline.user_id) == ("push", owner.id)


def test_a_tag_push_makes_a_tag_pipeline(db, settings, make, drain):
    project = ci_project(make)
    make.tag(project, "v2", head(settings, project))
    repo = repositories.store(settings).open(project.id)
    with transaction(db):
        repositories.record_push(db, project, None, "refs/tags/v2", None, head(settings, project), repo)
    drain()
    [pipeline] = pipelines_of(db, project)
    assert (pipeline.ref, pipeline.tag, pipeline.protected) == ("v2", True, False)


# ----------------------------------------------------------------------------- configuration


def test_project_variables_are_read_by_rules(db, settings, make):
    config = 'job:\n  script: echo\n  rules:\n    - if: $STAGE_ON == "yes"\n'
    project = ci_project(make, config=config)
    with pytest.raises(Refused):
        create(db, settings, project)
    with transaction(db):
        db.add(ProjectVariable(project_id=project.id, key="STAGE_ON", value=seal(settings, "yes")))
    assert list(jobs_of(db, create(db, settings, project))) == ["job"]


def test_the_workflow_name_names_the_pipeline(db, settings, make):
    config = "workflow:\n  name: Build $CI_COMMIT_REF_NAME\njob:\n  script: echo\n"
    assert create(db, settings, ci_project(make, config=config)).name == "Build main"


def test_the_configuration_path_of_the_project_is_read(db, settings, make):
    project = ci_project(make, config=None, ci_config_path="ci/pipeline.yml")
    make.commit(project, {"ci/pipeline.yml": "job:\n  script: echo\n"}, branch="main")
    pipeline = create(db, settings, project)
    assert (pipeline.config_path, list(jobs_of(db, pipeline))) == ("ci/pipeline.yml", ["job"])


def actor_of(db: Any, user: Any) -> Actor:
    return Actor(user=user_finder.row_by_id(db, user.id), via="session", scopes=None)


def test_a_configuration_in_another_project(db, settings, make):
    user = make.user()
    group = make.group(path="infra", members={user: REPORTER})
    templates = make.project_with_repository(namespace=group, path="templates")
    make.commit(templates, {"ci.yml": "shared:\n  script: echo\n"}, branch=templates.default_branch)
    project = ci_project(make, owner=user, config=None, ci_config_path="ci.yml@infra/templates")
    pipeline = create(db, settings, project, actor=actor_of(db, user))
    assert list(jobs_of(db, pipeline)) == ["shared"]


def test_another_projects_configuration_needs_sight_of_its_code(db, settings, make):
    user = make.user()
    group = make.group(path="secret")
    templates = make.project_with_repository(namespace=group, path="templates")
    make.commit(templates, {"ci.yml": "shared:\n  script: echo\n"}, branch=templates.default_branch)
    project = ci_project(make, owner=user, config=None, ci_config_path="ci.yml@secret/templates")
    pipeline = create(db, settings, project, actor=actor_of(db, user))
    assert pipeline.status == "failed"
    assert pipeline.yaml_errors == "Project `secret/templates` not found or access denied!"
    assert jobs_of(db, pipeline) == {}


def test_a_skip_does_not_hide_an_invalid_configuration(db, settings, make):
    project = ci_project(make, config="job: [unclosed\n")
    assert create(db, settings, project, skip=True).status == "failed"


def test_a_skip_wins_over_workflow_rules(db, settings, make):
    project = ci_project(make, config="workflow:\n  rules:\n    - when: never\njob:\n  script: echo\n")
    assert create(db, settings, project, skip=True).status == "skipped"


# ----------------------------------------------------------------------------- git over HTTP


# A pack of no objects: a push of a ref to a commit the server already has.
_HEADER = b"PACK" + struct.pack(">II", 2, 0)
EMPTY_PACK = _HEADER + hashlib.sha1(_HEADER).digest()


def receive_pack(client: Any, owner: Any, project: Any, body: bytes) -> list[bytes]:
    r = client.post(
        f"/{owner.username}/{project.path}.git/git-receive-pack",
        content=body,
        headers={**RECEIVE_REQUEST, **basic("x", owner.token)},
    )
    return pkt_lines(r.content)


@pytest.mark.parametrize(("options", "status"), [((), "pending"), (("ci.skip",), "skipped")])
def test_a_push_over_http_makes_a_pipeline_when_the_queue_runs(
    client, db, settings, make, drain, options, status
):
    owner = make.user()
    project = ci_project(make, owner=owner)
    sha = head(settings, project)
    answer = receive_pack(
        client,
        owner,
        project,
        push_request((ZERO, sha, "refs/heads/topic"), caps="report-status", options=options) + EMPTY_PACK,
    )
    assert answer == [b"unpack ok\n", b"ok refs/heads/topic\n", b""]
    drain()
    [pipeline] = pipelines_of(db, project)
    assert (pipeline.ref, pipeline.sha, pipeline.source, pipeline.status) == ("topic", sha, "push", status)
    assert pipeline.user_id == owner.id
