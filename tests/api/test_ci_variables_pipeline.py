"""What a job is given: services.ci_variables.for_pipeline, the instance's variables, then the
groups' from the root down, then the project's, protected ones only on protected refs, each
group or project variable only where its environment scope matches."""

from __future__ import annotations

import pytest

from kiln.models.namespaces import MAINTAINER
from kiln.services import ci_variables as service
from kiln.services.ci_variables import scope_matches
from tests.api.test_ci_variables import MASKABLE, add
from tests.statements import recording

INSTANCE = "/admin/ci/variables"


@pytest.fixture
def tree(api, make):
    """A project in a subgroup, its owner allowed everywhere: (owner, top, sub, project)."""
    u = make.user()
    top = make.group(owners=[u], path="top")
    sub = make.group(parent=top, path="sub")
    p = make.project(namespace=sub, owner=u, members={u: MAINTAINER})
    return u, top, sub, p


def given(db, settings, p, namespaces, *, protected_ref=False, environment=None):
    return service.for_pipeline(
        db,
        settings,
        project_id=p.id,
        namespace_ids=[n.id for n in namespaces],
        protected_ref=protected_ref,
        environment=environment,
    )


def pairs(variables):
    return [(v["key"], v["value"]) for v in variables]


def test_a_job_is_given_the_runners_variable_shape(api, db, settings, tree):
    u, top, sub, p = tree
    add(api, u, f"/projects/{p.id}/variables", key="F", value=MASKABLE, variable_type="file", masked=True)
    add(api, u, f"/projects/{p.id}/variables", key="R", value="$not_expanded", raw=True)
    assert given(db, settings, p, [top, sub]) == [
        {"key": "F", "value": MASKABLE, "public": False, "file": True, "masked": True, "raw": False},
        {"key": "R", "value": "$not_expanded", "public": False, "file": False, "masked": False, "raw": True},
    ]


def test_levels_come_in_order_and_later_ones_win(api, db, settings, tree):
    u, top, sub, p = tree
    add(api, "root", INSTANCE, key="SHARED", value="instance")
    add(api, "root", INSTANCE, key="ONLY_INSTANCE", value="i")
    add(api, u, f"/groups/{sub.id}/variables", key="SHARED", value="sub")
    add(api, u, f"/groups/{top.id}/variables", key="SHARED", value="top")
    add(api, u, f"/groups/{top.id}/variables", key="ONLY_TOP", value="t")
    add(api, u, f"/projects/{p.id}/variables", key="ONLY_PROJECT", value="p")
    assert pairs(given(db, settings, p, [top, sub])) == [
        ("ONLY_INSTANCE", "i"),
        ("ONLY_TOP", "t"),
        ("SHARED", "sub"),
        ("ONLY_PROJECT", "p"),
    ]
    add(api, u, f"/projects/{p.id}/variables", key="SHARED", value="project")
    assert dict(pairs(given(db, settings, p, [top, sub])))["SHARED"] == "project"


def test_only_the_projects_own_groups_count(api, db, make, settings, tree):
    u, top, sub, p = tree
    other = make.group(owners=[u])
    add(api, u, f"/groups/{other.id}/variables", key="ELSEWHERE", value="x")
    add(api, u, f"/projects/{make.project(owner=u).id}/variables", key="OTHER_PROJECT", value="x")
    assert given(db, settings, p, [top, sub]) == []


def test_hidden_values_are_given(api, db, settings, tree):
    u, _top, _sub, p = tree
    add(api, u, f"/projects/{p.id}/variables", key="H", value=MASKABLE, masked_and_hidden=True)
    assert pairs(given(db, settings, p, [])) == [("H", MASKABLE)]


def test_protected_variables_only_on_protected_refs(api, db, settings, tree):
    u, top, sub, p = tree
    add(api, "root", INSTANCE, key="I", value="i", protected=True)
    add(api, u, f"/groups/{top.id}/variables", key="G", value="g", protected=True)
    add(api, u, f"/projects/{p.id}/variables", key="P", value="p", protected=True)
    add(api, u, f"/projects/{p.id}/variables", key="OPEN", value="o")
    assert pairs(given(db, settings, p, [top, sub])) == [("OPEN", "o")]
    assert [k for k, _ in pairs(given(db, settings, p, [top, sub], protected_ref=True))] == [
        "I",
        "G",
        "P",
        "OPEN",
    ]


def test_without_an_environment_only_wildcard_scoped_variables(api, db, settings, tree):
    u, top, sub, p = tree
    add(api, u, f"/groups/{top.id}/variables", key="G", value="all")
    add(api, u, f"/groups/{top.id}/variables", key="G", value="prod", environment_scope="production")
    add(api, u, f"/projects/{p.id}/variables", key="P", value="review", environment_scope="review/*")
    assert pairs(given(db, settings, p, [top, sub])) == [("G", "all")]


def test_scopes_select_by_environment(api, db, settings, tree):
    u, top, sub, p = tree
    url = f"/projects/{p.id}/variables"
    add(api, u, url, key="ALL", value="all")
    add(api, u, url, key="REVIEW", value="review", environment_scope="review/*")
    add(api, u, url, key="PROD", value="prod", environment_scope="production")
    assert pairs(given(db, settings, p, [top, sub], environment="review/feature-1")) == [
        ("ALL", "all"),
        ("REVIEW", "review"),
    ]
    assert pairs(given(db, settings, p, [top, sub], environment="production")) == [
        ("ALL", "all"),
        ("PROD", "prod"),
    ]
    assert pairs(given(db, settings, p, [top, sub], environment="staging")) == [("ALL", "all")]


def test_within_a_level_the_most_specific_scope_wins(api, db, settings, tree):
    u, top, sub, p = tree
    url = f"/projects/{p.id}/variables"
    add(api, u, url, key="K", value="exact", environment_scope="review/app")
    add(api, u, url, key="K", value="pattern", environment_scope="review/*")
    add(api, u, url, key="K", value="all")
    assert pairs(given(db, settings, p, [top, sub], environment="review/app")) == [("K", "exact")]
    assert pairs(given(db, settings, p, [top, sub], environment="review/other")) == [("K", "pattern")]
    assert pairs(given(db, settings, p, [top, sub], environment="production")) == [("K", "all")]


def test_a_group_scope_loses_to_the_project_whatever_its_specificity(api, db, settings, tree):
    u, top, sub, p = tree
    add(api, u, f"/groups/{sub.id}/variables", key="K", value="group", environment_scope="production")
    add(api, u, f"/projects/{p.id}/variables", key="K", value="project")
    assert pairs(given(db, settings, p, [top, sub], environment="production")) == [("K", "project")]


@pytest.mark.parametrize(
    ("scope", "environment", "matches"),
    [
        ("*", None, True),
        ("*", "anything", True),
        ("production", "production", True),
        ("production", "Production", False),
        ("production", None, False),
        ("review/*", "review/a/b", True),
        ("review/*", "review/", True),
        ("review/*", "reviews/a", False),
        ("*/app", "review/app", True),
        ("a.b", "axb", False),  # only `*` is special
        ("a_b", "axb", False),
        ("a%b", "axxb", False),
    ],
)
def test_gitlabs_wildcard_scopes(scope, environment, matches):
    assert scope_matches(scope, environment) is matches


def test_statements_are_constant_in_variables_and_groups(api, db, make, runtime, settings, tree):
    u, top, sub, p = tree
    add(api, u, f"/projects/{p.id}/variables", key="K", value="v")
    with recording(runtime.engine) as few:
        given(db, settings, p, [top, sub], environment="production")
    deeper = [top, sub]
    for _ in range(3):
        deeper.append(make.group(parent=deeper[-1]))
        add(api, u, f"/groups/{deeper[-1].id}/variables", key="G", value="g", environment_scope="production")
    add(api, "root", INSTANCE, key="I", value="i")
    for i in range(10):
        add(api, u, f"/projects/{p.id}/variables", key=f"K{i}", value="v", environment_scope="prod*")
    with recording(runtime.engine) as many:
        result = given(db, settings, p, deeper, environment="production")
    assert len(result) == 13
    assert len(few) == len(many) == 3
