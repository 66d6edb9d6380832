"""Runner credentials (spec part 1 "Runners" and "Authentication" 9; the runner protocol's
registration calls): a registration token (the instance's, a project's or a group's) gives a
runner its authentication token, which the runner then sends to verify itself, reset it or
remove itself. A wrong token is a 403 that writes nothing. GitLab's newer flow makes a runner
for a signed-in user (`POST /user/runners`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from kiln.auth.tokens import CREATE_RUNNER, READ_API, digest
from kiln.db import transaction
from kiln.models import Namespace, Runner, RunnerNamespace, RunnerProject, RunnerTag
from kiln.models.namespaces import DEVELOPER, MAINTAINER
from kiln.services import instance_settings
from kiln.services import runners as service

FORBIDDEN = {"message": "403 Forbidden"}
INVALID_TOKEN = {"message": "403 Forbidden - invalid token supplied"}


def instance_token(api: Any) -> str:
    r = api("root").post("/runners/reset_registration_token")
    assert r.status_code == 201, r.text
    return r.json()["token"]  # type: ignore[no-any-return]


def project_token(api: Any, owner: Any, project: Any) -> str:
    r = api(owner).get(f"/projects/{project.id}")
    assert r.status_code == 200, r.text
    return r.json()["runners_token"]  # type: ignore[no-any-return]


def group_token(api: Any, owner: Any, group: Any) -> str:
    r = api(owner).post(f"/groups/{group.id}/runners/reset_registration_token")
    assert r.status_code == 201, r.text
    return r.json()["token"]  # type: ignore[no-any-return]


def register(api: Any, token: str, **body: Any) -> dict[str, Any]:
    r = api().post("/runners", json={"token": token, **body})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def runner_count(db: Any) -> int:
    return db.scalar(select(func.count()).select_from(Runner))  # type: ignore[no-any-return]


def detail(api: Any, runner_id: int) -> dict[str, Any]:
    r = api("root").get(f"/runners/{runner_id}")
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- registration


def test_registration_with_the_instance_token_makes_a_shared_runner(api, db):
    body = register(
        api,
        instance_token(api),
        description="builder",
        tag_list=["docker", "linux"],
        run_untagged=False,
        locked=True,
        access_level="ref_protected",
        maximum_timeout=3600,
        maintenance_note="rack 4",
        info={
            "name": "gitlab-runner",
            "version": "17.0.0",
            "revision": "abc",
            "platform": "linux",
            "architecture": "amd64",
            "executor": "shell",
            "features": {"variables": True},
        },
    )
    assert set(body) == {"id", "token", "token_expires_at"}
    assert body["token"].startswith("glrt-")
    assert body["token_expires_at"] is None
    r = detail(api, body["id"])
    assert r["runner_type"] == "instance_type"
    assert r["is_shared"] is True
    assert r["description"] == "builder"
    assert r["tag_list"] == ["docker", "linux"]
    assert (r["run_untagged"], r["locked"], r["access_level"], r["maximum_timeout"]) == (
        False,
        True,
        "ref_protected",
        3600,
    )
    assert (r["version"], r["revision"], r["platform"], r["architecture"], r["name"]) == (
        "17.0.0",
        "abc",
        "linux",
        "amd64",
        "gitlab-runner",
    )
    assert r["maintenance_note"] == "rack 4"
    assert (r["status"], r["online"], r["contacted_at"], r["active"], r["paused"]) == (
        "not_connected",
        None,
        None,
        True,
        False,
    )
    assert r["token"] is None
    row = db.get(Runner, body["id"])
    assert row.token_digest == digest(body["token"])
    assert body["token"] not in (
        row.token_prefix,
        row.token_digest,
    )
    assert row.executor_type == "shell"
    assert row.registration_type == "registration_token"


def test_registration_as_a_form_with_comma_separated_tags_and_capitalised_false(api):
    token = instance_token(api)
    r = api().post(
        "/runners",
        data={
            "token": token,
            "description": "old runner",
            "tag_list": "a, b,c",
            "run_untagged": "False",
            "locked": "False",
            "info[name]": "py-runner",
            "info[version]": "1.2",
        },
    )
    assert r.status_code == 201, r.text
    d = detail(api, r.json()["id"])
    assert (d["tag_list"], d["run_untagged"], d["locked"]) == (["a", "b", "c"], False, False)
    assert (d["name"], d["version"]) == ("py-runner", "1.2")


def test_registration_with_a_projects_token_attaches_a_project_runner(api, make):
    owner = make.user()
    p = make.project(owner=owner)
    body = register(api, project_token(api, owner, p))
    d = detail(api, body["id"])
    assert d["runner_type"] == "project_type"
    assert d["is_shared"] is False
    assert [x["id"] for x in d["projects"]] == [p.id]
    assert d["projects"][0]["path_with_namespace"] == f"{owner.username}/{p.path}"


def test_registration_with_a_groups_token_makes_a_group_runner(api, make, db):
    owner = make.user()
    g = make.group(owners=[owner])
    token = group_token(api, owner, g)
    db.expire_all()
    assert db.get(Namespace, g.id).runners_token_digest == digest(token)
    body = register(api, token)
    d = detail(api, body["id"])
    assert d["runner_type"] == "group_type"
    assert [x["id"] for x in d["groups"]] == [g.id]


def test_a_groups_token_is_made_when_first_asked_for_and_kept(db, make, settings):
    g = make.group()
    assert g.runners_token_nonce is None
    first = service.group_registration_token(db, settings, g.id)
    assert service.group_registration_token(db, settings, g.id) == first


def test_the_instance_token_is_made_when_first_asked_for_and_kept(api, db, settings):
    first = service.instance_registration_token(db, settings)
    assert service.instance_registration_token(db, settings) == first
    assert detail(api, register(api, first)["id"])["runner_type"] == "instance_type"


def test_the_deprecated_maintainer_note_is_the_maintenance_note(api):
    body = register(api, instance_token(api), maintainer_note="old name")
    assert detail(api, body["id"])["maintenance_note"] == "old name"


def test_paused_is_the_inverse_of_active(api):
    token = instance_token(api)
    assert detail(api, register(api, token, paused=True)["id"])["active"] is False
    assert detail(api, register(api, token, active=False)["id"])["status"] == "paused"
    r = api().post("/runners", json={"token": token, "active": True, "paused": False})
    assert (r.status_code, r.json()) == (400, {"error": "active, paused are mutually exclusive"})


def test_a_wrong_registration_token_is_refused_and_nothing_is_written(api, db):
    before = runner_count(db)
    for token in ("nope", "glrt-whatever", ""):
        r = api().post("/runners", json={"token": token, "tag_list": ["a"]})
        assert (r.status_code, r.json()) == (403, INVALID_TOKEN), token
    assert runner_count(db) == before
    assert db.scalar(select(func.count()).select_from(RunnerTag)) == 0


def test_registration_needs_a_token(api):
    r = api().post("/runners", json={"description": "x"})
    assert (r.status_code, r.json()) == (400, {"error": "token is missing"})


def test_an_old_instance_token_stops_working_after_a_reset(api, db):
    old = instance_token(api)
    new = instance_token(api)
    assert old != new
    r = api().post("/runners", json={"token": old})
    assert r.status_code == 403
    register(api, new)


def test_registration_tokens_refused_when_the_setting_is_off(api, db, make):
    token = instance_token(api)
    owner = make.user()
    p = make.project(owner=owner)
    ptoken = project_token(api, owner, p)
    instance_settings.update(db, {"allow_runner_registration_token": False})
    before = runner_count(db)
    for t in (token, ptoken, "wrong"):
        r = api().post("/runners", json={"token": t})
        assert (r.status_code, r.json()) == (410, {"message": "410 Gone - runner registration disallowed"})
    assert runner_count(db) == before


def test_project_tokens_refused_when_projects_are_no_valid_registrars(api, db, make):
    owner = make.user()
    p = make.project(owner=owner)
    instance_settings.update(db, {"valid_runner_registrars": ["group"]})
    assert api().post("/runners", json={"token": project_token(api, owner, p)}).status_code == 403


def test_a_bad_maximum_timeout_or_access_level_is_refused(api, db):
    token = instance_token(api)
    before = runner_count(db)
    r = api().post("/runners", json={"token": token, "maximum_timeout": 599})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"maximum_timeout": ["should be greater than or equal to 10 minutes"]}},
    )
    r = api().post("/runners", json={"token": token, "access_level": "everyone"})
    assert (r.status_code, r.json()) == (400, {"error": "access_level does not have a valid value"})
    r = api().post("/runners", json={"token": token, "run_untagged": False})
    assert r.status_code == 400
    assert r.json()["message"] == {
        "tags_list": ["can not be empty when runner is not allowed to pick untagged jobs"]
    }
    assert runner_count(db) == before
    assert register(api, token, maximum_timeout=600)["id"]


def test_registration_keeps_gitlabs_limits_on_tags_and_description(api, db):
    token = instance_token(api)
    before = runner_count(db)
    r = api().post("/runners", data={"token": token, "tag_list": ",".join(f"t{i}" for i in range(51))})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"tags_list": ["Too many tags specified. Please limit the number of tags to 50"]}},
    )
    r = api().post("/runners", json={"token": token, "description": "x" * 1025})
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"description": ["is too long (maximum is 1024 characters)"]}},
    )
    r = api().post("/runners", json={"token": token, "maximum_timeout": 2**31})
    assert r.status_code == 400
    assert runner_count(db) == before


def test_a_wrong_token_is_checked_before_the_runners_fields(api, db):
    r = api().post("/runners", json={"token": "wrong", "maximum_timeout": 1})
    assert r.status_code == 403


def test_token_expiry_follows_the_instances_interval(api, db, make):
    instance_settings.update(db, {"runner_token_expiration_interval": 7200})
    body = register(api, instance_token(api))
    expires = datetime.fromisoformat(body["token_expires_at"].replace("Z", "+00:00"))
    assert timedelta(minutes=119) < expires - datetime.now(UTC) <= timedelta(hours=2)
    owner = make.user()
    p = make.project(owner=owner)
    assert register(api, project_token(api, owner, p))["token_expires_at"] is None


def test_an_expired_token_is_no_token(api, db):
    body = register(api, instance_token(api))
    with transaction(db):
        db.get(Runner, body["id"]).token_expires_at = datetime.now(UTC) - timedelta(seconds=1)
    r = api().post("/runners/verify", json={"token": body["token"]})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert service.by_token(db, body["token"]) is None


# ----------------------------------------------------------------------------- the runner's own calls


def test_verify_answers_200_with_the_token_or_403(api):
    body = register(api, instance_token(api))
    r = api().post("/runners/verify", json={"token": body["token"], "system_id": "s_0123456789ab"})
    assert r.status_code == 200
    assert r.json() == {"id": body["id"], "token": body["token"], "token_expires_at": None}
    r = api().post("/runners/verify", json={"token": "glrt-nope"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)


def test_verify_takes_the_runner_token_header(api):
    body = register(api, instance_token(api))
    r = api().post("/runners/verify", headers={"RUNNER-TOKEN": body["token"]})
    assert r.status_code == 200
    r = api().post("/runners/verify", json={})
    assert (r.status_code, r.json()) == (400, {"error": "token is missing"})


def test_verify_of_a_paused_runner_still_answers_200(api):
    body = register(api, instance_token(api), paused=True)
    assert api().post("/runners/verify", json={"token": body["token"]}).status_code == 200


def test_a_runner_removes_itself_with_its_token(api, db):
    body = register(api, instance_token(api), tag_list=["x"])
    r = api().delete("/runners", params={"token": "glrt-wrong"})
    assert (r.status_code, r.json()) == (403, FORBIDDEN)
    assert db.get(Runner, body["id"]) is not None
    r = api().request("DELETE", "/runners", json={"token": body["token"]})
    assert r.status_code == 204
    db.expire_all()
    assert db.get(Runner, body["id"]) is None
    assert (
        db.scalar(select(func.count()).select_from(RunnerTag).where(RunnerTag.runner_id == body["id"])) == 0
    )
    assert api().post("/runners/verify", json={"token": body["token"]}).status_code == 403


def test_deleting_a_runner_manager_checks_the_token(api, db):
    body = register(api, instance_token(api))
    r = api().request("DELETE", "/runners/managers", json={"token": body["token"], "system_id": "s_1"})
    assert r.status_code == 204
    assert db.get(Runner, body["id"]) is not None
    r = api().request("DELETE", "/runners/managers", json={"token": "bad", "system_id": "s_1"})
    assert r.status_code == 403
    r = api().request("DELETE", "/runners/managers", json={"token": body["token"]})
    assert (r.status_code, r.json()) == (400, {"error": "system_id is missing"})


def test_a_runner_resets_its_own_token(api, db):
    body = register(api, instance_token(api))
    r = api().post("/runners/reset_authentication_token", json={"token": body["token"]})
    assert r.status_code == 201
    new = r.json()
    assert set(new) == {"token", "token_expires_at"}
    assert new["token"].startswith("glrt-")
    assert api().post("/runners/verify", json={"token": body["token"]}).status_code == 403
    assert api().post("/runners/verify", json={"token": new["token"]}).status_code == 200
    assert api().post("/runners/reset_authentication_token", json={"token": "bad"}).status_code == 403


# ----------------------------------------------------------------------------- the interface for other modules


def test_by_token_finds_paused_runners_and_nothing_else(db, make):
    made = make.runner(active=False)
    assert service.by_token(db, made.token).id == made.id
    assert service.by_token(db, "glrt-unknown") is None
    assert service.by_token(db, "") is None


def test_record_contact_writes_at_most_once_a_minute_unless_info_changes(db, make):
    made = make.runner()
    with transaction(db):
        runner = db.get(Runner, made.id)
        service.record_contact(db, runner, info={"version": "1.0", "executor": "shell"}, ip="10.0.0.1")
    first = runner.contacted_at
    assert (runner.version, runner.executor_type, runner.ip_address) == ("1.0", "shell", "10.0.0.1")
    with transaction(db):
        service.record_contact(db, runner, info={"version": "1.0"}, ip="10.0.0.1")
    assert runner.contacted_at == first
    with transaction(db):
        service.record_contact(db, runner, info={"version": "1.1"}, ip=None)
    assert runner.version == "1.1"
    assert runner.contacted_at > first
    with transaction(db):
        runner.contacted_at = datetime.now(UTC) - timedelta(minutes=2)
    with transaction(db):
        service.record_contact(db, runner, info=None, ip=None)
    assert datetime.now(UTC) - runner.contacted_at.replace(tzinfo=UTC) < timedelta(seconds=5)


# ----------------------------------------------------------------------------- POST /user/runners


def test_a_maintainer_makes_a_project_runner(api, make, db):
    m = make.user()
    p = make.project(members={m: MAINTAINER})
    r = api(m).post(
        "/user/runners",
        json={
            "runner_type": "project_type",
            "project_id": p.id,
            "description": "mine",
            "tag_list": "a,b",
            "paused": True,
        },
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {"id", "token", "token_expires_at"}
    assert body["token"].startswith("glrt-")
    row = db.get(Runner, body["id"])
    assert (row.registration_type, row.creator_id, row.active) == ("authenticated_user", m.id, False)
    assert db.scalars(select(RunnerProject.project_id).where(RunnerProject.runner_id == row.id)).all() == [
        p.id
    ]
    assert api().post("/runners/verify", json={"token": body["token"]}).status_code == 200
    creator = {"id": m.id, "username": m.username}
    shown = api(m).get(f"/runners/{body['id']}").json()["created_by"]
    assert {k: shown[k] for k in creator} == creator
    listed = api(m).get("/runners").json()
    assert [(x["id"], x["created_by"]["id"]) for x in listed] == [(body["id"], m.id)]
    assert "created_by" not in detail(api, register(api, instance_token(api))["id"])


def test_user_runners_need_the_level_of_their_owner(api, make, db):
    dev, outsider, owner, group_maintainer = make.user(), make.user(), make.user(), make.user()
    p = make.project(members={dev: DEVELOPER})
    g = make.group(owners=[owner], members={group_maintainer: MAINTAINER})
    before = runner_count(db)
    assert (
        api(dev).post("/user/runners", json={"runner_type": "project_type", "project_id": p.id}).status_code
        == 403
    )
    r = api(outsider).post("/user/runners", json={"runner_type": "project_type", "project_id": p.id})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    r = api(group_maintainer).post("/user/runners", json={"runner_type": "group_type", "group_id": g.id})
    assert r.status_code == 403
    assert api(owner).post("/user/runners", json={"runner_type": "instance_type"}).status_code == 403
    assert runner_count(db) == before
    r = api(owner).post("/user/runners", json={"runner_type": "group_type", "group_id": g.id})
    assert r.status_code == 201
    assert (
        db.scalar(select(RunnerNamespace.namespace_id).where(RunnerNamespace.runner_id == r.json()["id"]))
        == g.id
    )
    r = api("root").post("/user/runners", json={"runner_type": "instance_type"})
    assert r.status_code == 201
    assert db.get(Runner, r.json()["id"]).runner_type == "instance_type"


def test_user_runners_check_their_parameters(api, make):
    u = make.user()
    for body, error in (
        ({}, "runner_type is missing"),
        ({"runner_type": "other"}, "runner_type does not have a valid value"),
        ({"runner_type": "group_type"}, "group_id is missing"),
        ({"runner_type": "project_type"}, "project_id is missing"),
    ):
        r = api(u).post("/user/runners", json=body)
        assert (r.status_code, r.json()) == (400, {"error": error}), body


def test_user_runners_take_the_create_runner_scope(api, make):
    admin = make.admin()
    scoped = make.token(admin, scopes=[CREATE_RUNNER])
    assert api(scoped).post("/user/runners", json={"runner_type": "instance_type"}).status_code == 201
    reader = make.token(admin, scopes=[READ_API])
    assert api(reader).post("/user/runners", json={"runner_type": "instance_type"}).status_code == 403


# ----------------------------------------------------------------------------- registration token resets


def test_registration_token_resets_need_their_owners(api, make, db):
    owner, maintainer, dev = make.user(), make.user(), make.user()
    g = make.group(owners=[owner], members={maintainer: MAINTAINER})
    p = make.project(namespace=g, members={dev: DEVELOPER})
    assert api(owner).post("/runners/reset_registration_token").status_code == 403
    assert api(maintainer).post(f"/groups/{g.id}/runners/reset_registration_token").status_code == 403
    assert api(dev).post(f"/projects/{p.id}/runners/reset_registration_token").status_code == 403
    outsider = make.user()
    r = api(outsider).post(f"/projects/{p.id}/runners/reset_registration_token")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    old = project_token(api, owner, p)
    r = api(maintainer).post(f"/projects/{p.id}/runners/reset_registration_token")
    assert r.status_code == 201
    new = r.json()["token"]
    assert new != old
    assert project_token(api, owner, p) == new
    assert api().post("/runners", json={"token": old}).status_code == 403
    register(api, new)
    r = api(owner).post(f"/groups/{g.id}/runners/reset_registration_token")
    assert r.status_code == 201
    assert r.json()["token"] != new
