"""Single merge requests: the view, opening (from a branch or a fork), changing, closing,
reopening, deleting, subscriptions, participants, reviewers, commits, changes and diffs."""

from __future__ import annotations

from urllib.parse import quote

from sqlalchemy import func, select, update

from kiln.models import (
    Event,
    Label,
    LabelLink,
    MergeRequest,
    MergeRequestDiff,
    Note,
    Project,
    ResourceLabelEvent,
    ResourceMilestoneEvent,
    ResourceStateEvent,
    Todo,
)
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.models.notes import MERGE_REQUEST
from kiln.models.todos import ASSIGNED, REVIEW_REQUESTED
from tests.api.test_pipelines import LIST_FIELDS
from tests.bodies import COMMIT_KEYS
from tests.merge_requests import system_notes
from tests.statements import count

MR_FIELDS = {
    "id",
    "iid",
    "project_id",
    "title",
    "description",
    "state",
    "merged_by",
    "merge_user",
    "merged_at",
    "merge_after",
    "prepared_at",
    "closed_by",
    "closed_at",
    "created_at",
    "updated_at",
    "target_branch",
    "source_branch",
    "upvotes",
    "downvotes",
    "author",
    "assignee",
    "assignees",
    "reviewers",
    "source_project_id",
    "target_project_id",
    "labels",
    "draft",
    "work_in_progress",
    "milestone",
    "merge_when_pipeline_succeeds",
    "merge_status",
    "detailed_merge_status",
    "sha",
    "merge_commit_sha",
    "squash_commit_sha",
    "user_notes_count",
    "discussion_locked",
    "should_remove_source_branch",
    "force_remove_source_branch",
    "allow_collaboration",
    "allow_maintainer_to_push",
    "web_url",
    "references",
    "time_stats",
    "squash",
    "squash_on_merge",
    "task_completion_status",
    "has_conflicts",
    "blocking_discussions_resolved",
    "approvals_before_merge",
}
SINGLE_FIELDS = {
    "subscribed",
    "changes_count",
    "latest_build_started_at",
    "latest_build_finished_at",
    "first_deployed_to_production_at",
    "pipeline",
    "diff_refs",
    "diverged_commits_count",
    "user",
    "merge_error",
}


def url(p, iid=None, rest="") -> str:
    base = f"/projects/{p.id}/merge_requests"
    return base if iid is None else f"{base}/{iid}{rest}"


def counted(db, model) -> int:
    return db.scalar(select(func.count()).select_from(model))


# ----------------------------------------------------------------------------- the view


def test_the_view_holds_every_field_of_the_spec(api, make, settings, db):
    u = make.user()
    g = make.group(owners=[u], path="team")
    p = make.project_with_repository(namespace=g, path="app")
    m = make.milestone(project=p, title="v1")
    bug = make.label(project=p, title="bug")
    helper, checker = make.user(), make.user()
    mr = make.merge_request(
        p,
        u,
        title="Add things",
        description="- [x] one\n- [ ] two",
        labels=[bug],
        assignees=[helper],
        reviewers=[checker],
        milestone=m,
        time_estimate=3600,
        upvotes=1,
    )
    v = api(u).get(url(p, 1)).json()
    assert set(v) >= MR_FIELDS | SINGLE_FIELDS
    base = settings.external_url
    assert (v["id"], v["iid"], v["project_id"]) == (mr.id, 1, p.id)
    assert (v["source_project_id"], v["target_project_id"]) == (p.id, p.id)
    assert (v["source_branch"], v["target_branch"]) == (mr.source_branch, "main")
    assert v["labels"] == ["bug"]
    assert v["milestone"]["title"] == "v1"
    assert [a["id"] for a in v["assignees"]] == [helper.id]
    assert v["assignee"]["id"] == helper.id
    assert [r["id"] for r in v["reviewers"]] == [checker.id]
    assert v["author"]["username"] == u.username
    assert v["web_url"] == f"{base}/team/app/-/merge_requests/1"
    assert v["references"] == {"short": "!1", "relative": "!1", "full": "team/app!1"}
    assert v["task_completion_status"] == {"count": 2, "completed_count": 1}
    assert v["time_stats"]["time_estimate"] == 3600
    assert (v["draft"], v["work_in_progress"]) == (False, False)
    assert v["sha"] == mr.head_sha
    assert v["changes_count"] == "1"
    diff = db.get(MergeRequestDiff, mr.latest_diff_id)
    assert v["diff_refs"] == {
        "base_sha": diff.base_commit_sha,
        "head_sha": diff.head_commit_sha,
        "start_sha": diff.start_commit_sha,
    }
    assert (v["merge_status"], v["detailed_merge_status"], v["has_conflicts"]) == (
        "unchecked",
        "unchecked",
        False,
    )
    assert v["blocking_discussions_resolved"] is True
    assert v["pipeline"] is None
    assert v["first_deployed_to_production_at"] is None
    assert v["merge_after"] is None
    assert v["diverged_commits_count"] == 0
    assert v["user"] == {"can_merge": True}
    assert v["subscribed"] is True  # the author takes part
    assert v["upvotes"] == 1


def checked(db, mr, status="can_be_merged"):
    """The merge request as the mergeability check leaves it."""
    db.execute(MergeRequest.__table__.update().where(MergeRequest.id == mr.id).values(merge_status=status))
    db.commit()
    return mr


def mr_note(db, mr, author, *, resolvable=False, resolved=False, system=False) -> Note:
    from datetime import UTC, datetime

    from kiln.services.system_notes import new_discussion_id

    note = Note(
        noteable_type=MERGE_REQUEST,
        noteable_id=mr.id,
        project_id=mr.project_id,
        author_id=author.id,
        body="A comment",
        system=system,
        discussion_id=new_discussion_id(),
        resolvable=resolvable,
        resolved_at=datetime.now(UTC) if resolved else None,
    )
    db.add(note)
    db.commit()
    return note


def test_lists_carry_no_single_item_fields(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    listed = api(u).get(url(p)).json()[0]
    assert set(listed) >= MR_FIELDS
    assert not (set(listed) & {"subscribed", "changes_count", "pipeline", "diff_refs", "user"})


def test_a_missing_merge_request_is_404(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    r = api(u).get(url(p, 9))
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})


def test_a_guest_of_a_private_project_may_not_read_merge_requests(api, make):
    u, guest, reporter = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={guest: GUEST, reporter: REPORTER})
    make.merge_request(p, u)
    assert api(guest).get(url(p, 1)).status_code == 403
    assert api(reporter).get(url(p, 1)).status_code == 200
    r = api(make.user()).get(url(p, 1))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_a_guest_and_strangers_read_merge_requests_of_a_public_project(api, make):
    u, guest = make.user(), make.user()
    p = make.project_with_repository(owner=u, visibility="public", members={guest: GUEST})
    make.merge_request(p, u)
    assert api(guest).get(url(p, 1)).status_code == 200
    assert api(make.user()).get(url(p, 1)).status_code == 200
    v = api().get(url(p, 1)).json()
    assert (v["subscribed"], v["user"]) == (False, {"can_merge": False})


def test_merge_requests_closed_to_non_members_are_forbidden(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u, visibility="public", merge_requests_access_level="private")
    make.merge_request(p, u)
    assert api(make.user()).get(url(p, 1)).status_code == 403
    assert api(u).get(url(p, 1)).status_code == 200


def test_can_merge_follows_the_target_branch_protection_and_role(api, make):
    u, dev, maintainer, reporter = make.user(), make.user(), make.user(), make.user()
    p = make.project_with_repository(
        owner=u, members={dev: DEVELOPER, maintainer: MAINTAINER, reporter: REPORTER}
    )
    make.merge_request(p, u)  # into main, protected: Maintainers merge
    assert api(dev).get(url(p, 1)).json()["user"] == {"can_merge": False}
    assert api(maintainer).get(url(p, 1)).json()["user"] == {"can_merge": True}
    make.branch(p, "dev", make.commit(p, {"d.txt": "d\n"}, branch="main"))
    make.merge_request(p, u, target_branch="dev")
    assert api(dev).get(url(p, 2)).json()["user"] == {"can_merge": True}
    assert api(reporter).get(url(p, 2)).json()["user"] == {"can_merge": False}


def test_a_draft_title_makes_a_draft(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    checked(db, make.merge_request(p, u, title="Draft: not yet"))
    v = api(u).get(url(p, 1)).json()
    assert (v["draft"], v["work_in_progress"], v["detailed_merge_status"]) == (True, True, "draft_status")


def test_detailed_merge_status_names_the_first_failing_check(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u, only_allow_merge_if_all_discussions_are_resolved=True)
    mr = checked(db, make.merge_request(p, u))
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "mergeable"
    mr_note(db, mr, u, resolvable=True)
    v = api(u).get(url(p, 1)).json()
    assert (v["detailed_merge_status"], v["blocking_discussions_resolved"]) == (
        "discussions_not_resolved",
        False,
    )
    checked(db, make.merge_request(p, u), "cannot_be_merged")
    v = api(u).get(url(p, 2)).json()
    assert (v["detailed_merge_status"], v["has_conflicts"]) == ("conflict", True)
    checked(db, make.merge_request(p, u, state="closed"))
    assert api(u).get(url(p, 3)).json()["detailed_merge_status"] == "not_open"


def test_a_pipeline_that_must_pass_holds_the_merge(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u, only_allow_merge_if_pipeline_succeeds=True)
    mr = checked(db, make.merge_request(p, u))
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "ci_must_pass"
    make.pipeline(p, ref=mr.source_branch, sha=mr.head_sha, status="running")
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "ci_still_running"


def test_a_skipped_pipeline_passes_only_where_the_project_allows_it(api, make, db):
    # The merge gate's rule (services.merge_requests.pipeline_passed), in the view too.
    u = make.user()
    p = make.project_with_repository(owner=u, only_allow_merge_if_pipeline_succeeds=True)
    mr = checked(db, make.merge_request(p, u))
    make.pipeline(p, ref=mr.source_branch, sha=mr.head_sha, status="skipped")
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "ci_must_pass"
    db.execute(update(Project).where(Project.id == p.id).values(allow_merge_on_skipped_pipeline=True))
    db.commit()
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "mergeable"


def test_semi_linear_history_needs_a_rebase_once_the_target_moves_on(api, make, db):
    # rebase_merge needs fast-forward as ff does (the gate's should_be_rebased?).
    u = make.user()
    p = make.project_with_repository(owner=u, merge_method="rebase_merge")
    checked(db, make.merge_request(p, u))
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "mergeable"
    make.commit(p, {"elsewhere.txt": "moved on\n"}, branch="main", message="Target moves on")
    assert api(u).get(url(p, 1)).json()["detailed_merge_status"] == "need_rebase"


def test_the_head_pipeline_is_the_newest_for_the_head_commit(api, make, settings):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    make.pipeline(p, ref="main", sha=mr.head_sha)  # another branch: not this merge request's
    make.pipeline(p, ref=mr.source_branch, sha="f" * 40)  # an older commit
    first = make.pipeline(p, ref=mr.source_branch, sha=mr.head_sha, status="success")
    v = api(u).get(url(p, 1)).json()
    assert v["pipeline"]["id"] == first.id
    assert set(v["pipeline"]) == LIST_FIELDS - {"name"}
    assert v["pipeline"]["web_url"].endswith(f"/-/pipelines/{first.id}")
    detached = make.pipeline(
        p,
        ref=f"refs/merge-requests/{mr.iid}/head",
        sha=mr.head_sha,
        source="merge_request_event",
        merge_request_id=mr.id,
    )
    assert api(u).get(url(p, 1)).json()["pipeline"]["id"] == detached.id


def test_diverged_commits_count_counts_the_target_commits_the_source_lacks(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    make.commit(p, {"a.txt": "a\n"}, branch="main")
    make.commit(p, {"b.txt": "b\n"}, branch="main")
    assert api(u).get(url(p, 1)).json()["diverged_commits_count"] == 2


def test_a_single_view_costs_a_constant_number_of_statements(api, make, runtime):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    few = count(runtime, lambda: api(u).get(url(p, 1)))
    people = [make.user() for _ in range(4)]
    labels = [make.label(project=p) for _ in range(4)]
    make.merge_request(
        p, u, labels=labels, assignees=people[:2], reviewers=people[2:], milestone=make.milestone(project=p)
    )
    assert count(runtime, lambda: api(u).get(url(p, 2))) <= few + 1  # the milestone


# ----------------------------------------------------------------------------- opening


def _branch(make, p, name, files=None) -> str:
    from kiln.services import repositories

    repo = repositories.store(make.settings).open(p.id)
    main = repo.references.get("refs/heads/main").target
    make.branch(p, name, str(main))
    return make.commit(p, files or {f"{name}.txt": f"{name}\n"}, branch=name)


def test_opening_a_merge_request(api, make, db):
    u, dev = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={dev: DEVELOPER})
    head = _branch(make, p, "feature")
    r = api(dev).post(
        url(p),
        json={
            "source_branch": "feature",
            "target_branch": "main",
            "title": "Add feature",
            "description": "Why",
        },
    )
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["iid"], v["title"], v["description"], v["state"]) == (1, "Add feature", "Why", "opened")
    assert (v["source_branch"], v["target_branch"], v["sha"]) == ("feature", "main", head)
    assert (v["source_project_id"], v["target_project_id"], v["project_id"]) == (p.id, p.id, p.id)
    assert (v["merge_status"], v["changes_count"], v["author"]["id"]) == ("unchecked", "1", dev.id)
    assert v["diff_refs"]["head_sha"] == head
    mr = db.get(MergeRequest, v["id"])
    diff = db.get(MergeRequestDiff, mr.latest_diff_id)
    assert (diff.merge_request_id, diff.head_commit_sha, diff.commits_count) == (mr.id, head, 1)
    events = db.scalars(
        select(Event).where(Event.target_type == MERGE_REQUEST, Event.target_id == mr.id)
    ).all()
    assert [e.action for e in events] == ["opened"]
    assert (
        api(dev)
        .post(url(p), json={"source_branch": "main", "target_branch": "feature", "title": "Back"})
        .json()["iid"]
        == 2
    )


def test_a_draft_title_opens_a_draft(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "wip")
    for n, title in enumerate(("Draft: x", "[Draft] x", "(Draft) x", "WIP: x", "draft - x")):
        v = api(u).post(url(p), json={"source_branch": "wip", "target_branch": "main", "title": title}).json()
        assert (v["draft"], v["work_in_progress"]) == (True, True), title
        api(u).put(url(p, n + 1), json={"state_event": "close"})
    v = (
        api(u)
        .post(url(p), json={"source_branch": "wip", "target_branch": "main", "title": "Drafting"})
        .json()
    )
    assert v["draft"] is False


def test_labels_assignees_reviewers_and_milestone_on_opening(api, make, db):
    u, a, b = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER, b: DEVELOPER})
    make.label(project=p, title="bug")
    m = make.milestone(project=p, title="v1")
    _branch(make, p, "feature")
    r = api(u).post(
        url(p),
        json={
            "source_branch": "feature",
            "target_branch": "main",
            "title": "T",
            "labels": "bug,new-one",
            "assignee_ids": [a.id],
            "reviewer_ids": [b.id],
            "milestone_id": m.id,
        },
    )
    v = r.json()
    assert v["labels"] == ["bug", "new-one"]
    assert db.scalars(select(Label.title).where(Label.project_id == p.id).order_by(Label.title)).all() == [
        "bug",
        "new-one",
    ]
    assert [x["id"] for x in v["assignees"]] == [a.id]
    assert [x["id"] for x in v["reviewers"]] == [b.id]
    assert v["milestone"]["id"] == m.id
    todos = db.execute(select(Todo.user_id, Todo.action).where(Todo.target_type == MERGE_REQUEST)).all()
    assert sorted(todos) == sorted([(a.id, ASSIGNED), (b.id, REVIEW_REQUESTED)])
    assert counted(db, ResourceLabelEvent) == 2
    assert counted(db, ResourceMilestoneEvent) == 1


def test_labels_as_an_array_and_a_single_assignee_id(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    body = {
        "source_branch": "feature",
        "target_branch": "main",
        "title": "T",
        "labels": ["x", "y"],
        "assignee_id": u.id,
    }
    v = api(u).post(url(p), json=body).json()
    assert (v["labels"], v["assignee"]["id"]) == (["x", "y"], u.id)


def test_options_on_opening(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    body = {
        "source_branch": "feature",
        "target_branch": "main",
        "title": "T",
        "remove_source_branch": True,
        "squash": True,
        "approvals_before_merge": 2,
    }
    v = api(u).post(url(p), json=body).json()
    assert (v["force_remove_source_branch"], v["squash"], v["squash_on_merge"]) == (True, True, True)
    assert v["approvals_before_merge"] == 2
    assert v["allow_collaboration"] is False  # only for forks


def test_a_title_is_required(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    r = api(u).post(url(p), json={"source_branch": "feature", "target_branch": "main"})
    assert (r.status_code, r.json()) == (400, {"error": "title is missing"})
    r = api(u).post(url(p), json={"source_branch": "feature", "target_branch": "main", "title": " "})
    assert (r.status_code, r.json()) == (400, {"message": {"title": ["can't be blank"]}})
    assert counted(db, MergeRequest) == 0


def test_unknown_branches_are_refused(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    r = api(u).post(url(p), json={"source_branch": "nope", "target_branch": "main", "title": "T"})
    assert (r.status_code, r.json()) == (400, {"message": ['Source branch "nope" does not exist']})
    r = api(u).post(url(p), json={"source_branch": "feature", "target_branch": "gone", "title": "T"})
    assert (r.status_code, r.json()) == (400, {"message": ['Target branch "gone" does not exist']})
    assert counted(db, MergeRequest) == 0


def test_the_same_branch_as_source_and_target_is_refused(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    r = api(u).post(url(p), json={"source_branch": "main", "target_branch": "main", "title": "T"})
    assert (r.status_code, r.json()) == (
        422,
        {"message": ["You can't use same project/branch for source and target"]},
    )
    assert counted(db, MergeRequest) == 0


def test_a_second_open_merge_request_for_the_same_branches_conflicts(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    body = {"source_branch": "feature", "target_branch": "main", "title": "T"}
    assert api(u).post(url(p), json=body).status_code == 201
    r = api(u).post(url(p), json=body)
    assert (r.status_code, r.json()) == (
        409,
        {"message": ["Another open merge request already exists for this source branch: !1"]},
    )
    assert counted(db, MergeRequest) == 1


def test_who_may_open_merge_requests(api, make):
    u, dev, reporter, guest = make.user(), make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={dev: DEVELOPER, reporter: REPORTER, guest: GUEST})
    _branch(make, p, "feature")
    body = {"source_branch": "feature", "target_branch": "main", "title": "T"}
    assert api(guest).post(url(p), json=body).status_code == 403
    assert api(reporter).post(url(p), json=body).status_code == 403
    assert api(make.user()).post(url(p), json=body).status_code == 404
    assert api().post(url(p), json=body).status_code == 401
    assert api(dev).post(url(p), json=body).status_code == 201


def test_a_reporter_s_planning_fields_need_admin_merge_request(api, make):
    """Developers may set labels and people; a non-member of a public project (who may open
    one from a fork) may not: GitLab drops them."""
    u, dev = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={dev: DEVELOPER})
    _branch(make, p, "feature")
    body = {
        "source_branch": "feature",
        "target_branch": "main",
        "title": "T",
        "labels": "bug",
        "assignee_ids": [u.id],
    }
    v = api(dev).post(url(p), json=body).json()
    assert (v["labels"], [a["id"] for a in v["assignees"]]) == (["bug"], [u.id])


def fork_of(api, make, user, upstream):
    r = api(user).post(
        f"/projects/{upstream.id}/fork", json={"path": f"fork-{upstream.id}", "name": f"fork-{upstream.id}"}
    )
    assert r.status_code == 201, r.text
    from kiln.models import Project

    return make.db.get(Project, r.json()["id"])


def test_a_merge_request_from_a_fork(api, make, db):
    u, outsider = make.user(), make.user()
    upstream = make.project_with_repository(owner=u, visibility="public", path="up")
    fork = fork_of(api, make, outsider, upstream)
    head = _branch(make, fork, "fix")
    body = {
        "source_branch": "fix",
        "target_branch": "main",
        "title": "Fix",
        "target_project_id": upstream.id,
        "allow_collaboration": True,
        "labels": "bug",
    }
    r = api(outsider).post(f"/projects/{fork.id}/merge_requests", json=body)
    assert r.status_code == 201, r.text
    v = r.json()
    assert (v["project_id"], v["target_project_id"], v["source_project_id"]) == (
        upstream.id,
        upstream.id,
        fork.id,
    )
    assert (v["sha"], v["iid"]) == (head, 1)
    assert (v["allow_collaboration"], v["allow_maintainer_to_push"]) == (True, True)
    assert v["labels"] == []  # not a member of the upstream: no admin_merge_request there
    assert v["web_url"].endswith(f"/{upstream.path}/-/merge_requests/1")
    assert api(u).get(f"/projects/{upstream.id}/merge_requests/1").json()["source_project_id"] == fork.id
    r = api(outsider).post(f"/projects/{fork.id}/merge_requests", json=body)
    assert r.status_code == 409


def test_a_merge_request_into_an_unrelated_project_is_refused(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    other = make.project_with_repository(owner=u)
    _branch(make, p, "feature")
    body = {"source_branch": "feature", "target_branch": "main", "title": "T", "target_project_id": other.id}
    r = api(u).post(url(p), json=body)
    assert (r.status_code, r.json()) == (
        422,
        {"message": ["Source project is not a fork of the target project"]},
    )
    assert counted(db, MergeRequest) == 0


# ----------------------------------------------------------------------------- changing


def test_changing_the_title_and_description(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u, title="Old")
    v = api(u).put(url(p, 1), json={"title": "New", "description": "Text"}).json()
    assert (v["title"], v["description"]) == ("New", "Text")
    assert system_notes(db, mr) == ["changed title from **Old** to **New**", "changed the description"]
    e = db.scalars(select(Event).where(Event.target_type == MERGE_REQUEST).order_by(Event.id.desc())).first()
    assert e.action == "updated"
    assert e.data["changes"]["title"] == {"previous": "Old", "current": "New"}


def test_a_draft_prefix_marks_and_unmarks_a_draft(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u, title="Thing")
    assert api(u).put(url(p, 1), json={"title": "Draft: Thing"}).json()["draft"] is True
    assert api(u).put(url(p, 1), json={"title": "Thing"}).json()["draft"] is False
    assert system_notes(db, mr) == [
        "marked this merge request as **draft**",
        "marked this merge request as **ready**",
    ]


def test_closing_and_reopening(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    v = api(u).put(url(p, 1), json={"state_event": "close"}).json()
    assert (v["state"], v["closed_by"]["id"], v["detailed_merge_status"]) == ("closed", u.id, "not_open")
    assert v["closed_at"] is not None
    v = api(u).put(url(p, 1), json={"state_event": "reopen"}).json()
    assert (v["state"], v["closed_by"], v["closed_at"]) == ("opened", None, None)
    assert system_notes(db, mr) == ["closed", "reopened"]
    states = db.scalars(select(ResourceStateEvent.state).order_by(ResourceStateEvent.id)).all()
    assert list(states) == ["closed", "reopened"]
    actions = db.scalars(
        select(Event.action).where(Event.target_type == MERGE_REQUEST).order_by(Event.id)
    ).all()
    assert list(actions) == ["closed", "reopened"]


def test_reopening_is_refused_when_the_source_branch_is_gone(api, make, db):
    from kiln.services import repositories

    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    api(u).put(url(p, 1), json={"state_event": "close"})
    repositories.store(make.settings).open(p.id).references.delete(f"refs/heads/{mr.source_branch}")
    r = api(u).put(url(p, 1), json={"state_event": "reopen"})
    assert (r.status_code, r.json()) == (
        400,
        {"message": [f'Source branch "{mr.source_branch}" does not exist']},
    )
    assert api(u).get(url(p, 1)).json()["state"] == "closed"
    assert system_notes(db, mr) == ["closed"]


def test_reopening_is_refused_while_another_is_open_for_the_branches(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    api(u).put(url(p, 1), json={"state_event": "close"})
    make.merge_request(p, u, source_branch=mr.source_branch)
    r = api(u).put(url(p, 1), json={"state_event": "reopen"})
    assert (r.status_code, r.json()) == (
        409,
        {"message": ["Another open merge request already exists for this source branch: !2"]},
    )
    assert api(u).get(url(p, 1)).json()["state"] == "closed"
    assert system_notes(db, mr) == ["closed"]


def test_changing_the_target_branch(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    _branch(make, p, "stable")
    v = api(u).put(url(p, 1), json={"target_branch": "stable"}).json()
    assert v["target_branch"] == "stable"
    assert system_notes(db, mr) == ["changed target branch from `main` to `stable`"]
    r = api(u).put(url(p, 1), json={"target_branch": "nope"})
    assert (r.status_code, r.json()) == (400, {"message": ['Target branch "nope" does not exist']})
    assert api(u).get(url(p, 1)).json()["target_branch"] == "stable"
    assert system_notes(db, mr) == ["changed target branch from `main` to `stable`"]


def test_labels_add_labels_and_remove_labels(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    mr = make.merge_request(p, u)
    assert api(u).put(url(p, 1), json={"labels": "a,b"}).json()["labels"] == ["a", "b"]
    assert api(u).put(url(p, 1), json={"add_labels": "c"}).json()["labels"] == ["a", "b", "c"]
    assert api(u).put(url(p, 1), json={"remove_labels": "a"}).json()["labels"] == ["b", "c"]
    notes = system_notes(db, mr)
    assert notes == ['added ~"a" ~"b" labels', 'added ~"c" label', 'removed ~"a" label']


def test_people_milestone_and_lock(api, make, db):
    u, a, b = make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER, b: DEVELOPER})
    m = make.milestone(project=p, title="v1")
    mr = make.merge_request(p, u)
    v = (
        api(u)
        .put(
            url(p, 1),
            json={
                "assignee_ids": [a.id],
                "reviewer_ids": [b.id],
                "milestone_id": m.id,
                "discussion_locked": True,
            },
        )
        .json()
    )
    assert ([x["id"] for x in v["assignees"]], [x["id"] for x in v["reviewers"]]) == ([a.id], [b.id])
    assert (v["milestone"]["id"], v["discussion_locked"]) == (m.id, True)
    v = api(u).put(url(p, 1), json={"assignee_ids": [], "reviewer_ids": "", "milestone_id": None}).json()
    assert (v["assignees"], v["reviewers"], v["milestone"]) == ([], [], None)
    assert system_notes(db, mr) == [
        '''changed milestone to %"v1"''',
        f"assigned to @{a.username}",
        f"requested review from @{b.username}",
        "locked the discussion in this merge request",
        '''removed milestone %"v1"''',
        f"unassigned @{a.username}",
        f"removed review request for @{b.username}",
    ]


def test_planning_fields_of_a_non_admin_are_ignored(api, make):
    """The author may edit their merge request, but labels, people, milestone and the lock
    take admin_merge_request (Reporters and up), as GitLab silently drops them."""
    u, author = make.user(), make.user()
    p = make.project_with_repository(owner=u, visibility="public")
    make.merge_request(p, author)
    r = api(author).put(
        url(p, 1),
        json={"title": "Mine", "labels": "x", "assignee_ids": [author.id], "discussion_locked": True},
    )
    assert r.status_code == 200
    v = r.json()
    assert (v["title"], v["labels"], v["assignees"], v["discussion_locked"]) == ("Mine", [], [], None)


def test_who_may_change_a_merge_request(api, make, db):
    u, dev, reporter, guest = make.user(), make.user(), make.user(), make.user()
    p = make.project_with_repository(
        owner=u, visibility="public", members={dev: DEVELOPER, reporter: REPORTER, guest: GUEST}
    )
    mr = make.merge_request(p, u, title="Kept")
    assert api(guest).put(url(p, 1), json={"title": "x"}).status_code == 403
    assert api(reporter).put(url(p, 1), json={"title": "x"}).status_code == 403
    assert api(make.user()).put(url(p, 1), json={"title": "x"}).status_code == 403
    assert api(u).get(url(p, 1)).json()["title"] == "Kept"
    assert system_notes(db, mr) == []
    assert api(dev).put(url(p, 1), json={"title": "x"}).status_code == 200


def test_a_reporter_assigned_may_change_it(api, make):
    u, reporter = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={reporter: REPORTER})
    make.merge_request(p, u, assignees=[reporter])
    r = api(reporter).put(url(p, 1), json={"state_event": "close", "labels": "x"})
    assert (r.status_code, r.json()["state"], r.json()["labels"]) == (200, "closed", ["x"])


# ----------------------------------------------------------------------------- deleting


def test_deleting_is_for_owners(api, make, db):
    u, maintainer = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={maintainer: MAINTAINER})
    mr = make.merge_request(p, u, labels=[make.label(project=p)])
    mr_note(db, mr, u)
    assert api(maintainer).delete(url(p, 1)).status_code == 403
    assert api(u).delete(url(p, 1)).status_code == 204
    assert api(u).get(url(p, 1)).status_code == 404
    assert counted(db, MergeRequest) == 0
    assert counted(db, LabelLink) == 0
    assert db.scalar(select(func.count()).select_from(Note).where(Note.noteable_type == MERGE_REQUEST)) == 0
    from kiln.services import repositories

    repo = repositories.store(make.settings).open(p.id)
    assert repo.references.get("refs/merge-requests/1/head") is None


# ----------------------------------------------------------------------------- subscriptions, people


def test_subscribing_and_unsubscribing(api, make):
    u, other = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={other: DEVELOPER})
    make.merge_request(p, u)
    r = api(other).post(url(p, 1, "/subscribe"))
    assert (r.status_code, r.json()["subscribed"]) == (201, True)
    assert api(other).post(url(p, 1, "/subscribe")).status_code == 304
    r = api(other).post(url(p, 1, "/unsubscribe"))
    assert (r.status_code, r.json()["subscribed"]) == (201, False)
    assert api(other).post(url(p, 1, "/unsubscribe")).status_code == 304
    assert api(u).post(url(p, 1, "/subscribe")).status_code == 304  # the author is subscribed


def test_participants_are_the_author_assignees_reviewers_and_commenters(api, make, db):
    u, a, b, c = make.user(), make.user(), make.user(), make.user()
    p = make.project_with_repository(owner=u, members={a: DEVELOPER, b: DEVELOPER, c: DEVELOPER})
    mr = make.merge_request(p, u, assignees=[a], reviewers=[b])
    mr_note(db, mr, c)
    mr_note(db, mr, a)
    ids = [x["id"] for x in api(u).get(url(p, 1, "/participants")).json()]
    assert ids == [u.id, a.id, b.id, c.id]


def test_reviewers_with_their_state(api, make):
    u, b = make.user(), make.user()
    p = make.project_with_repository(owner=u, members={b: DEVELOPER})
    make.merge_request(p, u, reviewers=[b])
    [v] = api(u).get(url(p, 1, "/reviewers")).json()
    assert (v["user"]["id"], v["state"]) == (b.id, "unreviewed")
    assert v["created_at"].endswith("Z")


# ----------------------------------------------------------------------------- commits, changes, diffs


def test_commits_of_the_latest_version_newest_first(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    first = _branch(make, p, "feature", {"a.txt": "a\n"})
    second = make.commit(p, {"b.txt": "b\n"}, branch="feature", message="Second\n\nbody")
    make.merge_request(p, u, source_branch="feature")
    found = api(u).get(url(p, 1, "/commits")).json()
    assert [c["id"] for c in found] == [second, first]
    c = found[0]
    assert (c["short_id"], c["title"], c["message"]) == (second[:8], "Second", "Second\n\nbody")
    assert list(c) == COMMIT_KEYS
    r = api(u).get(url(p, 1, "/commits"), params={"per_page": 1})
    assert (len(r.json()), r.headers["X-Total"]) == (1, "2")


def test_changes_hold_the_files_of_the_latest_version(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature", {"new.txt": "hello\n"})
    make.merge_request(p, u, source_branch="feature")
    v = api(u).get(url(p, 1, "/changes")).json()
    assert set(v) >= MR_FIELDS | {"changes", "overflow"}
    [change] = v["changes"]
    assert (change["old_path"], change["new_path"], change["new_file"], change["deleted_file"]) == (
        "new.txt",
        "new.txt",
        True,
        False,
    )
    assert change["b_mode"] == "100644"
    assert change["diff"] == "@@ -0,0 +1 @@\n+hello\n"
    assert set(change) >= {"a_mode", "renamed_file", "generated_file"}
    assert v["overflow"] is False
    assert (
        api(u).get(url(p, 1, "/changes"), params={"access_raw_diffs": True}).json()["changes"][0]["diff"]
        == change["diff"]
    )


def test_diffs_are_paginated(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    _branch(make, p, "feature", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    make.merge_request(p, u, source_branch="feature")
    r = api(u).get(url(p, 1, "/diffs"), params={"per_page": 2})
    assert [d["new_path"] for d in r.json()] == ["a.txt", "b.txt"]
    assert r.headers["X-Total"] == "3"


def test_a_commit_s_merge_requests(api, make, db):
    u = make.user()
    p = make.project_with_repository(owner=u)
    head = _branch(make, p, "feature")
    make.merge_request(p, u, source_branch="feature")
    other = make.merge_request(p, u)
    db.execute(
        MergeRequest.__table__.update().where(MergeRequest.id == other.id).values(merge_commit_sha="a" * 40)
    )
    db.commit()
    found = api(u).get(f"/projects/{p.id}/repository/commits/{head}/merge_requests").json()
    assert [m["iid"] for m in found] == [1]
    found = api(u).get(f"/projects/{p.id}/repository/commits/{'a' * 40}/merge_requests").json()
    assert [m["iid"] for m in found] == [2]
    assert api(u).get(f"/projects/{p.id}/repository/commits/{'b' * 40}/merge_requests").json() == []


def test_related_and_closing_issues_are_empty_lists(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    assert api(u).get(url(p, 1, "/related_issues")).json() == []
    assert api(u).get(url(p, 1, "/closes_issues")).json() == []


def test_an_update_must_name_something(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    r = api(u).put(url(p, 1), json={})
    assert r.status_code == 400
    assert r.json()["error"].endswith("are missing, at least one parameter must be provided")
    assert r.json()["error"].startswith("assignee_id, assignee_ids, reviewer_ids, description")


def test_odd_input_to_a_real_merge_request_is_never_a_server_error(api, make):
    u = make.user()
    p = make.project_with_repository(owner=u)
    make.merge_request(p, u)
    odd = ["\x00", "x" * 5000, "-1", str(2**63), "１", "None", "[]", "../.."]
    for value in odd:
        for rest in ("", "/changes", "/diffs", "/commits", "/participants", "/reviewers"):
            r = api(u).get(
                url(p, 1, rest), params={"page": value, "per_page": value, "access_raw_diffs": value}
            )
            assert r.status_code < 500, (rest, value, r.text)
        r = api(u).get(
            url(p), params={"assignee_id": value, "milestone": value, "labels": value, "search": value}
        )
        assert r.status_code < 500, (value, r.text)
        r = api(u).get(
            url(p), params={"approved_by_ids[]": value, "source_branch": value, "not[author_id]": value}
        )
        assert r.status_code < 500, (value, r.text)
        for body in (
            {"title": value},
            {"target_branch": value},
            {"labels": value, "milestone_id": value},
            {"assignee_ids": value, "reviewer_ids": value},
        ):
            assert api(u).put(url(p, 1), json=body).status_code < 500, (body, value)
        r = api(u).post(url(p), json={"source_branch": value, "target_branch": value, "title": value})
        assert r.status_code < 500, (value, r.text)
        r = api(u).get(f"/projects/{p.id}/repository/commits/{quote(value, safe='')}/merge_requests")
        assert r.status_code < 500, (value, r.text)
