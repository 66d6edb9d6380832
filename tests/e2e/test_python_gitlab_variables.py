"""python-gitlab, as published, managing project, group and instance CI/CD variables on a
running `kiln serve`."""

from __future__ import annotations

import pytest
from gitlab.exceptions import GitlabCreateError, GitlabDeleteError, GitlabGetError

from tests.e2e.test_python_gitlab import client_of, create_user, token_for

pytestmark = pytest.mark.e2e

MASKABLE = "abc@:.~+/=_-1234"


def test_project_variables(root, base_url, unique):
    owner = create_user(root, unique("vowner"))
    gl = client_of(base_url, token_for(root, owner))
    project = gl.projects.create({"name": unique("vars")})

    created = project.variables.create({"key": "TOKEN", "value": MASKABLE, "masked": True, "protected": True})
    assert (created.key, created.value, created.masked, created.protected) == ("TOKEN", MASKABLE, True, True)
    project.variables.create({"key": "TOKEN", "value": "prod", "environment_scope": "production"})
    project.variables.create({"key": "PLAIN", "value": "one", "variable_type": "file"})

    assert sorted((v.key, v.environment_scope) for v in project.variables.list(get_all=True)) == [
        ("PLAIN", "*"),
        ("TOKEN", "*"),
        ("TOKEN", "production"),
    ]
    assert project.variables.get("TOKEN", filter={"environment_scope": "production"}).value == "prod"
    with pytest.raises(GitlabGetError) as err:
        project.variables.get("TOKEN")
    assert err.value.response_code == 409

    plain = project.variables.get("PLAIN")
    plain.value = "two"
    plain.description = "changed"
    plain.save()
    again = project.variables.get("PLAIN")
    assert (again.value, again.description, again.variable_type) == ("two", "changed", "file")
    project.variables.update("TOKEN", {"value": "prod2", "filter": {"environment_scope": "production"}})
    assert project.variables.get("TOKEN", filter={"environment_scope": "production"}).value == "prod2"

    with pytest.raises(GitlabCreateError) as err:
        project.variables.create({"key": "BAD", "value": "not maskable", "masked": True})
    assert err.value.response_code == 400
    assert "BAD" not in {v.key for v in project.variables.list(get_all=True)}

    hidden = project.variables.create({"key": "HIDDEN", "value": MASKABLE, "masked_and_hidden": True})
    assert (hidden.value, hidden.hidden) == (None, True)

    project.variables.delete("TOKEN", filter={"environment_scope": "production"})
    plain.delete()
    assert sorted(v.key for v in project.variables.list(get_all=True)) == ["HIDDEN", "TOKEN"]
    with pytest.raises(GitlabDeleteError):
        project.variables.delete("PLAIN")


def test_group_variables(root, base_url, unique):
    owner = create_user(root, unique("gowner"))
    gl = client_of(base_url, token_for(root, owner))
    path = unique("gvars")
    group = gl.groups.create({"name": path, "path": path})

    group.variables.create({"key": "SHARED", "value": "g", "environment_scope": "review/*"})
    got = group.variables.get("SHARED")
    assert (got.value, got.environment_scope) == ("g", "review/*")
    got.value = "g2"
    got.save()
    assert [(v.key, v.value) for v in group.variables.list(get_all=True)] == [("SHARED", "g2")]
    with pytest.raises(GitlabCreateError) as err:
        group.variables.create({"key": "SHARED", "value": "again", "environment_scope": "review/*"})
    assert err.value.response_code == 400
    assert [(v.key, v.value) for v in group.variables.list(get_all=True)] == [("SHARED", "g2")]
    group.variables.delete("SHARED")
    assert group.variables.list(get_all=True) == []


def test_instance_variables(root, base_url, unique):
    key = unique("INSTANCE").replace("-", "_")
    created = root.variables.create({"key": key, "value": "everywhere", "raw": True})
    assert (created.key, created.raw) == (key, True)
    assert root.variables.get(key).value == "everywhere"
    assert key in {v.key for v in root.variables.list(get_all=True)}

    variable = root.variables.get(key)
    variable.value = "changed"
    variable.save()
    assert root.variables.get(key).value == "changed"

    user = create_user(root, unique("plain"))
    with pytest.raises(GitlabGetError) as err:
        client_of(base_url, token_for(root, user)).variables.get(key)
    assert err.value.response_code == 403

    root.variables.delete(key)
    with pytest.raises(GitlabGetError) as err:
        root.variables.get(key)
    assert err.value.response_code == 404
