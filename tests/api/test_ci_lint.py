"""The CI Lint API: a configuration sent in (Developers) or the project's own at a commit
(whoever reads its code) answers `valid`, GitLab's errors, the merged YAML, the included files
and, when asked, the jobs; a dry run evaluates rules for a push to a ref. Nothing is written."""

from __future__ import annotations

import pytest

from kiln.models import CiJob, Pipeline
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.services.ci_lint import NO_JOBS

GOOD = """
stages: [build, test, deploy]
build:
  stage: build
  script: make
  tags: [docker]
  artifacts: {paths: [out/]}
test:
  stage: test
  needs: [build]
  script: make test
deploy:
  stage: deploy
  script: ./deploy
  when: manual
  environment: production
  rules:
    - if: $CI_COMMIT_BRANCH == "release"
"""


def lint_url(p) -> str:
    return f"/projects/{p.id}/ci/lint"


@pytest.fixture
def dev(make):
    return make.user()


@pytest.fixture
def project(make, dev):
    owner = make.user()
    p = make.project_with_repository(owner=owner, members={dev: DEVELOPER})
    make.commit(p, {".gitlab-ci.yml": GOOD, "ci/extra.yml": "extra: {script: x}\n"})
    return p


def test_a_valid_configuration(api, dev, project):
    r = api(dev).post(lint_url(project), json={"content": GOOD})
    assert r.status_code == 200
    body = r.json()
    assert (body["valid"], body["errors"], body["warnings"], body["includes"]) == (True, [], [], [])
    assert body["merged_yaml"].startswith("---\n")
    assert "jobs" not in body


def test_include_jobs_lists_every_job_of_a_static_check(api, dev, project):
    body = api(dev).post(lint_url(project), json={"content": GOOD, "include_jobs": True}).json()
    assert [j["name"] for j in body["jobs"]] == ["build", "test", "deploy"]
    build, test, deploy = body["jobs"]
    assert build == {
        "name": "build",
        "stage": "build",
        "before_script": [],
        "script": ["make"],
        "after_script": [],
        "tag_list": ["docker"],
        "environment": None,
        "when": "on_success",
        "allow_failure": False,
        "only": {"refs": ["branches", "tags"]},
        "except": None,
        "needs": None,
    }
    assert test["needs"] == [{"name": "build", "artifacts": True, "optional": False}]
    assert (deploy["when"], deploy["allow_failure"], deploy["environment"], deploy["only"]) == (
        "manual",
        True,
        "production",
        None,
    )


def test_a_dry_run_evaluates_rules_for_the_ref(api, dev, project, make, db):
    make.branch(project, "release", make_sha(api, dev, project))
    on_main = (
        api(dev).post(lint_url(project), json={"content": GOOD, "dry_run": True, "include_jobs": True}).json()
    )
    assert [j["name"] for j in on_main["jobs"]] == ["build", "test"]
    assert "only" not in on_main["jobs"][0]
    release = {"content": GOOD, "dry_run": True, "include_jobs": True, "ref": "release"}
    assert [j["name"] for j in api(dev).post(lint_url(project), json=release).json()["jobs"]] == [
        "build",
        "test",
        "deploy",
    ]
    assert (db.query(Pipeline).count(), db.query(CiJob).count()) == (0, 0)


def make_sha(api, user, p) -> str:
    return api(user).get(f"/projects/{p.id}/repository/commits/main").json()["id"]


def test_a_dry_run_where_rules_leave_no_job_is_invalid(api, dev, project):
    content = "j: {script: x, rules: [{if: $NOPE}]}\n"
    body = api(dev).post(lint_url(project), json={"content": content, "dry_run": True}).json()
    assert (body["valid"], body["errors"]) == (False, [NO_JOBS])


def test_include_local_reads_the_projects_files(api, dev, project):
    content = "include: ci/extra.yml\nj: {script: x}\n"
    body = api(dev).post(lint_url(project), json={"content": content, "include_jobs": True}).json()
    assert body["valid"] is True
    sha = make_sha(api, dev, project)
    path = api(dev).get(f"/projects/{project.id}").json()["web_url"]
    assert body["includes"] == [
        {
            "type": "local",
            "location": "ci/extra.yml",
            "blob": f"{path}/-/blob/{sha}/ci/extra.yml",
            "raw": f"{path}/-/raw/{sha}/ci/extra.yml",
            "extra": {},
            "context_project": api(dev).get(f"/projects/{project.id}").json()["path_with_namespace"],
            "context_sha": sha,
        }
    ]
    assert sorted(j["name"] for j in body["jobs"]) == ["extra", "j"]


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (
            "a:\n  b: 1\n c: 2\n",
            "(<unknown>): did not find expected key while parsing a block mapping at line 1 column 1",
        ),
        ("j: {script: x, foo: 1}\n", "jobs:j config contains unknown keys: foo"),
        (
            "j: {stage: test}\nk: {script: x}\n",
            "jobs j config should implement the script:, run:, or trigger: keyword",
        ),
        (
            "a: {script: x, needs: [b]}\nb: {script: x, needs: [a]}\n",
            "The pipeline has circular dependencies",
        ),
        ("j: {script: x, needs: [nope]}\n", "j job: undefined need: nope"),
    ],
)
def test_invalid_configurations_answer_gitlabs_errors(api, dev, project, db, content, error):
    body = api(dev).post(lint_url(project), json={"content": content, "include_jobs": True}).json()
    assert (body["valid"], body["errors"], body["jobs"]) == (False, [error], [])
    assert db.query(Pipeline).count() == 0


def test_content_is_required(api, dev, project):
    r = api(dev).post(lint_url(project), json={})
    assert (r.status_code, r.json()) == (400, {"error": "content is missing"})


def test_the_projects_own_configuration(api, dev, project):
    body = api(dev).get(lint_url(project), params={"include_jobs": True}).json()
    assert body["valid"] is True
    assert [j["name"] for j in body["jobs"]] == ["build", "test", "deploy"]


def test_the_projects_configuration_at_a_content_ref(api, dev, project, make):
    old = make_sha(api, dev, project)
    make.commit(project, {".gitlab-ci.yml": "broken: {stage: test}\n"})
    assert api(dev).get(lint_url(project)).json()["valid"] is False
    assert api(dev).get(lint_url(project), params={"content_ref": old}).json()["valid"] is True
    assert api(dev).get(lint_url(project), params={"sha": old}).json()["valid"] is True


def test_the_configuration_path_follows_ci_config_path(api, dev, project, make, db):
    make.commit(project, {"ci/pipeline.yml": "only: {script: x}\n"})
    project.ci_config_path = "ci/pipeline.yml"
    db.flush()
    body = api(dev).get(lint_url(project), params={"include_jobs": True}).json()
    assert [j["name"] for j in body["jobs"]] == ["only"]


def test_sha_and_content_ref_are_mutually_exclusive(api, dev, project):
    r = api(dev).get(lint_url(project), params={"sha": "main", "content_ref": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "sha, content_ref are mutually exclusive"})


def test_ref_and_dry_run_ref_are_mutually_exclusive(api, dev, project):
    r = api(dev).get(lint_url(project), params={"ref": "main", "dry_run_ref": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "ref, dry_run_ref are mutually exclusive"})


def test_an_unknown_commit_or_an_empty_repository_is_404(api, dev, project, make):
    r = api(dev).get(lint_url(project), params={"content_ref": "nope"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})
    empty = make.project_with_repository(owner=dev, readme=False)
    r = api(dev).get(lint_url(empty))
    assert (r.status_code, r.json()) == (404, {"message": "404 Repository Not Found"})


def test_a_missing_configuration_file_is_invalid(api, dev, make):
    p = make.project_with_repository(owner=dev)
    body = api(dev).get(lint_url(p)).json()
    assert (body["valid"], body["errors"]) == (False, ["Please provide content of .gitlab-ci.yml"])


@pytest.mark.parametrize(("level", "status"), [(None, 404), (GUEST, 403), (REPORTER, 403), (DEVELOPER, 200)])
def test_linting_content_takes_a_developer(api, make, project, level, status):
    u = make.user()
    if level is not None:
        make.member(project, u, level)
    assert api(u).post(lint_url(project), json={"content": GOOD}).status_code == status


@pytest.mark.parametrize(("level", "status"), [(None, 404), (GUEST, 403), (REPORTER, 200)])
def test_reading_the_projects_configuration_takes_code_access(api, make, project, level, status):
    u = make.user()
    if level is not None:
        make.member(project, u, level)
    assert api(u).get(lint_url(project)).status_code == status


def test_anonymous_callers(api, make):
    owner = make.user()
    public = make.project_with_repository(owner=owner, visibility="public")
    make.commit(public, {".gitlab-ci.yml": GOOD})
    assert api().get(lint_url(public)).json()["valid"] is True
    assert api().post(lint_url(public), json={"content": GOOD}).status_code == 401
    private = make.project_with_repository(owner=owner)
    assert api().get(lint_url(private)).status_code == 404


def test_the_admin_lints_any_project(api, project):
    assert api("root").post(lint_url(project), json={"content": GOOD}).json()["valid"] is True
