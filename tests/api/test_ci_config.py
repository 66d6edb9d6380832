"""Where a project's CI configuration comes from (kiln.services.ci_config): the project's own
ci_config_path, else the instance's default_ci_config_path, else .gitlab-ci.yml; in the
project's repository, in another project (`file.yml@group/project[:ref]`), or remote."""

from __future__ import annotations

import pytest

from kiln.services import ci_config, instance_settings
from kiln.services.ci_config import CiConfig


def test_a_project_without_a_path_uses_gitlab_ci_yml(make, db):
    project = make.project()
    assert ci_config.for_project(db, project.id) == CiConfig(
        kind="repository", configured=".gitlab-ci.yml", file=".gitlab-ci.yml"
    )


def test_the_instance_default_applies_to_projects_without_a_path(make, db):
    project = make.project()
    instance_settings.update(db, {"default_ci_config_path": "ci/pipeline.yml"})
    assert ci_config.for_project(db, project.id).file == "ci/pipeline.yml"


def test_an_empty_instance_default_is_no_default(make, db):
    project = make.project()
    instance_settings.update(db, {"default_ci_config_path": ""})
    assert ci_config.for_project(db, project.id).file == ".gitlab-ci.yml"


def test_the_projects_own_path_wins_over_the_instance_default(api, make, db):
    owner = make.user()
    project = make.project(owner=owner)
    instance_settings.update(db, {"default_ci_config_path": "ci/pipeline.yml"})
    r = api(owner).put(f"/projects/{project.id}", json={"ci_config_path": "build/own.yml"})
    assert (r.status_code, r.json()["ci_config_path"]) == (200, "build/own.yml")
    assert ci_config.for_project(db, project.id).file == "build/own.yml"


def test_an_instance_default_naming_another_project(make, db):
    project = make.project()
    instance_settings.update(db, {"default_ci_config_path": "templates/ci.yml@infra/pipelines"})
    assert ci_config.for_project(db, project.id) == CiConfig(
        kind="external_project",
        configured="templates/ci.yml@infra/pipelines",
        file="templates/ci.yml",
        project="infra/pipelines",
    )


@pytest.mark.parametrize(
    ("configured", "file", "project", "ref"),
    [
        (".gitlab-ci.yml@group/project", ".gitlab-ci.yml", "group/project", None),
        ("a/b.yaml@group/sub/project", "a/b.yaml", "group/sub/project", None),
        ("ci.yml@group/project:release-1.0", "ci.yml", "group/project", "release-1.0"),
        ("ci.yml@group/project:refs/tags/v1", "ci.yml", "group/project", "refs/tags/v1"),
    ],
)
def test_another_projects_file_with_an_optional_ref(configured, file, project, ref):
    found = ci_config.parse(configured)
    assert (found.kind, found.file, found.project, found.ref) == ("external_project", file, project, ref)


@pytest.mark.parametrize("configured", ["https://example.com/ci/config.yml", "http://ci.example.com/x?y=1"])
def test_a_url_is_a_remote_configuration(configured):
    assert ci_config.parse(configured) == CiConfig(kind="remote", configured=configured, url=configured)


@pytest.mark.parametrize(
    "configured", ["ci.json@group/project", "ci.yml@", "my@file.yml", "ftp://host/ci.yml"]
)
def test_anything_else_is_a_file_of_the_projects_repository(configured):
    assert ci_config.parse(configured) == CiConfig(kind="repository", configured=configured, file=configured)


def test_a_value_that_names_another_project_is_one_even_if_it_looks_like_a_url():
    assert ci_config.parse("https://example.com/ci.yml@group/project").kind == "external_project"


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("ci/pipeline.yml", []),
        ("ci.yml@group/project", []),
        ("/etc/passwd", [ci_config.UNSAFE]),
        ("ci/../../secret.yml", [ci_config.UNSAFE]),
        ("x" * 256, ["is too long (maximum is 255 characters)"]),
    ],
)
def test_paths_that_climb_out_of_the_repository_are_refused(value, found):
    assert ci_config.problems(value) == found
