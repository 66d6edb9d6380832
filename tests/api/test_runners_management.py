"""Managing runners (spec part 1 "Runner", "Runner job", "Runners"): the lists with their
filters, a runner's detail, update, removal and jobs, a project's and a group's runners,
enabling and disabling project runners, and who may do which (a hidden runner is a 404)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from kiln.db import transaction
from kiln.models import Runner, RunnerProject, RunnerTag
from kiln.models.namespaces import DEVELOPER, MAINTAINER
from tests.statements import count

NOW = datetime.now(UTC)


def ids(r: Any) -> list[int]:
    assert r.status_code == 200, r.text
    return [x["id"] for x in r.json()]


def contacted(db: Any, runner: Any, when: datetime | None) -> None:
    with transaction(db):
        db.get(Runner, runner.id).contacted_at = when


# ----------------------------------------------------------------------------- status


def test_status_comes_from_active_and_the_last_contact(api, make, db):
    never = make.runner()
    online = make.runner(contacted_at=datetime.now(UTC) - timedelta(minutes=5))
    offline = make.runner(contacted_at=datetime.now(UTC) - timedelta(hours=3))
    paused = make.runner(active=False, contacted_at=datetime.now(UTC))
    seen = {r["id"]: (r["status"], r["online"]) for r in api("root").get("/runners/all").json()}
    assert seen[never.id] == ("not_connected", None)
    assert seen[online.id] == ("online", True)
    assert seen[offline.id] == ("offline", False)
    assert seen[paused.id] == ("paused", True)


def test_list_items_carry_the_runner_fields(api, make):
    made = make.runner(description="one", ip_address="10.1.1.1", name="r1")
    item = next(r for r in api("root").get("/runners/all").json() if r["id"] == made.id)
    assert item == {
        "id": made.id,
        "description": "one",
        "ip_address": "10.1.1.1",
        "active": True,
        "paused": False,
        "is_shared": True,
        "runner_type": "instance_type",
        "name": "r1",
        "online": None,
        "status": "not_connected",
        "created_at": item["created_at"],
    }
    assert item["created_at"].endswith("Z")


# ----------------------------------------------------------------------------- GET /runners and /runners/all


def test_runners_lists_those_the_caller_manages(api, make):
    u = make.user()
    mine = make.project(members={u: MAINTAINER})
    devs = make.project(members={u: DEVELOPER})
    owned = make.group(owners=[u])
    sub = make.group(parent=owned)
    maintained = make.group(members={u: MAINTAINER})
    in_owned = make.project(namespace=owned)
    a = make.runner(project=mine)
    make.runner(project=devs)
    b = make.runner(group=owned)
    c = make.runner(group=sub)
    make.runner(group=maintained)
    d = make.runner(project=in_owned)
    make.runner()  # an instance runner is no one's but the administrators'
    assert ids(api(u).get("/runners")) == [a.id, b.id, c.id, d.id]
    assert ids(api(make.user()).get("/runners")) == []


def test_runners_lists_an_administrators_own_runners_only(api, make):
    admin = make.admin()
    own = make.runner(project=make.project(owner=admin))
    make.runner()
    make.runner(project=make.project(owner=make.user()))
    assert ids(api(admin).get("/runners")) == [own.id]


def test_runners_all_is_for_administrators(api, make):
    u = make.user()
    r = api(u).get("/runners/all")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api().get("/runners/all").status_code == 401
    assert api().get("/runners").status_code == 401


def test_scope_filters_and_what_each_list_takes(api, make, db):
    p = make.project()
    shared = make.runner()
    specific = make.runner(project=p, contacted_at=datetime.now(UTC))
    of_group = make.runner(group=make.group())
    root = api("root")
    assert ids(root.get("/runners/all", params={"scope": "shared"})) == [shared.id]
    # GitLab's deprecated `specific`: every runner but the instance's.
    assert ids(root.get("/runners/all", params={"scope": "specific"})) == [specific.id, of_group.id]
    assert ids(root.get("/runners/all", params={"scope": "project_type"})) == [specific.id]
    assert ids(root.get("/runners/all", params={"scope": "online"})) == [specific.id]
    # GET /runners takes statuses only.
    r = root.get("/runners", params={"scope": "shared"})
    assert (r.status_code, r.json()) == (400, {"error": "scope does not have a valid value"})
    r = root.get("/runners/all", params={"scope": "everything"})
    assert (r.status_code, r.json()) == (400, {"error": "scope does not have a valid value"})


def test_type_status_and_paused_filters(api, make, db):
    p = make.project()
    g = make.group()
    inst = make.runner(contacted_at=datetime.now(UTC))
    grp = make.runner(group=g, contacted_at=datetime.now(UTC) - timedelta(hours=3))
    proj = make.runner(project=p, active=False)
    stale = make.runner(contacted_at=datetime.now(UTC) - timedelta(days=8))
    root = api("root")

    def listed(**params: Any) -> list[int]:
        return ids(root.get("/runners/all", params=params))

    assert listed(type="group_type") == [grp.id]
    assert listed(type="project_type") == [proj.id]
    assert listed(status="online") == [inst.id]
    assert listed(status="offline") == [grp.id, stale.id]
    assert listed(status="paused") == [proj.id]
    assert listed(status="active") == [inst.id, grp.id, stale.id]
    assert listed(status="never_contacted") == [proj.id]
    assert listed(status="stale") == [stale.id]
    assert listed(paused="true") == [proj.id]
    assert listed(paused="false", type="instance_type") == [inst.id, stale.id]
    r = root.get("/runners/all", params={"status": "sleepy"})
    assert (r.status_code, r.json()) == (400, {"error": "status does not have a valid value"})
    r = root.get("/runners/all", params={"type": "mine"})
    assert (r.status_code, r.json()) == (400, {"error": "type does not have a valid value"})


def test_tag_list_keeps_runners_with_every_tag(api, make):
    both = make.runner(tags=["docker", "linux"])
    make.runner(tags=["docker"])
    more = make.runner(tags=["docker", "linux", "gpu"])
    root = api("root")
    assert ids(root.get("/runners/all", params={"tag_list": "docker,linux"})) == [both.id, more.id]
    assert ids(root.get("/runners/all", params=[("tag_list[]", "linux"), ("tag_list[]", "gpu")])) == [more.id]
    assert ids(root.get("/runners/all", params={"tag_list": "nothing"})) == []


def test_version_prefix_filter(api, make):
    a = make.runner(version="16.1.0")
    make.runner(version="15.11.2")
    root = api("root")
    assert ids(root.get("/runners/all", params={"version_prefix": "16."})) == [a.id]
    assert root.get("/runners/all", params={"version_prefix": "x"}).status_code == 400


def test_lists_are_paginated(api, make):
    made = [make.runner() for _ in range(3)]
    r = api("root").get("/runners/all", params={"per_page": 2, "page": 2})
    assert ids(r) == [made[2].id]
    assert r.headers["X-Total"] == "3"
    assert r.headers["X-Page"] == "2"


# ----------------------------------------------------------------------------- detail


def test_detail_fields(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner], path="grp")
    p = make.project(namespace=g, path="app", description="the app")
    made = make.runner(
        project=p,
        tags=["b", "a"],
        version="17.1",
        revision="deadbeef",
        platform="linux",
        architecture="arm64",
        maximum_timeout=900,
        maintenance_note="note",
        contacted_at=datetime.now(UTC),
    )
    d = api(owner).get(f"/runners/{made.id}").json()
    assert d["tag_list"] == ["a", "b"]
    assert (d["version"], d["revision"], d["platform"], d["architecture"]) == (
        "17.1",
        "deadbeef",
        "linux",
        "arm64",
    )
    assert (d["maximum_timeout"], d["access_level"], d["run_untagged"], d["locked"]) == (
        900,
        "not_protected",
        True,
        False,
    )
    assert d["contacted_at"].endswith("Z")
    assert d["status"] == "online"
    assert d["maintenance_note"] == "note"
    assert d["token"] is None
    assert d["groups"] == []
    assert d["projects"] == [
        {
            "id": p.id,
            "description": "the app",
            "name": "app",
            "name_with_namespace": "grp / app",
            "path": "app",
            "path_with_namespace": "grp/app",
            "created_at": d["projects"][0]["created_at"],
        }
    ]


def test_who_sees_a_runner(api, make):
    maintainer, developer, outsider, g_owner, g_maintainer = (make.user() for _ in range(5))
    p = make.project(members={maintainer: MAINTAINER, developer: DEVELOPER})
    g = make.group(owners=[g_owner], members={g_maintainer: MAINTAINER})
    project_runner = make.runner(project=p, maintenance_note="secret")
    group_runner = make.runner(group=g, maintenance_note="secret")
    shared = make.runner(maintenance_note="secret")
    url = "/runners/{}".format
    assert api(maintainer).get(url(project_runner.id)).status_code == 200
    for who in (developer, outsider, g_owner):
        r = api(who).get(url(project_runner.id))
        assert (r.status_code, r.json()) == (404, {"message": "404 Runner Not Found"})
    assert api(g_owner).get(url(group_runner.id)).json()["maintenance_note"] == "secret"
    # Group Maintainers see their group's runners, without what only its Owners change.
    assert api(g_maintainer).get(url(group_runner.id)).json()["maintenance_note"] is None
    assert api(outsider).get(url(group_runner.id)).status_code == 404
    assert api(outsider).get(url(shared.id)).json()["maintenance_note"] is None
    assert api("root").get(url(shared.id)).json()["maintenance_note"] == "secret"
    assert api().get(url(shared.id)).status_code == 401
    assert api("root").get(url(10**9)).status_code == 404


def test_a_runners_projects_are_those_the_caller_belongs_to(api, make):
    u = make.user()
    mine = make.project(members={u: MAINTAINER})
    other = make.project()
    made = make.runner(projects=[mine, other])
    assert [p["id"] for p in api(u).get(f"/runners/{made.id}").json()["projects"]] == [mine.id]
    assert [p["id"] for p in api("root").get(f"/runners/{made.id}").json()["projects"]] == [mine.id, other.id]


# ----------------------------------------------------------------------------- update


def test_update_sets_every_field_and_tag_list_is_the_whole_set(api, make, db):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    made = make.runner(project=p, tags=["a", "b"])
    r = api(u).put(
        f"/runners/{made.id}",
        json={
            "description": "renamed",
            "paused": True,
            "tag_list": ["c", "a"],
            "run_untagged": False,
            "locked": True,
            "access_level": "ref_protected",
            "maximum_timeout": 1200,
            "maintenance_note": "moved",
        },
    )
    assert r.status_code == 200, r.text
    d = r.json()
    assert (d["description"], d["active"], d["paused"], d["status"]) == ("renamed", False, True, "paused")
    assert d["tag_list"] == ["a", "c"]
    assert (d["run_untagged"], d["locked"], d["access_level"], d["maximum_timeout"]) == (
        False,
        True,
        "ref_protected",
        1200,
    )
    assert d["maintenance_note"] == "moved"
    r = api(u).put(f"/runners/{made.id}", data={"active": "true", "tag_list": "x,y"})
    assert (r.json()["active"], r.json()["tag_list"]) == (True, ["x", "y"])
    assert db.scalars(
        select(RunnerTag.name).where(RunnerTag.runner_id == made.id).order_by(RunnerTag.name)
    ).all() == [
        "x",
        "y",
    ]


def test_update_refuses_bad_input_and_writes_nothing(api, make, db):
    made = make.runner(tags=["a"], description="kept")
    root = api("root")
    url = f"/runners/{made.id}"
    r = root.put(url, json={})
    assert r.status_code == 400
    assert "at least one parameter must be provided" in r.json()["error"]
    r = root.put(url, json={"active": True, "paused": True})
    assert (r.status_code, r.json()) == (400, {"error": "active, paused are mutually exclusive"})
    r = root.put(url, json={"description": "changed", "maximum_timeout": 10})
    assert r.status_code == 400
    assert "maximum_timeout" in r.json()["message"]
    r = root.put(url, json={"description": "changed", "tag_list": [], "run_untagged": False})
    assert r.status_code == 400
    assert "tags_list" in r.json()["message"]
    r = root.put(url, json={"access_level": "all"})
    assert r.status_code == 400
    d = root.get(url).json()
    assert (d["description"], d["tag_list"]) == ("kept", ["a"])


def test_update_keeps_gitlabs_limits_on_tags_description_and_timeout(api, make, db):
    made = make.runner(tags=["a"], description="kept")
    root = api("root")
    url = f"/runners/{made.id}"
    r = root.put(url, json={"tag_list": [f"t{i}" for i in range(51)]})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"tags_list": ["Too many tags specified. Please limit the number of tags to 50"]}},
    )
    r = root.put(url, json={"description": "x" * 1025})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"description": ["is too long (maximum is 1024 characters)"]}},
    )
    r = root.put(url, json={"maximum_timeout": 2**40})
    assert r.status_code == 400
    assert r.json()["error"].startswith("maximum_timeout")
    d = root.get(url).json()
    assert (d["description"], d["tag_list"], d["maximum_timeout"]) == ("kept", ["a"], None)
    r = root.put(url, json={"tag_list": [f"t{i}" for i in range(50)], "description": "y" * 1024})
    assert r.status_code == 200, r.text
    assert len(r.json()["tag_list"]) == 50


def test_who_may_change_a_runner(api, make):
    maintainer, g_owner, g_maintainer, outsider = (make.user() for _ in range(4))
    p = make.project(members={maintainer: MAINTAINER})
    g = make.group(owners=[g_owner], members={g_maintainer: MAINTAINER})
    shared = make.runner()
    group_runner = make.runner(group=g)
    project_runner = make.runner(project=p)
    body = {"description": "x"}
    r = api(outsider).put(f"/runners/{shared.id}", json=body)
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - No access granted"})
    assert api(g_maintainer).put(f"/runners/{group_runner.id}", json=body).status_code == 403
    assert api(g_owner).put(f"/runners/{group_runner.id}", json=body).status_code == 200
    assert api(outsider).put(f"/runners/{project_runner.id}", json=body).status_code == 404
    assert api(maintainer).put(f"/runners/{project_runner.id}", json=body).status_code == 200
    assert api("root").put(f"/runners/{shared.id}", json=body).status_code == 200


# ----------------------------------------------------------------------------- delete and token reset


def test_delete_removes_the_runner(api, make, db):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    runner_id = make.runner(project=p, tags=["t"]).id
    assert api(make.user()).delete(f"/runners/{runner_id}").status_code == 404
    assert api(u).delete(f"/runners/{runner_id}").status_code == 204
    db.expire_all()
    assert db.get(Runner, runner_id) is None
    assert api(u).get(f"/runners/{runner_id}").status_code == 404


def test_a_runner_of_several_projects_is_removed_by_an_administrator_only(api, make, db):
    u = make.user()
    a, b = make.project(members={u: MAINTAINER}), make.project(members={u: MAINTAINER})
    made = make.runner(projects=[a, b])
    r = api(u).delete(f"/runners/{made.id}")
    assert (r.status_code, r.json()) == (
        403,
        {"message": "403 Forbidden - Runner associated with more than one project"},
    )
    assert db.scalar(select(func.count()).select_from(Runner).where(Runner.id == made.id)) == 1
    assert api("root").delete(f"/runners/{made.id}").status_code == 204


def test_shared_runners_are_removed_by_administrators(api, make):
    shared = make.runner()
    r = api(make.user()).delete(f"/runners/{shared.id}")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - No access granted"})
    assert api("root").delete(f"/runners/{shared.id}").status_code == 204


def test_reset_authentication_token_by_id(api, make):
    u = make.user()
    p = make.project(members={u: MAINTAINER})
    made = make.runner(project=p)
    assert api(make.user()).post(f"/runners/{made.id}/reset_authentication_token").status_code == 404
    r = api(u).post(f"/runners/{made.id}/reset_authentication_token")
    assert r.status_code == 201
    assert r.json()["token"].startswith("glrt-")
    assert api().post("/runners/verify", json={"token": made.token}).status_code == 403
    assert api().post("/runners/verify", json={"token": r.json()["token"]}).status_code == 200


# ----------------------------------------------------------------------------- a runner's jobs


def test_runner_jobs_with_their_pipeline_project_commit_and_user(api, make, settings):
    u = make.user(bio="builds things")
    p = make.project_with_repository(owner=u, path="app")
    sha = api(u).get(f"/projects/{p.id}/repository/commits/main").json()["id"]
    made = make.runner(project=p, ip_address="10.9.9.9")
    pipeline = make.pipeline(p, sha=sha, user=u)
    done = make.ci_job(
        pipeline,
        name="build",
        stage="build",
        status="success",
        runner_id=made.id,
        duration=12.7,
        started_at=NOW - timedelta(minutes=1),
        finished_at=NOW,
    )
    running = make.ci_job(pipeline, name="test", status="running", runner_id=made.id, started_at=NOW)
    make.ci_job(pipeline, name="other", status="success")  # another runner's (none)
    jobs = api(u).get(f"/runners/{made.id}/jobs").json()
    assert [j["id"] for j in jobs] == [running.id, done.id]
    j = jobs[1]
    assert (j["name"], j["stage"], j["status"], j["ref"], j["tag"], j["duration"]) == (
        "build",
        "build",
        "success",
        "main",
        False,
        12,
    )
    assert j["ip_address"] == "10.9.9.9"
    assert j["pipeline"]["id"] == pipeline.id
    assert j["pipeline"]["sha"] == sha
    assert j["pipeline"]["ref"] == "main"
    assert "status" in j["pipeline"]
    assert j["project"]["id"] == p.id
    assert j["project"]["path_with_namespace"] == f"{u.username}/app"
    assert j["commit"]["id"] == sha
    assert j["commit"]["title"] == "Initial commit"
    assert j["user"]["username"] == u.username
    assert j["user"]["bio"] == "builds things"
    assert ids(api(u).get(f"/runners/{made.id}/jobs", params={"status": "running"})) == [running.id]
    asc = api(u).get(f"/runners/{made.id}/jobs", params={"order_by": "id", "sort": "asc"})
    assert ids(asc) == [done.id, running.id]
    r = api(u).get(f"/runners/{made.id}/jobs", params={"status": "lost"})
    assert (r.status_code, r.json()) == (400, {"error": "status does not have a valid value"})
    r = api(u).get(f"/runners/{made.id}/jobs", params={"sort": "up"})
    assert r.status_code == 400


def test_runner_jobs_are_listed_where_the_caller_is_a_reporter(api, make):
    u = make.user()
    g = make.group(owners=[u])
    mine = make.project(namespace=g)
    other = make.project()
    made = make.runner(group=g)
    seen = make.ci_job(make.pipeline(mine), runner_id=made.id, status="success")
    make.ci_job(make.pipeline(other), runner_id=made.id, status="success")
    assert ids(api(u).get(f"/runners/{made.id}/jobs")) == [seen.id]
    assert len(api("root").get(f"/runners/{made.id}/jobs").json()) == 2
    shared = make.runner()
    r = api(u).get(f"/runners/{shared.id}/jobs")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - No access granted"})
    assert api(make.user()).get(f"/runners/{made.id}/jobs").status_code == 404


# ----------------------------------------------------------------------------- a project's runners


def test_project_runners_hold_its_own_its_groups_and_shared_ones(api, make, db):
    u = make.user()
    top = make.group()
    sub = make.group(parent=top)
    p = make.project(namespace=sub, members={u: MAINTAINER})
    own = make.runner(project=p)
    top_runner = make.runner(group=top)
    sub_runner = make.runner(group=sub)
    shared = make.runner()
    make.runner(group=make.group())
    make.runner(project=make.project())
    assert ids(api(u).get(f"/projects/{p.id}/runners")) == [own.id, top_runner.id, sub_runner.id, shared.id]
    assert ids(api(u).get(f"/projects/{p.id}/runners", params={"type": "project_type"})) == [own.id]
    assert ids(api(u).get(f"/projects/{p.id}/runners", params={"scope": "shared"})) == [shared.id]
    with transaction(db):
        p.shared_runners_enabled = False
        p.group_runners_enabled = False
    assert ids(api(u).get(f"/projects/{p.id}/runners")) == [own.id]


def test_project_runners_need_a_maintainer(api, make):
    dev, outsider = make.user(), make.user()
    p = make.project(members={dev: DEVELOPER})
    assert api(dev).get(f"/projects/{p.id}/runners").status_code == 403
    r = api(outsider).get(f"/projects/{p.id}/runners")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_enable_a_runner_of_another_project_one_maintains(api, make, db):
    u = make.user()
    a = make.project(members={u: MAINTAINER})
    b = make.project(members={u: MAINTAINER})
    made = make.runner(project=a)
    r = api(u).post(f"/projects/{b.id}/runners", json={"runner_id": made.id})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == made.id
    assert r.json()["runner_type"] == "project_type"
    assert ids(api(u).get(f"/projects/{b.id}/runners", params={"type": "project_type"})) == [made.id]
    r = api(u).post(f"/projects/{b.id}/runners", json={"runner_id": made.id})
    assert r.status_code == 400


def test_enabling_is_refused_for_locked_group_shared_and_hidden_runners(api, make, db):
    u = make.user()
    g = make.group(owners=[u])
    a = make.project(members={u: MAINTAINER})
    b = make.project(members={u: MAINTAINER})
    before = db.scalar(select(func.count()).select_from(RunnerProject))
    locked = make.runner(project=a, locked=True)
    group_runner = make.runner(group=g)
    shared = make.runner()
    hidden = make.runner(project=make.project())
    url = f"/projects/{b.id}/runners"
    r = api(u).post(url, json={"runner_id": locked.id})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Runner is locked"})
    r = api(u).post(url, json={"runner_id": group_runner.id})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - Runner is a group runner"})
    r = api(u).post(url, json={"runner_id": shared.id})
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden - No access granted"})
    assert api(u).post(url, json={"runner_id": hidden.id}).status_code == 404
    assert api(u).post(url, json={}).json() == {"error": "runner_id is missing"}
    assert api("root").post(url, json={"runner_id": shared.id}).status_code == 400
    assert db.scalar(select(func.count()).select_from(RunnerProject)) == before + 2
    assert api("root").post(url, json={"runner_id": locked.id}).status_code == 201


def test_enabling_needs_a_maintainer_of_the_target(api, make):
    u = make.user()
    a = make.project(members={u: MAINTAINER})
    b = make.project(members={u: DEVELOPER})
    made = make.runner(project=a)
    assert api(u).post(f"/projects/{b.id}/runners", json={"runner_id": made.id}).status_code == 403


def test_disable_a_runner_unless_it_is_the_only_project(api, make, db):
    u = make.user()
    a = make.project(members={u: MAINTAINER})
    b = make.project(members={u: MAINTAINER})
    made = make.runner(projects=[a, b])
    assert api(u).delete(f"/projects/{b.id}/runners/{made.id}").status_code == 204
    r = api(u).delete(f"/projects/{a.id}/runners/{made.id}")
    assert (r.status_code, r.json()) == (
        403,
        {
            "message": "403 Forbidden - Only one project associated with the runner. Please remove the runner instead"
        },
    )
    r = api(u).delete(f"/projects/{b.id}/runners/{made.id}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Runner Not Found"})
    assert db.scalars(select(RunnerProject.project_id).where(RunnerProject.runner_id == made.id)).all() == [
        a.id
    ]
    dev = make.user()
    make.member(a, dev, DEVELOPER)
    assert api(dev).delete(f"/projects/{a.id}/runners/{made.id}").status_code == 403


# ----------------------------------------------------------------------------- a group's runners


def test_group_runners_hold_the_groups_its_ancestors_and_shared_ones(api, make):
    u = make.user()
    top = make.group()
    g = make.group(parent=top, members={u: MAINTAINER})
    child = make.group(parent=g)
    top_runner = make.runner(group=top, tags=["x"])
    own = make.runner(group=g, contacted_at=datetime.now(UTC))
    make.runner(group=child)
    make.runner(project=make.project(namespace=g))
    shared = make.runner(tags=["x"])
    url = f"/groups/{g.id}/runners"
    assert ids(api(u).get(url)) == [top_runner.id, own.id, shared.id]
    assert ids(api(u).get(url, params={"type": "group_type"})) == [top_runner.id, own.id]
    assert ids(api(u).get(url, params={"status": "online"})) == [own.id]
    assert ids(api(u).get(url, params={"tag_list": "x"})) == [top_runner.id, shared.id]
    # No scope on this list: it is not a parameter here.
    assert ids(api(u).get(url, params={"scope": "online"})) == [top_runner.id, own.id, shared.id]


def test_group_runners_need_a_maintainer(api, make):
    dev, outsider, owner = make.user(), make.user(), make.user()
    g = make.group(owners=[owner], members={dev: DEVELOPER})
    assert api(dev).get(f"/groups/{g.id}/runners").status_code == 403
    assert api(outsider).get(f"/groups/{g.id}/runners").status_code == 404
    assert api(owner).get(f"/groups/{g.id}/runners").status_code == 200


# ----------------------------------------------------------------------------- statements


def test_lists_cost_the_same_for_few_and_many_runners(api, make, runtime):
    u = make.user()
    g = make.group(owners=[u])
    p = make.project(namespace=g)
    calls = {
        "all": lambda: api("root").get("/runners/all?tag_list=t&per_page=2"),
        "owned": lambda: api(u).get("/runners?per_page=2"),
        "project": lambda: api(u).get(f"/projects/{p.id}/runners?per_page=2"),
        "group": lambda: api(u).get(f"/groups/{g.id}/runners?per_page=2"),
    }

    def add(n: int) -> None:
        for _ in range(n):
            make.runner(project=p, tags=["t"], creator_id=make.user().id)
            make.runner(group=g, tags=["t"])
            make.runner(tags=["t"])

    add(2)
    few = {name: count(runtime, call) for name, call in calls.items()}
    add(8)
    many = {name: count(runtime, call) for name, call in calls.items()}
    assert few == many


def test_a_runners_detail_costs_the_same_for_few_and_many_projects(api, make, runtime):
    u = make.user()
    first = make.project(members={u: MAINTAINER})
    made = make.runner(project=first, tags=["a"])
    url = f"/runners/{made.id}"
    few = count(runtime, lambda: api(u).get(url))
    with transaction(make.db):
        for _ in range(5):
            make.db.add(RunnerProject(runner_id=made.id, project_id=make.project(members={u: MAINTAINER}).id))
    many = count(runtime, lambda: api(u).get(url))
    assert len(api(u).get(url).json()["projects"]) == 6
    assert few == many


def test_runner_jobs_cost_the_same_for_few_and_many_jobs(api, make, runtime):
    u = make.user()
    made_projects = [make.project_with_repository(owner=u) for _ in range(2)]
    made = make.runner(projects=made_projects)
    url = f"/runners/{made.id}/jobs?per_page=50"

    def add(n: int) -> None:
        for project in made_projects:
            pipeline = make.pipeline(project, user=make.user())
            for _ in range(n):
                make.ci_job(pipeline, runner_id=made.id, status="success")

    add(1)
    few = count(runtime, lambda: api(u).get(url))
    add(6)
    many = count(runtime, lambda: api(u).get(url))
    assert few == many
