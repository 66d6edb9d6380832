"""Pipeline schedules (GitLab's Pipeline schedules API): a ref, a cron line in a time zone,
variables and an owner; the job queue runs them when due and when played."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from kiln.models.ci import Pipeline, PipelineSchedule, PipelineScheduleVariable, PipelineVariable
from kiln.models.jobs import Job
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.services import pipeline_schedules
from tests.statements import count

CI = "build:\n  script: echo $GREETING\n"


def _project(make: Any) -> tuple[Any, Any]:
    """A project with a configuration on its (protected) default branch `main` and on the
    unprotected branch `feature`."""
    owner = make.user()
    project = make.project_with_repository(owner=owner, members={owner: MAINTAINER})
    head = make.commit(project, {".gitlab-ci.yml": CI}, branch="main", message="ci")
    make.branch(project, "feature", head)
    return owner, project


def _url(project: Any, *rest: Any) -> str:
    return "/".join([f"/projects/{project.id}/pipeline_schedules", *map(str, rest)])


BODY = {"description": "nightly", "ref": "feature", "cron": "0 1 * * *", "cron_timezone": "Asia/Tokyo"}


def _create(api: Any, who: Any, project: Any, **fields: Any) -> dict[str, Any]:
    r = api(who).post(_url(project), json={**BODY, **fields})
    assert r.status_code == 201, r.text
    return r.json()


def _schedules(db: Any) -> int:
    return db.scalar(select(func.count()).select_from(PipelineSchedule))


def _runs(db: Any) -> list[Job]:
    return list(db.scalars(select(Job).where(Job.kind == pipeline_schedules.RUN).order_by(Job.id)))


def _scheduled_pipelines(db: Any) -> list[Pipeline]:
    db.expire_all()
    return list(db.scalars(select(Pipeline).where(Pipeline.source == "schedule").order_by(Pipeline.id)))


# ----------------------------------------------------------------------------- creating


def test_create_answers_the_schedule_with_its_next_run_in_its_time_zone(api, make, db):
    owner, project = _project(make)
    body = _create(api, owner, project)
    assert body["description"] == "nightly"
    assert body["ref"] == "refs/heads/feature"
    assert (body["cron"], body["cron_timezone"], body["active"]) == ("0 1 * * *", "Asia/Tokyo", True)
    assert body["owner"]["username"] == owner.username
    assert body["last_pipeline"] is None
    assert body["variables"] == []
    # 01:00 in Tokyo is 16:00 UTC.
    assert body["next_run_at"].endswith("T16:00:00.000Z")
    planned = _runs(db)
    assert [j.payload["schedule_id"] for j in planned] == [body["id"]]
    assert planned[0].run_at.replace(tzinfo=UTC).strftime("%H:%M") == "16:00"


def test_a_ref_is_stored_in_full_and_tags_are_refs_too(api, make):
    owner, project = _project(make)
    head = make.commit(project, {"x": "1"}, branch="main")
    make.tag(project, "v1", head)
    assert _create(api, owner, project, ref="v1")["ref"] == "refs/tags/v1"
    assert _create(api, owner, project, ref="refs/heads/main")["ref"] == "refs/heads/main"


def test_an_inactive_schedule_has_no_next_run(api, make, db):
    owner, project = _project(make)
    body = _create(api, owner, project, active=False)
    assert (body["active"], body["next_run_at"]) == (False, None)
    assert _runs(db) == []


@pytest.mark.parametrize(
    ("fields", "answer"),
    [
        ({"cron": "61 * * * *"}, {"message": {"cron": [" is invalid syntax"]}}),
        ({"cron": "every day"}, {"message": {"cron": [" is invalid syntax"]}}),
        ({"cron_timezone": "Mars/Olympus"}, {"message": {"cron_timezone": [" is invalid syntax"]}}),
        ({"ref": "nowhere"}, {"message": {"ref": ["is invalid"]}}),
        ({"ref": ""}, {"error": "ref is empty"}),
        ({"description": None}, {"error": "description is missing"}),
        ({"cron": None}, {"error": "cron is missing"}),
        ({"active": "maybe"}, {"error": "active is invalid"}),
    ],
)
def test_bad_input_is_400_and_writes_nothing(api, make, db, fields, answer):
    owner, project = _project(make)
    body = {k: v for k, v in {**BODY, **fields}.items() if v is not None}
    r = api(owner).post(_url(project), json=body)
    assert (r.status_code, r.json()) == (400, answer)
    assert _schedules(db) == 0
    assert _runs(db) == []


def test_developers_create_reporters_cannot(api, make, db):
    _, project = _project(make)
    dev, reporter, stranger = make.user(), make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    make.member(project, reporter, REPORTER)
    assert _create(api, dev, project)["owner"]["username"] == dev.username
    assert api(reporter).post(_url(project), json=BODY).status_code == 403
    r = api(stranger).post(_url(project), json=BODY)
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api(None).post(_url(project), json=BODY).status_code == 401
    assert _schedules(db) == 1


# ----------------------------------------------------------------------------- reading


def test_list_and_scope(api, make):
    owner, project = _project(make)
    on = _create(api, owner, project)
    off = _create(api, owner, project, active=False, description="paused")
    listed = api(owner).get(_url(project)).json()
    assert [s["id"] for s in listed] == [on["id"], off["id"]]
    assert "variables" not in listed[0]
    assert "last_pipeline" not in listed[0]
    assert [s["id"] for s in api(owner).get(_url(project), params={"scope": "active"}).json()] == [on["id"]]
    assert [s["id"] for s in api(owner).get(_url(project), params={"scope": "inactive"}).json()] == [
        off["id"]
    ]
    r = api(owner).get(_url(project), params={"scope": "all"})
    assert (r.status_code, r.json()) == (400, {"error": "scope does not have a valid value"})


def test_reporters_read_guests_do_not_while_pipelines_are_not_public(api, make):
    owner, project = _project(make)
    s = _create(api, owner, project)
    project.public_jobs = False
    make.db.commit()
    reporter, guest, stranger = make.user(), make.user(), make.user()
    make.member(project, reporter, REPORTER)
    make.member(project, guest, GUEST)
    got = api(reporter).get(_url(project, s["id"])).json()
    assert got["id"] == s["id"]
    assert "variables" not in got  # a Reporter may not read them
    assert api(guest).get(_url(project)).status_code == 403
    assert api(stranger).get(_url(project)).status_code == 404
    assert api(None).get(_url(project)).status_code == 401


def test_a_schedule_of_another_project_is_not_found(api, make):
    owner, project = _project(make)
    _, other = _project(make)
    s = _create(api, owner, project)
    make.member(other, owner, MAINTAINER)
    r = api(owner).get(_url(other, s["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 Pipeline Schedule Not Found"})


def test_the_list_costs_the_same_for_few_and_many_schedules(api, make, runtime):
    owner, project = _project(make)
    _create(api, owner, project)
    few = count(runtime, lambda: api(owner).get(_url(project)))
    for _ in range(4):
        who = make.user()
        make.member(project, who, DEVELOPER)
        _create(api, who, project)
    assert count(runtime, lambda: api(owner).get(_url(project))) == few


# ----------------------------------------------------------------------------- changing


def test_the_owner_changes_it_and_its_next_run_is_planned_again(api, make, db):
    owner, project = _project(make)
    s = _create(api, owner, project)
    r = api(owner).put(
        _url(project, s["id"]), json={"cron": "30 2 * * *", "cron_timezone": "UTC", "description": "later"}
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["cron"], body["cron_timezone"], body["description"]) == ("30 2 * * *", "UTC", "later")
    assert body["next_run_at"].endswith("T02:30:00.000Z")
    assert len(_runs(db)) == 2


def test_bad_changes_are_400_and_change_nothing(api, make, db):
    owner, project = _project(make)
    s = _create(api, owner, project)
    r = api(owner).put(_url(project, s["id"]), json={"cron": "nope", "description": "x"})
    assert (r.status_code, r.json()) == (400, {"message": {"cron": [" is invalid syntax"]}})
    assert api(owner).get(_url(project, s["id"])).json()["description"] == "nightly"
    assert len(_runs(db)) == 1


def test_only_the_owner_changes_it_a_maintainer_takes_it_over_first(api, make, db):
    owner, project = _project(make)
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    s = _create(api, dev, project)
    url = _url(project, s["id"])
    assert api(owner).put(url, json={"description": "mine"}).status_code == 403
    other_dev = make.user()
    make.member(project, other_dev, DEVELOPER)
    assert api(other_dev).post(url + "/take_ownership").status_code == 403
    taken = api(owner).post(url + "/take_ownership")
    assert (taken.status_code, taken.json()["owner"]["username"]) == (201, owner.username)
    assert api(owner).post(url + "/take_ownership").status_code == 200
    assert api(owner).put(url, json={"description": "mine"}).json()["description"] == "mine"
    assert api(dev).put(url, json={"description": "back"}).status_code == 403


def test_delete_by_its_owner_or_a_maintainer(api, make, db):
    owner, project = _project(make)
    dev, other_dev = make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    make.member(project, other_dev, DEVELOPER)
    first = _create(api, dev, project)
    second = _create(api, dev, project)
    assert api(other_dev).delete(_url(project, first["id"])).status_code == 403
    assert api(dev).delete(_url(project, first["id"])).status_code == 204
    assert api(owner).delete(_url(project, second["id"])).status_code == 204
    assert _schedules(db) == 0
    assert api(owner).get(_url(project, first["id"])).status_code == 404


# ----------------------------------------------------------------------------- variables


def test_variables_are_kept_sealed_and_shown_to_those_who_may(api, make, db):
    owner, project = _project(make)
    s = _create(api, owner, project)
    url = _url(project, s["id"], "variables")
    r = api(owner).post(url, json={"key": "GREETING", "value": "hello", "variable_type": "env_var"})
    assert (r.status_code, r.json()) == (
        201,
        {"variable_type": "env_var", "key": "GREETING", "value": "hello", "raw": False},
    )
    stored = db.scalar(select(PipelineScheduleVariable.value))
    assert "hello" not in stored
    assert api(owner).get(f"{url}/GREETING").json()["value"] == "hello"
    assert api(owner).get(_url(project, s["id"])).json()["variables"] == [r.json()]
    changed = api(owner).put(f"{url}/GREETING", json={"value": "hi", "variable_type": "file"}).json()
    assert (changed["value"], changed["variable_type"]) == ("hi", "file")
    gone = api(owner).delete(f"{url}/GREETING")
    assert (gone.status_code, gone.json()["value"]) == (202, "hi")
    r = api(owner).get(f"{url}/GREETING")
    assert (r.status_code, r.json()) == (404, {"message": "404 Pipeline Schedule Variable Not Found"})


def test_bad_variables_are_400_and_write_nothing(api, make, db):
    owner, project = _project(make)
    s = _create(api, owner, project)
    url = _url(project, s["id"], "variables")
    api(owner).post(url, json={"key": "A", "value": "1"})
    for body, answer in (
        ({"key": "A", "value": "2"}, {"message": {"key": ["(A) has already been taken"]}}),
        (
            {"key": "bad key", "value": "2"},
            {"message": {"key": ["can contain only letters, digits and '_'."]}},
        ),
        ({"key": "B"}, {"error": "value is missing"}),
        (
            {"key": "B", "value": "2", "variable_type": "secret"},
            {"error": "variable_type does not have a valid value"},
        ),
    ):
        r = api(owner).post(url, json=body)
        assert (r.status_code, r.json()) == (400, answer)
    assert db.scalar(select(func.count()).select_from(PipelineScheduleVariable)) == 1


def test_variables_are_the_owners_to_change(api, make):
    owner, project = _project(make)
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    s = _create(api, dev, project)
    url = _url(project, s["id"], "variables")
    assert api(dev).post(url, json={"key": "A", "value": "1"}).status_code == 201
    # A Maintainer reads them but changes them only once the schedule is theirs.
    assert api(owner).get(f"{url}/A").json()["value"] == "1"
    assert api(owner).post(url, json={"key": "B", "value": "2"}).status_code == 403
    assert api(owner).put(f"{url}/A", json={"value": "x"}).status_code == 403
    other = make.user()
    make.member(project, other, DEVELOPER)
    assert api(other).get(f"{url}/A").status_code == 403
    assert "variables" not in api(other).get(_url(project, s["id"])).json()


# ----------------------------------------------------------------------------- running


def test_play_runs_it_now_through_the_queue_as_the_player(api, make, db, drain):
    owner, project = _project(make)
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    s = _create(api, owner, project)
    api(owner).post(_url(project, s["id"], "variables"), json={"key": "GREETING", "value": "hi"})
    r = api(dev).post(_url(project, s["id"], "play"))
    assert (r.status_code, r.json()) == (201, {"message": "201 Created"})
    assert _scheduled_pipelines(db) == []
    drain()
    made = _scheduled_pipelines(db)
    assert [(p.schedule_id, p.ref, p.user_id) for p in made] == [(s["id"], "feature", dev.id)]
    values = {
        v.key: v
        for v in db.scalars(select(PipelineVariable).where(PipelineVariable.pipeline_id == made[0].id))
    }
    assert set(values) == {"GREETING"}
    got = api(owner).get(_url(project, s["id"])).json()
    assert got["last_pipeline"]["id"] == made[0].id
    assert got["next_run_at"] == s["next_run_at"]  # the plan stays
    listed = api(owner).get(_url(project, s["id"], "pipelines")).json()
    assert [(p["id"], p["source"]) for p in listed] == [(made[0].id, "schedule")]


def test_a_protected_branch_takes_one_who_may_push_or_merge_to_it(api, make, db):
    owner, project = _project(make)
    dev = make.user()
    make.member(project, dev, DEVELOPER)
    assert api(dev).post(_url(project), json={**BODY, "ref": "main"}).status_code == 403
    mine = _create(api, dev, project)
    assert api(dev).put(_url(project, mine["id"]), json={"ref": "main"}).status_code == 403
    theirs = _create(api, owner, project, ref="main")
    assert api(dev).post(_url(project, theirs["id"], "play")).status_code == 403
    assert api(owner).post(_url(project, theirs["id"], "play")).status_code == 201
    assert _schedules(db) == 2


def test_reporters_cannot_play(api, make, db):
    owner, project = _project(make)
    reporter = make.user()
    make.member(project, reporter, REPORTER)
    s = _create(api, owner, project)
    assert api(reporter).post(_url(project, s["id"], "play")).status_code == 403
    assert len(_runs(db)) == 1


def _created_in_the_past(api: Any, who: Any, project: Any, monkeypatch: Any, **fields: Any) -> dict[str, Any]:
    """A schedule created two days ago: its first run is due now."""
    past = datetime.now(UTC) - timedelta(days=2)
    with monkeypatch.context() as m:
        m.setattr(pipeline_schedules, "utcnow", lambda: past)
        return _create(api, who, project, cron="0 * * * *", cron_timezone="UTC", **fields)


def test_a_due_schedule_runs_as_its_owner_and_plans_its_next_run(api, make, db, drain, monkeypatch):
    owner, project = _project(make)
    s = _created_in_the_past(api, owner, project, monkeypatch)
    drain()
    made = _scheduled_pipelines(db)
    assert [(p.schedule_id, p.user_id, p.source) for p in made] == [(s["id"], owner.id, "schedule")]
    after = api(owner).get(_url(project, s["id"])).json()
    assert after["next_run_at"] > datetime.now(UTC).strftime("%Y-%m-%dT%H:%M")
    assert after["last_pipeline"]["id"] == made[0].id
    pending = [j for j in _runs(db) if j.state == "queued"]
    assert [j.payload["next_run_at"][:16] for j in pending] == [after["next_run_at"][:16]]
    drain()
    assert len(_scheduled_pipelines(db)) == 1  # the next run is not due yet


def test_a_changed_schedule_leaves_its_earlier_run_stale(api, make, db, drain, monkeypatch):
    owner, project = _project(make)
    s = _created_in_the_past(api, owner, project, monkeypatch)
    api(owner).put(_url(project, s["id"]), json={"description": "changed"})
    drain()
    assert _scheduled_pipelines(db) == []


def test_an_inactive_schedule_does_not_run(api, make, db, drain, monkeypatch):
    owner, project = _project(make)
    s = _created_in_the_past(api, owner, project, monkeypatch)
    with transaction_of(db):
        db.get(PipelineSchedule, s["id"]).active = False
    drain()
    assert _scheduled_pipelines(db) == []


def test_an_owner_who_may_no_longer_run_pipelines_has_the_schedule_turned_off(
    api, make, db, drain, monkeypatch
):
    _, project = _project(make)
    dev = make.user()
    member = make.member(project, dev, DEVELOPER)
    s = _created_in_the_past(api, dev, project, monkeypatch)
    with transaction_of(db):
        db.get(type(member), member.id).access_level = REPORTER
    drain()
    assert _scheduled_pipelines(db) == []
    db.expire_all()
    schedule = db.get(PipelineSchedule, s["id"])
    assert (schedule.active, schedule.next_run_at) == (False, None)


def transaction_of(db: Any) -> Any:
    from kiln.db import transaction

    return transaction(db)


def test_the_schedules_pipelines_cost_the_same_for_few_and_many(api, make, runtime):
    owner, project = _project(make)
    s = _create(api, owner, project)
    url = _url(project, s["id"], "pipelines")
    make.pipeline(project, ref="feature", source="schedule", schedule_id=s["id"])
    few = count(runtime, lambda: api(owner).get(url))
    others = [make.pipeline(project, ref="feature", source="schedule", schedule_id=s["id"]) for _ in range(4)]
    make.pipeline(project, ref="feature", source="push")
    listed = api(owner).get(url, params={"sort": "desc"}).json()
    assert [p["id"] for p in listed][:4] == [p.id for p in reversed(others)]
    assert len(listed) == 5
    assert count(runtime, lambda: api(owner).get(url)) == few
