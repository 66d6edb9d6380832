"""Commit statuses (GitLab's Commits API, statuses part; spec part 1 "Commit" for the commit's
`status` and `last_pipeline`): a status reported from outside is an external job of the
commit's pipeline and folds into its status; a commit's statuses are listed with filters."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from kiln.models.ci import CiJob, Pipeline
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from tests.api.test_pipelines import LIST_FIELDS
from tests.statements import count


def _setup(make: Any) -> tuple[Any, Any, str]:
    owner = make.user()
    project = make.project_with_repository(owner=owner, members={owner: MAINTAINER})
    sha = make.commit(project, {"app.py": "print(1)\n"}, branch="main", message="app")
    return owner, project, sha


def _post(api: Any, who: Any, project: Any, sha: str, **body: Any) -> Any:
    return api(who).post(f"/projects/{project.id}/statuses/{sha}", json=body)


def _statuses(api: Any, who: Any, project: Any, sha: str, **query: Any) -> Any:
    return api(who).get(f"/projects/{project.id}/repository/commits/{sha}/statuses", params=query)


def _counts(db: Any) -> tuple[int, int]:
    return (
        db.scalar(select(func.count()).select_from(Pipeline)),
        db.scalar(select(func.count()).select_from(CiJob)),
    )


# ----------------------------------------------------------------------------- reporting


def test_a_first_status_makes_an_external_pipeline_whose_status_it_is(api, make, db):
    owner, project, sha = _setup(make)
    r = _post(
        api,
        owner,
        project,
        sha,
        state="running",
        name="ci/build",
        target_url="https://ci.example/1",
        description="building",
        coverage=81.5,
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["status"] == "running"
    assert (body["name"], body["ref"], body["sha"]) == ("ci/build", "main", sha)
    assert (body["target_url"], body["description"], body["coverage"]) == (
        "https://ci.example/1",
        "building",
        81.5,
    )
    assert body["allow_failure"] is False
    assert body["author"]["username"] == owner.username
    assert body["started_at"] is not None
    assert body["finished_at"] is None
    pipeline = db.get(Pipeline, body["pipeline_id"])
    db.refresh(pipeline)
    assert (pipeline.source, pipeline.status, pipeline.ref, pipeline.sha) == (
        "external",
        "running",
        "main",
        sha,
    )


def test_the_same_name_moves_its_status_and_the_pipeline_follows(api, make, db):
    owner, project, sha = _setup(make)
    first = _post(api, owner, project, sha, state="pending", name="ci").json()
    second = _post(api, owner, project, sha, state="running", name="ci").json()
    assert second["id"] == first["id"]
    done = _post(api, owner, project, sha, state="success", name="ci").json()
    assert (done["id"], done["status"]) == (first["id"], "success")
    assert done["finished_at"] is not None
    pipeline = db.get(Pipeline, done["pipeline_id"])
    db.refresh(pipeline)
    assert pipeline.status == "success"


def test_statuses_fold_into_the_pipelines_status(api, make, db):
    owner, project, sha = _setup(make)
    a = _post(api, owner, project, sha, state="success", name="a").json()
    _post(api, owner, project, sha, state="running", name="b")
    pipeline = db.get(Pipeline, a["pipeline_id"])
    db.refresh(pipeline)
    assert pipeline.status == "running"
    _post(api, owner, project, sha, state="failed", name="b")
    db.refresh(pipeline)
    assert pipeline.status == "failed"


def test_a_status_goes_into_the_commits_latest_pipeline_for_the_ref(api, make, db):
    owner, project, sha = _setup(make)
    older = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    newer = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    make.pipeline(project, ref="other", sha=sha, jobs=[{"name": "build"}])
    body = _post(api, owner, project, sha, state="running", name="deploy", ref="main").json()
    assert body["pipeline_id"] == newer.id != older.id
    db.refresh(newer)
    assert newer.status == "running"


def test_pipeline_id_names_the_pipeline(api, make):
    owner, project, sha = _setup(make)
    chosen = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    body = _post(api, owner, project, sha, state="success", name="x", pipeline_id=chosen.id).json()
    assert body["pipeline_id"] == chosen.id


def test_context_is_the_name_and_default_names_a_nameless_status(api, make):
    owner, project, sha = _setup(make)
    assert _post(api, owner, project, sha, state="pending", context="lint").json()["name"] == "lint"
    assert _post(api, owner, project, sha, state="pending").json()["name"] == "default"


def test_a_branch_name_names_its_commit_and_the_ref_defaults_to_a_branch_holding_it(api, make):
    owner, project, sha = _setup(make)
    body = _post(api, owner, project, "main", state="success").json()
    assert (body["sha"], body["ref"]) == (sha, "main")


def test_a_new_state_on_a_finished_status_starts_a_new_one_and_the_old_is_history(api, make, db):
    owner, project, sha = _setup(make)
    first = _post(api, owner, project, sha, state="success", name="ci").json()
    again = _post(api, owner, project, sha, state="running", name="ci").json()
    assert again["id"] != first["id"]
    assert again["pipeline_id"] == first["pipeline_id"]
    assert db.get(CiJob, first["id"]).retried is True
    assert [s["id"] for s in _statuses(api, owner, project, sha).json()] == [again["id"]]
    every = _statuses(api, owner, project, sha, all="true").json()
    assert [s["id"] for s in every] == [first["id"], again["id"]]


def test_a_move_the_state_machine_refuses_is_400_and_writes_nothing(api, make, db):
    owner, project, sha = _setup(make)
    _post(api, owner, project, sha, state="running", name="ci")
    before = _counts(db)
    for state, event in (("pending", "enqueue"), ("running", "run"), ("skipped", "skip")):
        r = _post(api, owner, project, sha, state=state, name="ci", description="changed")
        assert r.status_code == 400
        assert r.json() == {
            "message": f'Cannot transition status via :{event} from :running (Reason(s): Status cannot transition via "{event}")'
        }
    assert _counts(db) == before
    assert db.scalar(select(CiJob.description).where(CiJob.name == "ci")) is None


def test_pending_twice_is_refused(api, make):
    owner, project, sha = _setup(make)
    _post(api, owner, project, sha, state="pending", name="ci")
    r = _post(api, owner, project, sha, state="pending", name="ci")
    assert r.status_code == 400
    assert r.json()["message"].startswith("Cannot transition status via :enqueue from :pending")


def test_bad_input_is_400_and_writes_nothing(api, make, db):
    owner, project, sha = _setup(make)
    before = _counts(db)
    for body, message in (
        ({}, "state is missing"),
        ({"state": "done"}, "state does not have a valid value"),
        ({"state": "success", "coverage": "lots"}, "coverage is invalid"),
    ):
        r = _post(api, owner, project, sha, **body)
        assert (r.status_code, r.json()) == (400, {"error": message})
    r = _post(api, owner, project, sha, state="success", name="n" * 256)
    assert (r.status_code, r.json()) == (
        400,
        {"message": {"name": ["is too long (maximum is 255 characters)"]}},
    )
    assert _counts(db) == before


def test_an_unknown_commit_is_404(api, make, db):
    owner, project, _ = _setup(make)
    r = _post(api, owner, project, "f" * 40, state="success")
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})
    assert _counts(db) == (0, 0)


def test_a_commit_on_no_branch_needs_a_ref(api, make):
    owner, project, _sha = _setup(make)
    loose = make.commit(project, {"x": "1"}, branch="loose")
    make.db.commit()
    from tests.factories.repositories import open_repository

    open_repository(make.settings, project).references.delete("refs/heads/loose")
    r = _post(api, owner, project, loose, state="success")
    assert (r.status_code, r.json()) == (404, {"message": "404 References for commit Not Found"})
    assert _post(api, owner, project, loose, state="success", ref="loose").json()["ref"] == "loose"


def test_developers_report_reporters_cannot_strangers_see_nothing(api, make, db):
    _owner, project, sha = _setup(make)
    dev, reporter, stranger = make.user(), make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    make.member(project, reporter, REPORTER)
    assert _post(api, dev, project, sha, state="success").status_code == 201
    before = _counts(db)
    assert _post(api, reporter, project, sha, state="success").status_code == 403
    r = _post(api, stranger, project, sha, state="success")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert _post(api, None, project, sha, state="success").status_code == 401
    assert _counts(db) == before


# ----------------------------------------------------------------------------- listing


def test_the_list_shows_external_statuses_and_the_pipelines_jobs(api, make):
    owner, project, sha = _setup(make)
    pipeline = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build", "stage": "build"}])
    external = _post(api, owner, project, sha, state="success", name="ext", ref="main").json()
    listed = _statuses(api, owner, project, sha).json()
    assert [(s["name"], s["pipeline_id"]) for s in listed] == [("build", pipeline.id), ("ext", pipeline.id)]
    assert listed[1] == external


def test_list_filters_and_order(api, make):
    owner, project, sha = _setup(make)
    first = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build", "stage": "build"}])
    second = make.pipeline(project, ref="dev", sha=sha, jobs=[{"name": "test", "stage": "test"}])
    make.pipeline(project, ref="main", sha="a" * 40, jobs=[{"name": "other"}])

    def names(**query: Any) -> list[str]:
        return [s["name"] for s in _statuses(api, owner, project, sha, **query).json()]

    assert names() == ["build", "test"]
    assert names(ref="dev") == ["test"]
    assert names(stage="build") == ["build"]
    assert names(name="test") == ["test"]
    assert names(pipeline_id=first.id) == ["build"]
    assert names(sort="desc") == ["test", "build"]
    assert names(order_by="pipeline_id", sort="desc") == ["test", "build"]
    assert second.id > first.id
    r = _statuses(api, owner, project, sha, order_by="name")
    assert (r.status_code, r.json()) == (400, {"error": "order_by does not have a valid value"})


def test_reporters_read_statuses_guests_do_not_while_pipelines_are_not_public(api, make):
    owner, project, sha = _setup(make)
    project.public_jobs = False
    make.db.commit()
    _post(api, owner, project, sha, state="success")
    reporter, guest, stranger = make.user(), make.user(), make.user()
    make.member(project, reporter, REPORTER)
    make.member(project, guest, GUEST)
    assert len(_statuses(api, reporter, project, sha).json()) == 1
    assert _statuses(api, guest, project, sha).status_code == 403
    assert _statuses(api, stranger, project, sha).status_code == 404


def test_the_list_costs_the_same_for_few_and_many_statuses(api, make, runtime):
    owner, project, sha = _setup(make)
    _post(api, owner, project, sha, state="success", name="s0")
    few = count(runtime, lambda: _statuses(api, owner, project, sha))
    for n in range(1, 6):
        who = make.user()
        make.member(project, who, DEVELOPER)
        _post(api, who, project, sha, state="success", name=f"s{n}")
    many = count(runtime, lambda: _statuses(api, owner, project, sha))
    assert few == many


# ----------------------------------------------------------------------------- the commit


def test_the_commit_shows_its_latest_pipelines_status_and_record(api, make):
    owner, project, sha = _setup(make)
    url = f"/projects/{project.id}/repository/commits/{sha}"
    body = api(owner).get(url).json()
    assert (body["status"], body["last_pipeline"]) == (None, None)
    make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    newest = make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build", "status": "success"}])
    _post(api, owner, project, sha, state="failed", name="ext", pipeline_id=newest.id)
    body = api(owner).get(url).json()
    assert body["status"] == "failed"
    last = body["last_pipeline"]
    assert (last["id"], last["iid"], last["project_id"], last["ref"], last["sha"], last["status"]) == (
        newest.id,
        newest.iid,
        project.id,
        "main",
        sha,
        "failed",
    )
    assert last["source"] == "push"
    assert last["web_url"].endswith(f"/-/pipelines/{newest.id}")
    assert {"created_at", "updated_at"} <= last.keys()
    assert last["web_url"] == f"http://kiln.test/{owner.username}/{project.path}/-/pipelines/{newest.id}"
    assert set(last) == LIST_FIELDS
    assert (
        api(owner).get(f"/projects/{project.id}/pipelines/{newest.id}").json()["updated_at"]
        == last["updated_at"]
    )


def test_a_guest_sees_no_pipeline_on_the_commit_while_pipelines_are_not_public(api, make):
    _owner, project, sha = _setup(make)
    make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    guest = make.user()
    make.member(project, guest, GUEST)
    project.visibility = "internal"
    project.public_jobs = False
    make.db.commit()
    assert api(guest).get(f"/projects/{project.id}/repository/commits/{sha}").json()["id"] == sha
    project.public_jobs = True
    make.db.commit()
    assert api(guest).get(f"/projects/{project.id}/repository/commits/{sha}").json()["status"] == "pending"
    project.public_jobs = False
    make.db.commit()
    body = api(guest).get(f"/projects/{project.id}/repository/commits/{sha}").json()
    assert (body["status"], body["last_pipeline"]) == (None, None)


def test_a_created_commit_shows_its_pipeline_fields(api, make):
    owner, project, _ = _setup(make)
    r = api(owner).post(
        f"/projects/{project.id}/repository/commits",
        json={
            "branch": "main",
            "commit_message": "more",
            "actions": [{"action": "create", "file_path": "b", "content": "b"}],
        },
    )
    assert r.status_code == 201, r.text
    assert "status" in r.json()
    assert "last_pipeline" in r.json()


def test_the_commits_pipeline_costs_one_statement(api, make, runtime):
    owner, project, sha = _setup(make)
    url = f"/projects/{project.id}/repository/commits/{sha}"
    without = count(runtime, lambda: api(owner).get(url))
    make.pipeline(project, ref="main", sha=sha, jobs=[{"name": "build"}])
    assert count(runtime, lambda: api(owner).get(url)) == without
