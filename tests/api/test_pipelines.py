"""Reading pipelines: the list with every filter of the spec, one pipeline's detail, the latest
pipeline of a ref, and who may read them (Reporters; anyone who sees the project when its
pipelines are public)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kiln.db import transaction
from kiln.entities.pipelines import pipeline_basic
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.queries import pipelines as finder
from tests.statements import count, recording
from tests.test_pipeline_processing import finish

LIST_FIELDS = {
    "id",
    "iid",
    "project_id",
    "sha",
    "ref",
    "status",
    "source",
    "created_at",
    "updated_at",
    "web_url",
    "name",
}
DETAIL_FIELDS = LIST_FIELDS | {
    "before_sha",
    "tag",
    "yaml_errors",
    "user",
    "started_at",
    "finished_at",
    "committed_at",
    "duration",
    "queued_duration",
    "coverage",
    "detailed_status",
    "archived",
}


def url(project: Any, suffix: str = "") -> str:
    return f"/projects/{project.id}/pipelines{suffix}"


def ids(r: Any) -> list[int]:
    assert r.status_code == 200, r.text
    return [p["id"] for p in r.json()]


@pytest.fixture
def owner(make):
    return make.user()


@pytest.fixture
def project(make, owner):
    return make.project(owner=owner)


# ----------------------------------------------------------------------------- list


def test_list_is_newest_first_with_the_list_fields(api, make, owner, project, settings):
    a = make.pipeline(project)
    b = make.pipeline(project, ref="feature")
    listed = api(owner).get(url(project)).json()
    assert [p["id"] for p in listed] == [b.id, a.id]
    assert set(listed[0]) == LIST_FIELDS
    assert (
        listed[0]["web_url"] == f"{settings.external_url}/{owner.username}/{project.path}/-/pipelines/{b.id}"
    )
    assert (listed[0]["ref"], listed[0]["status"], listed[0]["source"]) == ("feature", "created", "push")


def test_another_projects_pipelines_are_not_listed(api, make, owner, project):
    make.pipeline(make.project(owner=owner))
    mine = make.pipeline(project)
    assert ids(api(owner).get(url(project))) == [mine.id]


@pytest.mark.parametrize(
    ("scope", "wanted"),
    [
        ("running", ["running"]),
        ("pending", ["pending"]),
        ("finished", ["success", "failed", "canceled", "skipped"]),
    ],
)
def test_status_scopes(api, make, owner, project, scope, wanted):
    made = {
        s: make.pipeline(project, status=s)
        for s in ("created", "pending", "running", "success", "failed", "canceled", "skipped", "manual")
    }
    listed = ids(api(owner).get(url(project), params={"scope": scope}))
    assert sorted(listed) == sorted(made[s].id for s in wanted)


def test_branches_and_tags_scopes_hold_the_newest_pipeline_of_each_existing_ref(api, make, owner):
    project = make.project_with_repository(owner=owner)
    head = make.commit(project, {"a": "a"}, branch="main")
    make.branch(project, "dev", head)
    make.tag(project, "v1", head)
    make.pipeline(project, ref="main", sha=head)
    newest_main = make.pipeline(project, ref="main", sha=head)
    dev = make.pipeline(project, ref="dev", sha=head)
    make.pipeline(project, ref="gone", sha=head)
    tag = make.pipeline(project, ref="v1", sha=head, tag=True)
    assert sorted(ids(api(owner).get(url(project), params={"scope": "branches"}))) == sorted(
        [newest_main.id, dev.id]
    )
    assert ids(api(owner).get(url(project), params={"scope": "tags"})) == [tag.id]


def test_status_filter(api, make, owner, project):
    make.pipeline(project, status="success")
    failed = make.pipeline(project, status="failed")
    assert ids(api(owner).get(url(project), params={"status": "failed"})) == [failed.id]


def test_ref_and_sha_filters(api, make, owner, project):
    a = make.pipeline(project, ref="a", sha="1" * 40)
    b = make.pipeline(project, ref="b", sha="2" * 40)
    assert ids(api(owner).get(url(project), params={"ref": "a"})) == [a.id]
    assert ids(api(owner).get(url(project), params={"sha": "2" * 40})) == [b.id]


def test_yaml_errors_filter(api, make, owner, project):
    broken = make.pipeline(
        project, status="failed", yaml_errors="jobs config should contain at least one visible job"
    )
    fine = make.pipeline(project)
    assert ids(api(owner).get(url(project), params={"yaml_errors": "true"})) == [broken.id]
    assert ids(api(owner).get(url(project), params={"yaml_errors": "false"})) == [fine.id]


def test_source_filter(api, make, owner, project):
    make.pipeline(project, source="push")
    web = make.pipeline(project, source="web")
    assert ids(api(owner).get(url(project), params={"source": "web"})) == [web.id]


def test_name_and_username_filters_name_the_user_who_ran_it(api, make, owner, project):
    ann = make.user(name="Ann Example")
    mine = make.pipeline(project, user=ann)
    make.pipeline(project, user=owner)
    make.pipeline(project)
    assert ids(api(owner).get(url(project), params={"username": ann.username})) == [mine.id]
    assert ids(api(owner).get(url(project), params={"username": ann.username.upper()})) == [mine.id]
    assert ids(api(owner).get(url(project), params={"name": "Ann Example"})) == [mine.id]


def test_created_after_and_before(api, make, owner, project, db):
    old = make.pipeline(project)
    new = make.pipeline(project)
    now = datetime.now(UTC)
    with transaction(db):
        old.created_at = now - timedelta(days=3)
    cut = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(api(owner).get(url(project), params={"created_after": cut})) == [new.id]
    assert ids(api(owner).get(url(project), params={"created_before": cut})) == [old.id]


def test_name_matches_the_pipeline_name_too(api, make, owner, project):
    named = make.pipeline(project, name="Nightly")
    make.pipeline(project)
    assert ids(api(owner).get(url(project), params={"name": "Nightly"})) == [named.id]


def test_updated_after_and_before(api, make, owner, project, db):
    old = make.pipeline(project)
    new = make.pipeline(project)
    now = datetime.now(UTC)
    with transaction(db):
        old.updated_at = now - timedelta(days=3)
        new.updated_at = now - timedelta(hours=1)
    cut = (now - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert ids(api(owner).get(url(project), params={"updated_after": cut})) == [new.id]
    assert ids(api(owner).get(url(project), params={"updated_before": cut})) == [old.id]


@pytest.mark.parametrize("order_by", ["id", "status", "ref", "updated_at", "user_id"])
def test_order_by_and_sort(api, make, owner, project, order_by, db):
    users = [make.user(), make.user()]
    made = [
        make.pipeline(project, ref="b", status="success", user=users[1]),
        make.pipeline(project, ref="a", status="failed", user=users[0]),
        make.pipeline(project, ref="c", status="canceled", user=users[0]),
    ]
    with transaction(db):
        for n, p in enumerate(made):
            p.updated_at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=(2 - n))

    def key(p: Any) -> tuple[Any, int]:
        return (getattr(p, order_by), p.id)

    asc = [p.id for p in sorted(made, key=key)]
    assert ids(api(owner).get(url(project), params={"order_by": order_by, "sort": "asc"})) == asc
    desc = [p.id for p in sorted(made, key=key, reverse=True)]
    assert ids(api(owner).get(url(project), params={"order_by": order_by})) == desc


@pytest.mark.parametrize(
    ("name", "value", "error"),
    [
        ("scope", "all", "scope does not have a valid value"),
        ("status", "great", "status does not have a valid value"),
        ("order_by", "name", "order_by does not have a valid value"),
        ("sort", "up", "sort does not have a valid value"),
        ("yaml_errors", "maybe", "yaml_errors is invalid"),
        ("updated_after", "yesterday", "updated_after is invalid"),
        ("source", "somewhere", "source does not have a valid value"),
    ],
)
def test_unknown_filter_values_are_400(api, owner, project, name, value, error):
    r = api(owner).get(url(project), params={name: value})
    assert (r.status_code, r.json()) == (400, {"error": error})


def test_list_is_paginated(api, make, owner, project):
    for _ in range(3):
        make.pipeline(project)
    r = api(owner).get(url(project), params={"per_page": 2})
    assert (len(r.json()), r.headers["X-Total"], r.headers["X-Next-Page"]) == (2, "3", "2")


def test_list_costs_the_same_statements_for_few_and_many(api, make, owner, project, runtime):
    make.pipeline(project, user=owner)
    few = count(runtime, lambda: api(owner).get(url(project)))
    for _ in range(5):
        make.pipeline(project, user=make.user())
    assert count(runtime, lambda: api(owner).get(url(project))) == few


# ----------------------------------------------------------------------------- detail


def test_detail_fields(api, make, owner, project, settings):
    p = make.pipeline(
        project, user=owner, jobs=[{"name": "a", "coverage": 50.0}, {"name": "b", "coverage": 70.0}]
    )
    r = api(owner).get(url(project, f"/{p.id}"))
    assert r.status_code == 200
    body = r.json()
    assert set(body) == DETAIL_FIELDS
    assert (body["status"], body["tag"], body["yaml_errors"], body["before_sha"]) == (
        "pending",
        False,
        None,
        "0" * 40,
    )
    assert body["user"]["username"] == owner.username
    assert body["coverage"] == "60.00"
    assert body["detailed_status"] == {
        "icon": "status_pending",
        "text": "pending",
        "label": "pending",
        "group": "pending",
        "tooltip": "pending",
        "has_details": True,
        "details_path": f"/{owner.username}/{project.path}/-/pipelines/{p.id}",
        "illustration": None,
        "favicon": "/assets/ci_favicons/favicon_status_pending.png",
    }


def test_detail_of_a_finished_pipeline(api, make, owner, project):
    p = make.pipeline(project, jobs=[{"name": "a"}])

    finish(make.db, p, "a", "running")
    finish(make.db, p, "a", "success")
    body = api(owner).get(url(project, f"/{p.id}")).json()
    assert body["status"] == "success"
    assert body["detailed_status"]["text"] == "passed"
    assert body["started_at"] is not None
    assert body["finished_at"] is not None
    assert isinstance(body["duration"], int)


def test_an_allowed_failure_is_a_success_with_warnings(api, make, owner, project):
    p = make.pipeline(project, jobs=[{"name": "a"}, {"name": "lint", "allow_failure": True}])
    for name, status in (("a", "running"), ("a", "success"), ("lint", "running"), ("lint", "failed")):
        finish(make.db, p, name, status)
    body = api(owner).get(url(project, f"/{p.id}")).json()
    assert body["status"] == "success"
    shown = body["detailed_status"]
    assert (shown["group"], shown["label"], shown["icon"]) == (
        "success-with-warnings",
        "passed with warnings",
        "status_warning",
    )


def test_a_pipeline_of_another_project_is_not_found(api, make, owner, project):
    other = make.pipeline(make.project(owner=owner))
    r = api(owner).get(url(project, f"/{other.id}"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})


def test_latest_is_the_newest_pipeline_of_the_refs_head(api, make, owner):
    project = make.project_with_repository(owner=owner)
    old_head = make.commit(project, {"a": "a"}, branch="main")
    make.pipeline(project, ref="main", sha=old_head)
    head = make.commit(project, {"a": "b"}, branch="main")
    newest = make.pipeline(project, ref="main", sha=head)
    make.pipeline(project, ref="other", sha=head)
    dev = make.commit(project, {"d": "d"}, branch="dev", start="main")
    on_dev = make.pipeline(project, ref="dev", sha=dev)
    assert api(owner).get(url(project, "/latest")).json()["id"] == newest.id
    assert api(owner).get(url(project, "/latest"), params={"ref": "dev"}).json()["id"] == on_dev.id
    # GitLab answers 403 when there is no such pipeline.
    r = api(owner).get(url(project, "/latest"), params={"ref": "none"})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_test_report_is_empty(api, make, owner, project):
    p = make.pipeline(project)
    r = api(owner).get(url(project, f"/{p.id}/test_report"))
    assert (r.status_code, r.json()["total_count"], r.json()["test_suites"]) == (200, 0, [])
    assert api(owner).get(url(project, f"/{p.id}/test_report_summary")).json()["total"]["count"] == 0


# ----------------------------------------------------------------------------- who reads


@pytest.mark.parametrize(("level", "status"), [(REPORTER, 200), (DEVELOPER, 200), (GUEST, 403)])
def test_private_pipelines_are_read_by_reporters(api, make, owner, level, status):
    project = make.project(owner=owner, public_jobs=False)
    member = make.user()
    make.member(project, member, level)
    make.pipeline(project)
    assert api(member).get(url(project)).status_code == status


def test_guests_read_them_when_pipelines_are_public(api, make, project):
    guest = make.user()
    make.member(project, guest, GUEST)
    assert project.public_jobs is True  # GitLab's default
    assert api(guest).get(url(project)).status_code == 200


def test_a_private_project_hides_its_pipelines(api, make, project):
    p = make.pipeline(project)
    for caller in (make.user(), None):
        r = api(caller).get(url(project, f"/{p.id}"))
        assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_public_pipelines_of_a_public_project_are_read_by_anyone(api, make, owner):
    project = make.project(owner=owner, visibility="public")
    p = make.pipeline(project)
    assert ids(api().get(url(project))) == [p.id]
    assert api().get(url(project, f"/{p.id}")).status_code == 200


def test_pipelines_kept_private_on_a_public_project(api, make, owner):
    project = make.project(owner=owner, visibility="public", public_jobs=False)
    make.pipeline(project)
    assert api().get(url(project)).status_code == 403
    assert api(make.user()).get(url(project)).status_code == 403
    assert api("root").get(url(project)).status_code == 200


def test_disabled_ci_closes_pipelines_to_all_but_administrators(api, make, owner):
    project = make.project(owner=owner, visibility="public", builds_access_level="disabled")
    assert api().get(url(project)).status_code == 403
    assert api(owner).get(url(project)).status_code == 403
    assert api("root").get(url(project)).status_code == 403


# ----------------------------------------------------------------------------- for other views


def test_basics_by_ids_is_one_statement_whatever_the_number(make, db, runtime, settings):
    project = make.project()
    made = [make.pipeline(project) for _ in range(3)]
    with recording(runtime.engine) as seen:
        found = finder.basics_by_ids(db, [p.id for p in made] + [999999])
    assert len(seen) == 1
    assert sorted(found) == sorted(p.id for p in made)
    view = pipeline_basic(found[made[0].id], settings.external_url)
    assert (view["id"], view["iid"], view["status"]) == (made[0].id, made[0].iid, "created")


def test_latest_for_sha_is_the_newest_of_the_commit(make, db):
    project = make.project()
    make.pipeline(project, sha="a" * 40, ref="main")
    newest = make.pipeline(project, sha="a" * 40, ref="other")
    on_main = make.pipeline(project, sha="a" * 40, ref="main")
    make.pipeline(project, sha="b" * 40, ref="main")
    assert finder.latest_for_sha(db, project.id, "a" * 40).id == on_main.id
    assert finder.latest_for_sha(db, project.id, "a" * 40, ref="other").id == newest.id
    assert finder.latest_for_sha(db, project.id, "c" * 40) is None
