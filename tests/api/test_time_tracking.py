"""Time tracking of issues: an estimate and the time spent, in GitLab's human durations (a
month of 4 weeks, a week of 5 days, a day of 8 hours), changed by Reporters and up, each
change noted in the issue's thread and spent time logged."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.models import Issue, Note, Timelog
from kiln.models.namespaces import GUEST, REPORTER
from kiln.services.time_tracking import human, parse_duration


def url(project, issue, what: str) -> str:
    return f"/projects/{project.id}/issues/{issue.iid}/{what}"


@pytest.fixture
def setup(make):
    reporter = make.user()
    project = make.project(members={reporter: REPORTER})
    issue = make.issue(project, reporter)
    return reporter, project, issue


def system_notes(db, issue) -> list[str]:
    return list(
        db.scalars(
            select(Note.body).where(Note.noteable_id == issue.id, Note.noteable_type == "Issue", Note.system)
        )
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("3h30m", 3 * 3600 + 1800),
        ("1mo 2w 3d 4h 30m", 160 * 3600 + 80 * 3600 + 24 * 3600 + 4 * 3600 + 1800),
        ("1w 2d 3h", 40 * 3600 + 16 * 3600 + 3 * 3600),
        ("2", 7200),
        ("1.5h", 5400),
        ("-1h", -3600),
        ("3 hours, 20 minutes", 3 * 3600 + 1200),
        ("45s", 45),
    ],
)
def test_durations_read_as_gitlab_counts_them(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "3x", "h", "1h 2q", "1:30", "-", "9" * 300])
def test_what_is_no_duration_reads_as_none(text):
    assert parse_duration(text) is None


def test_durations_are_written_in_the_largest_units():
    assert human(3 * 3600 + 1800) == "3h 30m"
    assert human(160 * 3600 + 40 * 3600 + 3600) == "1mo 1w 1h"


def test_setting_an_estimate_answers_the_time_stats_and_notes_it(api, db, setup):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "3h30m"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "time_estimate": 12600,
        "total_time_spent": 0,
        "human_time_estimate": "3h 30m",
        "human_total_time_spent": None,
    }
    assert system_notes(db, issue) == ["changed time estimate to 3h 30m"]
    assert api(reporter).get(url(project, issue, "time_stats")).json()["time_estimate"] == 12600


def test_resetting_the_estimate_removes_it(api, db, setup):
    reporter, project, issue = setup
    api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "1d"})
    r = api(reporter).post(url(project, issue, "reset_time_estimate"))
    assert r.status_code == 200
    assert (r.json()["time_estimate"], r.json()["human_time_estimate"]) == (0, None)
    assert system_notes(db, issue) == ["changed time estimate to 1d", "removed time estimate"]
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 0


def test_the_same_estimate_again_notes_nothing(api, db, setup):
    reporter, project, issue = setup
    api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "2h"})
    api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "120m"})
    assert system_notes(db, issue) == ["changed time estimate to 2h"]


@pytest.mark.parametrize("duration", ["abc", "-1h", ""])
def test_an_invalid_estimate_is_refused_and_nothing_changes(api, db, setup, duration):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "time_estimate"), json={"duration": duration})
    assert r.status_code == 400
    assert r.json() == {
        "message": {"time_estimate": ["must have a valid format and be greater than or equal to zero."]}
    }
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 0
    assert system_notes(db, issue) == []


def test_a_missing_duration_is_a_parameter_error(api, setup):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "time_estimate"))
    assert (r.status_code, r.json()) == (400, {"error": "duration is missing"})


def test_an_estimate_past_the_column_is_kept_as_its_largest(api, db, setup):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "99999999mo"})
    assert r.status_code == 200
    assert r.json()["time_estimate"] == 2**31 - 1
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 2**31 - 1


def test_spent_time_is_logged_counted_and_noted(api, db, setup):
    reporter, project, issue = setup
    r = api(reporter).post(
        url(project, issue, "add_spent_time"), json={"duration": "1h", "summary": "review"}
    )
    assert r.status_code == 201, r.text
    assert r.json()["total_time_spent"] == 3600
    assert r.json()["human_total_time_spent"] == "1h"
    r = api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "-30m"})
    assert r.json()["total_time_spent"] == 1800
    assert r.status_code == 201
    logs = db.scalars(select(Timelog).where(Timelog.target_id == issue.id).order_by(Timelog.id)).all()
    assert [(t.target_type, t.time_spent, t.summary, t.user_id) for t in logs] == [
        ("Issue", 3600, "review", reporter.id),
        ("Issue", -1800, None, reporter.id),
    ]
    db.expire_all()
    assert db.get(Issue, issue.id).total_time_spent == 1800
    assert system_notes(db, issue) == ["added 1h of time spent", "subtracted 30m of time spent"]


def test_resetting_spent_time_logs_the_totals_negative(api, db, setup):
    reporter, project, issue = setup
    api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "2h"})
    r = api(reporter).post(url(project, issue, "reset_spent_time"))
    assert r.status_code == 200
    assert (r.json()["total_time_spent"], r.json()["human_total_time_spent"]) == (0, None)
    logs = db.scalars(select(Timelog.time_spent).where(Timelog.target_id == issue.id).order_by(Timelog.id))
    assert list(logs) == [7200, -7200]
    assert system_notes(db, issue)[-1] == "removed time spent"


def test_subtracting_more_than_was_spent_is_refused(api, db, setup):
    reporter, project, issue = setup
    api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "1h"})
    r = api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "-2h"})
    assert r.status_code == 400
    assert r.json() == {"message": {"base": ["Time to subtract exceeds the total time spent"]}}
    assert db.scalars(select(Timelog.time_spent).where(Timelog.target_id == issue.id)).all() == [3600]


def test_spent_time_past_a_year_is_refused(api, db, setup):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "9999mo"})
    assert r.status_code == 400
    assert r.json() == {"message": {"base": ["Total time spent cannot exceed a year."]}}
    assert db.scalars(select(Timelog).where(Timelog.target_id == issue.id)).all() == []


def test_invalid_spent_time_is_refused(api, db, setup):
    reporter, project, issue = setup
    r = api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "soon"})
    assert r.status_code == 400
    assert r.json() == {"message": {"timelogs.time_spent": ["can't be blank"]}}
    r = api(reporter).post(
        url(project, issue, "add_spent_time"), json={"duration": "1h", "summary": "x" * 256}
    )
    assert r.status_code == 400
    assert db.scalars(select(Timelog).where(Timelog.target_id == issue.id)).all() == []


def test_a_guest_may_read_but_not_track_time(api, db, make, setup):
    reporter, project, issue = setup
    api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "3h"})
    api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "2h"})
    guest = make.user()
    make.member(project, guest, GUEST)
    stats = api(guest).get(url(project, issue, "time_stats"))
    assert (stats.status_code, stats.json()["time_estimate"], stats.json()["total_time_spent"]) == (
        200,
        10800,
        7200,
    )
    notes_before = system_notes(db, issue)
    for what, body in (
        ("time_estimate", {"duration": "1h"}),
        ("reset_time_estimate", {}),
        ("add_spent_time", {"duration": "1h"}),
        ("reset_spent_time", {}),
    ):
        assert api(guest).post(url(project, issue, what), json=body).status_code == 403
    assert db.scalars(select(Timelog.time_spent).where(Timelog.target_id == issue.id)).all() == [7200]
    db.expire_all()
    row = db.get(Issue, issue.id)
    assert (row.time_estimate, row.total_time_spent) == (10800, 7200)
    assert system_notes(db, issue) == notes_before


def test_a_hidden_project_or_issue_is_not_found(api, db, make, setup):
    reporter, project, issue = setup
    stranger = make.user()
    r = api(stranger).post(url(project, issue, "time_estimate"), json={"duration": "1h"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 0
    confidential = make.issue(project, reporter, confidential=True)
    public = make.project(visibility="public", members={reporter: REPORTER})
    secret = make.issue(public, reporter, confidential=True)
    r = api(stranger).get(url(public, secret, "time_stats"))
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
    assert api(reporter).get(url(project, confidential, "time_stats")).status_code == 200
    assert api(reporter).get(f"/projects/{project.id}/issues/999/time_stats").status_code == 404


def test_anonymous_callers_read_a_public_issues_time_stats_only(api, db, make):
    owner = make.user()
    public = make.project(visibility="public", members={owner: REPORTER})
    issue = make.issue(public, owner, time_estimate=3600)
    assert api().get(url(public, issue, "time_stats")).json()["human_time_estimate"] == "1h"
    assert api().post(url(public, issue, "time_estimate"), json={"duration": "2h"}).status_code == 401
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 3600


def test_an_archived_project_refuses_time_tracking(api, db, make):
    reporter = make.user()
    project = make.project(members={reporter: REPORTER}, archived=True)
    issue = make.issue(project, reporter)
    r = api(reporter).post(url(project, issue, "add_spent_time"), json={"duration": "1h"})
    assert r.status_code == 403
    r = api(reporter).post(url(project, issue, "time_estimate"), json={"duration": "1h"})
    assert r.status_code == 403
    assert db.scalars(select(Timelog).where(Timelog.target_id == issue.id)).all() == []
    db.expire_all()
    assert db.get(Issue, issue.id).time_estimate == 0


def test_an_iid_past_any_issue_is_not_found(api, setup):
    reporter, project, _ = setup
    r = api(reporter).get(f"/projects/{project.id}/issues/{2**63 - 1}/time_stats")
    assert (r.status_code, r.json()) == (404, {"message": "404 Issue Not Found"})
