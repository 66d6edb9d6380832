"""POST /projects/:id/pipeline: a pipeline for a ref, pending once made, with the variables
given; GitLab's 400s for a missing ref, a ref that does not exist, a missing or invalid
configuration and workflow rules that leave nothing; Developers create, on a protected
branch only those who may push to it."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from kiln.models import CiJob, Event, Job, Pipeline, PipelineVariable
from kiln.models.namespaces import DEVELOPER, MAINTAINER, REPORTER
from tests.test_pipeline_creation import ci_project


def create_url(project: Any) -> str:
    return f"/projects/{project.id}/pipeline"


def written(db: Any) -> tuple[int, ...]:
    return tuple(
        db.scalar(select(func.count()).select_from(m))
        for m in (Pipeline, CiJob, PipelineVariable, Event, Job)
    )


@pytest.fixture
def owner(make):
    return make.user()


@pytest.fixture
def project(make, owner):
    return ci_project(make, owner=owner)


def test_a_created_pipeline_is_pending(api, owner, project, settings):
    r = api(owner).post(create_url(project), json={"ref": "main"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["status"], body["ref"], body["source"], body["iid"]) == ("pending", "main", "api", 1)
    assert body["user"]["id"] == owner.id
    assert (
        body["web_url"] == f"{settings.external_url}/{owner.username}/{project.path}/-/pipelines/{body['id']}"
    )
    assert api(owner).get(f"/projects/{project.id}/pipelines/{body['id']}").json() == body


def test_variables_are_kept_with_the_pipeline(api, owner, project):
    variables = [
        {"key": "A", "value": "one"},
        {"key": "B", "value": "two", "variable_type": "file"},
    ]
    r = api(owner).post(create_url(project), json={"ref": "main", "variables": variables, "inputs": {"x": 1}})
    assert r.status_code == 201, r.text
    shown = api(owner).get(f"/projects/{project.id}/pipelines/{r.json()['id']}/variables").json()
    assert shown == [
        {"variable_type": "env_var", "key": "A", "value": "one", "raw": False},
        {"variable_type": "file", "key": "B", "value": "two", "raw": False},
    ]


def test_variables_as_a_form_hash(api, owner, project):
    r = api(owner).post(create_url(project), data={"ref": "main", "variables[K]": "v"})
    assert r.status_code == 201, r.text
    shown = api(owner).get(f"/projects/{project.id}/pipelines/{r.json()['id']}/variables").json()
    assert [(v["key"], v["value"]) for v in shown] == [("K", "v")]


@pytest.mark.parametrize(
    ("body", "answer"),
    [
        ({}, {"error": "ref is missing"}),
        ({"ref": "nope"}, {"message": {"base": ["Reference not found"]}}),
        (
            {"ref": "main", "variables": [{"key": "bad key", "value": "x"}]},
            {"message": {"base": ["Variables key can contain only letters, digits and '_'."]}},
        ),
        ({"ref": "main", "variables": [{"key": "A", "value": "x", "variable_type": "other"}]}, None),
    ],
)
def test_bad_requests_are_400_and_write_nothing(api, owner, project, db, body, answer):
    before = written(db)
    r = api(owner).post(create_url(project), json=body)
    assert r.status_code == 400, r.text
    if answer is not None:
        assert r.json() == answer
    assert written(db) == before


def test_a_missing_configuration_is_400(api, make, owner, db):
    project = ci_project(make, owner=owner, config=None)
    before = written(db)
    r = api(owner).post(create_url(project), json={"ref": "main"})
    assert (r.status_code, r.json()) == (400, {"message": {"base": ["Missing CI config file"]}})
    assert written(db) == before


def test_an_invalid_configuration_is_400_and_makes_no_pipeline(api, make, owner, db):
    project = ci_project(make, owner=owner, config="job:\n  script: echo\n  when: sometimes\n")
    before = written(db)
    r = api(owner).post(create_url(project), json={"ref": "main"})
    assert r.status_code == 400
    [message] = r.json()["message"]["base"]
    assert "when" in message
    assert written(db) == before


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        (
            "workflow:\n  rules:\n    - when: never\njob:\n  script: echo\n",
            "Pipeline filtered out by workflow rules.",
        ),
        ("job:\n  script: echo\n  rules:\n    - if: $NOPE\n", "No stages / jobs for this pipeline."),
    ],
)
def test_nothing_to_run_is_400(api, make, owner, config, reason):
    project = ci_project(make, owner=owner, config=config)
    r = api(owner).post(create_url(project), json={"ref": "main"})
    assert (r.status_code, r.json()) == (400, {"message": {"base": [reason]}})


def test_a_tag_pipeline(api, make, owner, project, settings):
    from kiln.services import repositories

    head = str(repositories.store(settings).open(project.id).references["refs/heads/main"].target)
    make.tag(project, "v1", head)
    body = api(owner).post(create_url(project), json={"ref": "v1"}).json()
    assert (body["ref"], body["tag"], body["sha"]) == ("v1", True, head)


# ----------------------------------------------------------------------------- who creates


def test_developers_create_on_unprotected_branches(api, make, project, settings):
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    make.commit(project, {"f": "f"}, branch="feature", start="main")
    r = api(dev).post(create_url(project), json={"ref": "feature"})
    assert (r.status_code, r.json()["status"]) == (201, "pending")


def test_a_protected_branch_takes_someone_who_may_push_to_it(api, make, project, db):
    dev, maintainer = make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    make.member(project, maintainer, MAINTAINER)
    before = written(db)
    r = api(dev).post(create_url(project), json={"ref": "main"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"base": ["Insufficient permissions for protected ref"]}},
    )
    assert written(db) == before
    assert api(maintainer).post(create_url(project), json={"ref": "main"}).status_code == 201


def test_reporters_may_not_create(api, make, project, db):
    reporter = make.user()
    make.member(project, reporter, REPORTER)
    before = written(db)
    assert api(reporter).post(create_url(project), json={"ref": "main"}).status_code == 403
    assert written(db) == before


def test_outsiders_and_anonymous_callers(api, make, project):
    r = api(make.user()).post(create_url(project), json={"ref": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api().post(create_url(project), json={"ref": "main"}).status_code == 401


def test_administrators_create_anywhere(api, project):
    assert api("root").post(create_url(project), json={"ref": "main"}).status_code == 201


def test_an_archived_project_takes_no_pipeline(api, make, owner):
    project = ci_project(make, owner=owner, archived=True)
    assert api(owner).post(create_url(project), json={"ref": "main"}).status_code == 403
