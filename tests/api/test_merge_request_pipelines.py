"""Merge request pipelines: made when a merge request is opened and when its source is pushed,
only for configurations with jobs that admit `merge_request_event`, on the merge request's
head ref with its CI_MERGE_REQUEST_* variables, `rules: changes` compared with the diff base;
the merge request's pipelines list and running one on request."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.models import MergeRequest
from kiln.models.ci import CiJob, Pipeline
from kiln.models.namespaces import DEVELOPER, REPORTER
from kiln.services import merge_request_pipelines
from tests.api.test_merge_request_diffs import push_commit
from tests.api.test_pipelines import LIST_FIELDS
from tests.merge_requests import fork_id
from tests.statements import count

MR_ONLY = """
mr-job:
  script: [echo mr]
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
branch-job:
  script: [echo branch]
"""

NO_MR_JOBS = """
branch-job:
  script: [echo branch]
"""


@pytest.fixture(autouse=True)
def short_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KILN_CI_LONG_POLL_SECONDS", "0")


def project_with_ci(make, owner, config: str, **fields):
    p = make.project_with_repository(owner=owner, **fields)
    make.commit(p, {".gitlab-ci.yml": config}, message="CI")
    return p


def open_mr(api, who, p, branch="feature", files=None, **fields):
    """A merge request through the API (its pipeline comes from the job queue)."""
    r = api(who).post(f"/projects/{p.id}/repository/branches", params={"branch": branch, "ref": "main"})
    assert r.status_code == 201, r.text
    push_commit(api, who, p.id, branch, files or {"feature.txt": "x\n"}, message="Feature")
    r = api(who).post(
        f"/projects/{p.id}/merge_requests",
        json={"source_branch": branch, "target_branch": "main", "title": "MR", **fields},
    )
    assert r.status_code == 201, r.text
    return r.json()


def pipelines(db, project_id) -> list[Pipeline]:
    db.expire_all()
    return list(db.scalars(select(Pipeline).where(Pipeline.project_id == project_id).order_by(Pipeline.id)))


def job_names(db, pipeline) -> list[str]:
    return list(db.scalars(select(CiJob.name).where(CiJob.pipeline_id == pipeline.id).order_by(CiJob.name)))


def mr_pipelines(db, p) -> list[Pipeline]:
    return [x for x in pipelines(db, p.id) if x.source == "merge_request_event"]


def test_opening_a_merge_request_runs_its_opting_in_jobs(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()
    [pipeline] = mr_pipelines(db, p)
    assert (pipeline.ref, pipeline.sha, pipeline.merge_request_id) == (
        f"refs/merge-requests/{mr['iid']}/head",
        mr["sha"],
        mr["id"],
    )
    assert job_names(db, pipeline) == ["mr-job"]
    # The branch's own pipeline runs the other job.
    branch = [x for x in pipelines(db, p.id) if x.source == "push" and x.ref == "feature"]
    assert [job_names(db, x) for x in branch][-1] == ["branch-job"]


def test_a_configuration_without_merge_request_jobs_makes_no_merge_request_pipeline(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, NO_MR_JOBS)
    open_mr(api, owner, p)
    drain()
    assert mr_pipelines(db, p) == []


def test_a_push_to_the_source_runs_a_new_merge_request_pipeline(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()
    sha = push_commit(api, owner, p.id, "feature", {"more.txt": "y\n"})
    drain()
    assert [x.sha for x in mr_pipelines(db, p)] == [mr["sha"], sha]


def test_merge_request_variables_are_seen_by_rules(api, make, db, drain):
    owner = make.user()
    config = """
labelled:
  script: [echo]
  rules:
    - if: $CI_MERGE_REQUEST_LABELS =~ /bug/ && $CI_MERGE_REQUEST_TARGET_BRANCH_NAME == "main"
by-branch:
  script: [echo]
  rules:
    - if: $CI_MERGE_REQUEST_SOURCE_BRANCH_NAME == "feature" && $CI_MERGE_REQUEST_EVENT_TYPE == "detached"
branch-only:
  script: [echo]
  rules:
    - if: $CI_COMMIT_BRANCH
"""
    p = project_with_ci(make, owner, config)
    open_mr(api, owner, p, labels="bug")
    drain()
    [pipeline] = mr_pipelines(db, p)
    assert job_names(db, pipeline) == ["by-branch", "labelled"]


def test_rules_changes_compare_with_the_merge_request_diff_base(api, make, db, drain):
    owner = make.user()
    config = """
docs:
  script: [echo]
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
      changes: [docs/**/*]
always:
  script: [echo]
  rules:
    - if: $CI_PIPELINE_SOURCE == "merge_request_event"
"""
    p = project_with_ci(make, owner, config)
    open_mr(api, owner, p, files={"docs/a.md": "a\n"})
    drain()
    # A later push touching only code: the merge request still changes docs/.
    push_commit(api, owner, p.id, "feature", {"src/b.py": "b\n"})
    drain()
    assert [job_names(db, x) for x in mr_pipelines(db, p)] == [["always", "docs"], ["always", "docs"]]
    other = open_mr(api, owner, p, branch="code", files={"src/c.py": "c\n"})
    drain()
    [latest] = [x for x in mr_pipelines(db, p) if x.merge_request_id == other["id"]]
    assert job_names(db, latest) == ["always"]


def test_the_variables_of_a_merge_request_pipeline(api, make, db, drain, settings):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    label = make.label(project=p, title="ui")
    m = make.milestone(project=p, title="v1")
    mr = open_mr(api, owner, p, labels=f"{label.title},bug", milestone_id=m.id, assignee_ids=[owner.id])
    drain()
    row = db.get(MergeRequest, mr["id"])
    found = merge_request_pipelines.variables(db, settings, row)
    path = api(owner).get(f"/projects/{p.id}").json()["path_with_namespace"]
    base = settings.external_url.rstrip("/")
    diff = api(owner).get(f"/projects/{p.id}/merge_requests/{mr['iid']}/versions").json()[0]
    assert found == {
        "CI_MERGE_REQUEST_ID": str(mr["id"]),
        "CI_MERGE_REQUEST_IID": str(mr["iid"]),
        "CI_MERGE_REQUEST_REF_PATH": f"refs/merge-requests/{mr['iid']}/head",
        "CI_MERGE_REQUEST_PROJECT_ID": str(p.id),
        "CI_MERGE_REQUEST_PROJECT_PATH": path,
        "CI_MERGE_REQUEST_PROJECT_URL": f"{base}/{path}",
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_MERGE_REQUEST_TARGET_BRANCH_PROTECTED": "false",
        "CI_MERGE_REQUEST_TARGET_BRANCH_SHA": "",
        "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": str(p.id),
        "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": path,
        "CI_MERGE_REQUEST_SOURCE_PROJECT_URL": f"{base}/{path}",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_PROTECTED": "false",
        "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "",
        "CI_MERGE_REQUEST_TITLE": "MR",
        "CI_MERGE_REQUEST_DRAFT": "false",
        "CI_MERGE_REQUEST_EVENT_TYPE": "detached",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": diff["base_commit_sha"],
        "CI_MERGE_REQUEST_DIFF_ID": str(diff["id"]),
        "CI_MERGE_REQUEST_LABELS": "bug,ui",
        "CI_MERGE_REQUEST_ASSIGNEES": owner.username,
        "CI_MERGE_REQUEST_MILESTONE": "v1",
        "CI_COMMIT_REF_NAME": "feature",
        "CI_COMMIT_REF_SLUG": "feature",
    }


def test_a_runner_gets_the_head_ref_and_the_merge_request_variables(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()
    # Only the merge request job is asked for: the branch pipeline's are dropped first.
    for x in pipelines(db, p.id):
        if x.source != "merge_request_event":
            api(owner).post(f"/projects/{p.id}/pipelines/{x.id}/cancel")
    runner = make.runner()
    r = api().post("/jobs/request", json={"token": runner.token})
    assert r.status_code == 201, r.text
    payload = r.json()
    ref = f"refs/merge-requests/{mr['iid']}/head"
    assert payload["job_info"]["name"] == "mr-job"
    assert payload["git_info"]["refspecs"][0] == f"+{ref}:{ref}"
    variables: dict[str, str] = {}
    for v in payload["variables"]:
        variables[v["key"]] = v["value"]
    assert (variables["CI_PIPELINE_SOURCE"], variables["CI_COMMIT_REF_NAME"]) == (
        "merge_request_event",
        "feature",
    )
    assert (variables["CI_MERGE_REQUEST_IID"], variables["CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"]) == (
        str(mr["iid"]),
        "feature",
    )
    assert "CI_COMMIT_BRANCH" not in variables


# ----------------------------------------------------------------------------- the routes


def list_path(p, mr) -> str:
    return f"/projects/{p.id}/merge_requests/{mr['iid']}/pipelines"


def test_the_list_holds_merge_request_and_branch_pipelines_newest_first(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()
    r = api(owner).get(list_path(p, mr))
    assert r.status_code == 200, r.text
    listed = r.json()
    assert [(x["source"], x["ref"]) for x in listed] == [
        ("merge_request_event", f"refs/merge-requests/{mr['iid']}/head"),
        ("push", "feature"),
    ]
    assert set(listed[0]) == LIST_FIELDS
    assert all(x["sha"] == mr["sha"] for x in listed)


def test_creating_a_merge_request_pipeline(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()
    r = api(owner).post(list_path(p, mr))
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["source"], body["ref"], body["sha"], body["user"]["id"]) == (
        "merge_request_event",
        f"refs/merge-requests/{mr['iid']}/head",
        mr["sha"],
        owner.id,
    )
    assert len(mr_pipelines(db, p)) == 2


def test_creating_one_without_merge_request_jobs_is_refused(api, make, db, drain):
    owner = make.user()
    p = project_with_ci(make, owner, NO_MR_JOBS)
    mr = open_mr(api, owner, p)
    drain()
    r = api(owner).post(list_path(p, mr))
    assert (r.status_code, r.json()) == (400, {"message": {"base": ["No stages / jobs for this pipeline."]}})
    assert mr_pipelines(db, p) == []


def test_reporters_read_the_list_but_may_not_create(api, make, drain):
    owner = make.user()
    reporter = make.user()
    dev = make.user()
    p = project_with_ci(make, owner, MR_ONLY, members={reporter: REPORTER, dev: DEVELOPER})
    mr = open_mr(api, owner, p)
    drain()
    assert api(reporter).get(list_path(p, mr)).status_code == 200
    r = api(reporter).post(list_path(p, mr))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    assert api(dev).post(list_path(p, mr)).status_code == 201


def test_strangers_and_missing_merge_requests_are_not_found(api, make, drain):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    assert api(make.user()).get(list_path(p, mr)).status_code == 404
    r = api(owner).get(f"/projects/{p.id}/merge_requests/999/pipelines")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})
    assert api(owner).post(f"/projects/{p.id}/merge_requests/999/pipelines").status_code == 404


def test_the_list_costs_the_same_for_one_pipeline_as_for_many(api, make, db, drain, runtime):
    owner = make.user()
    p = project_with_ci(make, owner, MR_ONLY)
    mr = open_mr(api, owner, p)
    drain()

    def call():
        return api(owner).get(list_path(p, mr))

    few = count(runtime, call)
    for _ in range(3):
        assert api(owner).post(list_path(p, mr)).status_code == 201
    assert len(call().json()) == 5
    assert count(runtime, call) == few


def test_a_merge_request_from_a_fork_runs_no_pipeline_in_the_target_by_itself(api, make, db, drain):
    """Fork code would run with the target's variables and runners: only a target member's
    explicit request runs it there."""
    owner = make.user()
    forker = make.user()
    p = project_with_ci(make, owner, MR_ONLY, visibility="public", members={forker: REPORTER})
    fork = fork_id(api, forker, p)
    drain()
    r = api(forker).post(f"/projects/{fork}/repository/branches", params={"branch": "topic", "ref": "main"})
    assert r.status_code == 201, r.text
    push_commit(api, forker, fork, "topic", {"f.txt": "x\n"})
    r = api(forker).post(
        f"/projects/{fork}/merge_requests",
        json={
            "source_branch": "topic",
            "target_branch": "main",
            "title": "From a fork",
            "target_project_id": p.id,
        },
    )
    assert r.status_code == 201, r.text
    mr = r.json()
    drain()
    pushed = push_commit(api, forker, fork, "topic", {"g.txt": "y\n"})
    drain()
    assert mr_pipelines(db, p) == []
    assert api(forker).post(list_path(p, mr)).status_code == 403
    assert mr_pipelines(db, p) == []
    r = api(owner).post(list_path(p, mr))
    assert r.status_code == 201, r.text
    assert r.json()["sha"] == pushed  # the head the latest push made
