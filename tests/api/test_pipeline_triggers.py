"""Pipeline trigger tokens (GitLab's Pipeline trigger tokens API): Maintainers manage them;
a token starts a pipeline of its project as its owner, without a user session."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from kiln.auth.actor import Actor
from kiln.models.ci import Pipeline, PipelineTrigger, PipelineVariable
from kiln.models.namespaces import DEVELOPER, MAINTAINER, REPORTER
from kiln.queries import users as user_finder
from kiln.services.pipeline_triggers import trigger_token
from tests.statements import count

CI = "build:\n  script: echo hi\n"


def _project(make: Any, **fields: Any) -> tuple[Any, Any]:
    owner = make.user()
    project = make.project_with_repository(owner=owner, members={owner: MAINTAINER}, **fields)
    make.commit(project, {".gitlab-ci.yml": CI}, branch="main", message="ci")
    return owner, project


def _url(project: Any, *rest: Any) -> str:
    return "/".join([f"/projects/{project.id}/triggers", *map(str, rest)])


def _create(api: Any, who: Any, project: Any, description: str = "deploy") -> dict[str, Any]:
    r = api(who).post(_url(project), json={"description": description})
    assert r.status_code == 201, r.text
    return r.json()


def _triggered(db: Any) -> list[Pipeline]:
    db.expire_all()
    return list(
        db.scalars(select(Pipeline).where(Pipeline.source.in_(("trigger", "pipeline"))).order_by(Pipeline.id))
    )


def _count(db: Any) -> int:
    return db.scalar(select(func.count()).select_from(PipelineTrigger))


# ----------------------------------------------------------------------------- tokens


def test_create_shows_the_whole_token_to_its_owner(api, make, db):
    owner, project = _project(make)
    body = _create(api, owner, project)
    assert body["token"].startswith("glptt-")
    assert len(body["token"]) == len("glptt-") + 40
    assert (body["description"], body["last_used"], body["expires_at"]) == ("deploy", None, None)
    assert body["owner"]["username"] == owner.username
    stored = db.scalar(select(PipelineTrigger))
    assert body["token"] not in (stored.token_nonce, stored.token_digest)
    assert api(owner).get(_url(project, body["id"])).json()["token"] == body["token"]


def test_a_token_is_derived_from_its_nonce_under_the_server_key_unchanged():
    """Tokens already handed out stay valid: the derivation is pinned."""
    assert trigger_token(b"k" * 32, "nonce") == "glptt-f9198b5aa026bba62fd12a9af4b18cdee75f851c"


def test_other_maintainers_see_its_first_characters(api, make):
    owner, project = _project(make)
    other = make.user()
    make.member(project, other, MAINTAINER)
    body = _create(api, owner, project)
    listed = api(other).get(_url(project)).json()
    assert [t["token"] for t in listed] == [body["token"].removeprefix("glptt-")[:4]]
    assert api(other).get(_url(project, body["id"])).json()["token"] == listed[0]["token"]


def test_developers_cannot_manage_tokens(api, make, db):
    owner, project = _project(make)
    dev, stranger = make.user(), make.user()
    make.member(project, dev, DEVELOPER)
    t = _create(api, owner, project)
    assert api(dev).get(_url(project)).status_code == 403
    assert api(dev).get(_url(project, t["id"])).status_code == 403
    assert api(dev).post(_url(project), json={"description": "x"}).status_code == 403
    assert api(dev).delete(_url(project, t["id"])).status_code == 403
    assert api(stranger).get(_url(project)).status_code == 404
    assert api(None).get(_url(project)).status_code == 401
    assert _count(db) == 1


def test_bad_input_is_400_and_writes_nothing(api, make, db):
    owner, project = _project(make)
    r = api(owner).post(_url(project), json={})
    assert (r.status_code, r.json()) == (400, {"error": "description is missing"})
    r = api(owner).get(_url(project, "abc"))
    assert (r.status_code, r.json()) == (400, {"error": "trigger_id is invalid"})
    assert _count(db) == 0


def test_the_owner_changes_it_other_maintainers_delete_it(api, make, db):
    owner, project = _project(make)
    other = make.user()
    make.member(project, other, MAINTAINER)
    t = _create(api, owner, project)
    r = api(owner).put(_url(project, t["id"]), json={"description": "release"})
    assert (r.status_code, r.json()["description"]) == (200, "release")
    assert api(other).put(_url(project, t["id"]), json={"description": "mine"}).status_code == 403
    assert api(other).delete(_url(project, t["id"])).status_code == 204
    r = api(owner).get(_url(project, t["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 Trigger Not Found"})
    assert _count(db) == 0


def test_the_list_costs_the_same_for_few_and_many_tokens(api, make, runtime):
    owner, project = _project(make)
    _create(api, owner, project)
    few = count(runtime, lambda: api(owner).get(_url(project)))
    for _ in range(4):
        who = make.user()
        make.member(project, who, MAINTAINER)
        _create(api, who, project)
    assert count(runtime, lambda: api(owner).get(_url(project))) == few


# ----------------------------------------------------------------------------- pipelines


def _trigger_url(project: Any) -> str:
    return f"/projects/{project.id}/trigger/pipeline"


def test_a_token_starts_a_pipeline_as_its_owner_from_a_form(api, make, db):
    owner, project = _project(make)
    t = _create(api, owner, project)
    r = api(None).post(
        _trigger_url(project), data={"token": t["token"], "ref": "main", "variables[DEPLOY]": "yes"}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["ref"], body["source"], body["user"]["username"]) == ("main", "trigger", owner.username)
    made = _triggered(db)
    assert [(p.id, p.trigger_id, p.user_id) for p in made] == [(body["id"], t["id"], owner.id)]
    keys = db.scalars(select(PipelineVariable.key).where(PipelineVariable.pipeline_id == body["id"])).all()
    assert list(keys) == ["DEPLOY"]
    assert api(owner).get(_url(project, t["id"])).json()["last_used"] is not None


def test_a_token_starts_a_pipeline_from_json_of_a_private_project(api, make, db):
    owner, project = _project(make)
    assert project.visibility == "private"
    t = _create(api, owner, project)
    r = api(None).post(
        _trigger_url(project), json={"token": t["token"], "ref": "main", "variables": {"A": "1"}}
    )
    assert r.status_code == 201, r.text
    r = api(None).post(
        _trigger_url(project), json={"token": t["token"], "ref": "main", "variables": '{"B": "2"}'}
    )
    assert r.status_code == 201, r.text
    assert len(_triggered(db)) == 2


def test_the_ref_may_be_in_the_path_and_the_token_in_the_query(api, make, db):
    owner, project = _project(make)
    t = _create(api, owner, project)
    r = api(None).post(f"/projects/{project.id}/ref/main/trigger/pipeline", params={"token": t["token"]})
    assert r.status_code == 201, r.text
    assert r.json()["ref"] == "main"


def test_a_bad_token_is_404_and_starts_nothing(api, make, db):
    _, project = _project(make)
    other_owner, other = _project(make)
    foreign = _create(api, other_owner, other)
    for token in ("glptt-" + "0" * 40, foreign["token"]):
        r = api(None).post(_trigger_url(project), json={"token": token, "ref": "main"})
        assert (r.status_code, r.json()) == (404, {"message": "404 Not Found"})
    assert _triggered(db) == []


def test_bad_refs_and_variables_are_400_and_start_nothing(api, make, db):
    owner, project = _project(make)
    t = _create(api, owner, project)
    r = api(None).post(_trigger_url(project), json={"token": t["token"], "ref": "nowhere"})
    assert r.status_code == 400
    assert r.json() == {"message": {"base": ["Reference not found"]}}
    for variables in ({"A": 1}, ["A"], "not json"):
        r = api(None).post(
            _trigger_url(project), json={"token": t["token"], "ref": "main", "variables": variables}
        )
        assert (r.status_code, r.json()) == (
            400,
            {"message": "variables needs to be a map of key-valued strings"},
        )
    r = api(None).post(_trigger_url(project), json={"ref": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "token is missing"})
    r = api(None).post(_trigger_url(project), json={"token": t["token"], "ref": ""})
    assert (r.status_code, r.json()) == (400, {"error": "ref is empty"})
    assert _triggered(db) == []
    assert api(owner).get(_url(project, t["id"])).json()["last_used"] is None


def test_an_owner_who_may_no_longer_run_pipelines_starts_nothing(api, make, db):
    _, project = _project(make)
    maintainer = make.user()
    member = make.member(project, maintainer, MAINTAINER)
    t = _create(api, maintainer, project)
    from kiln.db import transaction

    with transaction(db):
        db.get(type(member), member.id).access_level = REPORTER
    r = api(None).post(_trigger_url(project), json={"token": t["token"], "ref": "main"})
    assert r.status_code == 403
    assert _triggered(db) == []


def test_a_ci_job_token_starts_a_pipeline_as_the_jobs_user_with_source_pipeline(
    api, make, db, runtime, monkeypatch
):
    _, project = _project(make)
    _, upstream = _project(make)
    dev = make.user()
    make.member(project, dev, DEVELOPER)

    def resolver(session: Any, token: str) -> Actor | None:
        if token != "glcbt-job-token":
            return None
        row = user_finder.row_by_id(session, dev.id)
        return Actor(user=row, via="job_token", scopes=frozenset({f"ci_job_project:{upstream.id}"}))

    monkeypatch.setattr(runtime, "job_token_resolver", resolver)
    r = api(None).post(_trigger_url(project), json={"token": "glcbt-job-token", "ref": "main"})
    assert r.json() == {"message": {"base": ["Insufficient permissions for protected ref"]}}
    make.branch(project, "feature", make.commit(project, {"f": "1"}, branch="main"))
    r = api(None).post(_trigger_url(project), json={"token": "glcbt-job-token", "ref": "feature"})
    assert r.status_code == 201, r.text
    assert (r.json()["source"], r.json()["user"]["username"]) == ("pipeline", dev.username)
    r = api(None).post(_trigger_url(project), json={"token": "glcbt-other", "ref": "main"})
    assert r.status_code == 404
