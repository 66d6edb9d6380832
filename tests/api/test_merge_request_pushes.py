"""What a push does to merge requests: a push to the source branch adds a version, the
"added N commits" note, resets approvals (when the project says so), aborts an automatic merge
and records an update event; a push that brings the source head into the target marks the
merge request merged; a deleted source branch is noted. And `git push -o merge_request.*`
opens or changes the branch's merge request."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from kiln.db import transaction
from kiln.models import Approval, Event, MergeRequest
from kiln.models.namespaces import DEVELOPER
from kiln.models.notes import MERGE_REQUEST
from kiln.services import merge_request_pushes
from kiln.services.repositories import store
from tests.api.test_merge_request_diffs import force_push, push_commit
from tests.factories.repositories import write_commit
from tests.merge_requests import fork_id, system_notes

ZERO = "0" * 40


def reloaded(db, mr) -> MergeRequest:
    db.expire_all()
    return db.get(MergeRequest, mr.id)


@pytest.fixture
def world(make):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    mr = make.merge_request(p, owner, source_branch="feature", files={"a.txt": "one\n"})
    return owner, p, mr


def test_a_push_to_the_source_notes_the_commits_it_added(api, world, db, drain):
    owner, p, mr = world
    first = push_commit(api, owner, p.id, "feature", {"b.txt": "b\n"}, message="Add <b>")
    old_head = reloaded(db, mr).head_sha
    drain()
    latest = reloaded(db, mr).latest_diff_id
    path = api(owner).get(f"/projects/{p.id}").json()["path_with_namespace"]
    assert system_notes(db, mr) == [
        f"added 1 commit\n\n<ul><li>{first[:8]} - Add &lt;b&gt;</li></ul>\n\n"
        f"[Compare with previous version](/{path}/-/merge_requests/{mr.iid}/diffs?diff_id={latest}"
        f"&start_sha={old_head})"
    ]


def test_a_push_of_two_commits_lists_both_oldest_first(api, world, db, settings, client, drain):
    owner, p, mr = world
    repo = store(settings).open(p.id)
    head = reloaded(db, mr).head_sha
    one = write_commit(repo, {"c.txt": "c\n"}, branch="scratch", start=head, message="One")
    two = write_commit(repo, {"d.txt": "d\n"}, branch="scratch", message="Two")
    repo.references["refs/heads/scratch"].delete()
    force_push(client, api, owner, p, head, two, "refs/heads/feature")
    drain()
    [note] = system_notes(db, mr)
    assert note.startswith(f"added 2 commits\n\n<ul><li>{one[:8]} - One</li><li>{two[:8]} - Two</li></ul>")


def test_a_push_records_an_update_event(api, world, db, drain):
    owner, p, mr = world
    push_commit(api, owner, p.id, "feature", {"b.txt": "b\n"})
    drain()
    found = db.scalars(
        select(Event).where(Event.target_type == MERGE_REQUEST, Event.target_id == mr.id).order_by(Event.id)
    ).all()
    assert [(e.action, e.data["hook_action"]) for e in found][-1] == ("updated", "update")


def test_a_push_resets_approvals_when_the_project_says_so(api, make, db, drain):
    owner = make.user()
    dev = make.user()
    p = make.project_with_repository(owner=owner, members={dev: DEVELOPER}, reset_approvals_on_push=True)
    mr = make.merge_request(p, owner, source_branch="feature")
    with transaction(db):
        db.add(Approval(merge_request_id=mr.id, user_id=dev.id))
    push_commit(api, owner, p.id, "feature", {"b.txt": "b\n"})
    drain()
    assert db.scalars(select(Approval).where(Approval.merge_request_id == mr.id)).all() == []


def test_approvals_stay_when_the_project_keeps_them(api, make, db, drain):
    owner = make.user()
    dev = make.user()
    p = make.project_with_repository(owner=owner, members={dev: DEVELOPER}, reset_approvals_on_push=False)
    mr = make.merge_request(p, owner, source_branch="feature")
    with transaction(db):
        db.add(Approval(merge_request_id=mr.id, user_id=dev.id))
    push_commit(api, owner, p.id, "feature", {"b.txt": "b\n"})
    drain()
    db.expire_all()
    assert db.scalars(select(Approval.user_id).where(Approval.merge_request_id == mr.id)).all() == [dev.id]


def test_a_push_aborts_the_automatic_merge(api, world, db, drain):
    owner, p, mr = world
    with transaction(db):
        row = db.get(MergeRequest, mr.id)
        row.merge_when_pipeline_succeeds = True
        row.merge_user_id = owner.id
    push_commit(api, owner, p.id, "feature", {"b.txt": "b\n"})
    drain()
    assert reloaded(db, mr).merge_when_pipeline_succeeds is False
    assert [n.split("\n")[0] for n in system_notes(db, mr)] == [
        "added 1 commit",
        "aborted the automatic merge because source branch was updated",
    ]


def test_deleting_the_source_branch_is_noted_and_keeps_the_merge_request_open(api, world, db, drain):
    owner, p, mr = world
    assert api(owner).delete(f"/projects/{p.id}/repository/branches/feature").status_code == 204
    drain()
    assert system_notes(db, mr) == ["deleted source branch `feature`"]
    assert reloaded(db, mr).state == "opened"


def test_a_push_bringing_the_source_into_the_target_marks_it_merged(api, world, db, settings, client, drain):
    owner, p, mr = world
    repo = store(settings).open(p.id)
    main = str(repo.references["refs/heads/main"].target)
    head = reloaded(db, mr).head_sha
    force_push(client, api, owner, p, main, head, "refs/heads/main")
    drain()
    row = reloaded(db, mr)
    assert (row.state, row.merge_commit_sha, row.merged_by_id) == ("merged", None, owner.id)
    assert row.merged_at is not None
    assert system_notes(db, mr) == ["merged"]


def test_a_push_to_the_target_leaves_other_merge_requests_open(api, world, db, drain):
    owner, p, mr = world
    push_commit(api, owner, p.id, "main", {"m.txt": "m\n"})
    drain()
    assert reloaded(db, mr).state == "opened"


def test_a_fork_push_refreshes_the_merge_request_in_the_upstream(api, make, db, drain):
    owner = make.user()
    forker = make.user()
    upstream = make.project_with_repository(owner=owner, visibility="public")
    fork = fork_id(api, forker, upstream)
    drain()
    mr = make.merge_request(upstream, forker, source_project=fork, source_branch="topic")
    sha = push_commit(api, forker, fork, "topic", {"f.txt": "fork\n"}, message="From the fork")
    drain()
    assert reloaded(db, mr).head_sha == sha
    assert system_notes(db, mr)[0].startswith(f"added 1 commit\n\n<ul><li>{sha[:8]} - From the fork</li>")


# ----------------------------------------------------------------------------- push options


def test_push_options_are_parsed_as_gitlab_reads_them():
    found = merge_request_pushes.parse(
        [
            "ci.skip",
            "merge_request.create",
            "merge_request.target=develop",
            'merge_request.title="A title"',
            "mr.label=one",
            "merge_request.label=two",
            "merge_request.draft",
            "merge_request.merge_when_pipeline_succeeds",
            "merge_request.assign=alice",
        ]
    )
    assert (found.create, found.target, found.title, found.label, found.draft, found.auto_merge) == (
        True,
        "develop",
        "A title",
        ["one", "two"],
        True,
        True,
    )
    assert found.assign == ["alice"]
    assert merge_request_pushes.parse(["ci.skip"]).any is False


def _new_branch_push(api, client, settings, owner, p, branch, options, message="Push option commit"):
    repo = store(settings).open(p.id)
    main = str(repo.references["refs/heads/main"].target)
    sha = write_commit(repo, {f"{branch}.txt": "x\n"}, branch="scratch", start=main, message=message)
    repo.references["refs/heads/scratch"].delete()
    force_push(client, api, owner, p, ZERO, sha, f"refs/heads/{branch}", options=options)
    return sha


def _open_for(api, owner, p, branch):
    r = api(owner).get(f"/projects/{p.id}/merge_requests", params={"source_branch": branch})
    assert r.status_code == 200, r.text
    return r.json()


def test_merge_request_create_opens_one_for_the_pushed_branch(api, make, settings, client, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    label = make.label(project=p, title="bug")
    sha = _new_branch_push(
        api,
        client,
        settings,
        owner,
        p,
        "topic",
        (
            "merge_request.create",
            "merge_request.description=Made by a push",
            f"merge_request.label={label.title}",
            f"merge_request.assign={owner.username}",
            "merge_request.remove_source_branch",
        ),
    )
    drain()
    [mr] = _open_for(api, owner, p, "topic")
    assert (mr["title"], mr["description"], mr["target_branch"], mr["sha"]) == (
        "Push option commit",
        "Made by a push",
        "main",
        sha,
    )
    assert (mr["labels"], [a["username"] for a in mr["assignees"]]) == (["bug"], [owner.username])
    assert mr["force_remove_source_branch"] is True


def test_merge_request_target_title_and_draft_apply_when_creating(api, make, settings, client, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    make.branch(p, "develop", str(store(settings).open(p.id).references["refs/heads/main"].target))
    _new_branch_push(
        api,
        client,
        settings,
        owner,
        p,
        "topic",
        (
            "merge_request.create",
            "merge_request.target=develop",
            "merge_request.title=Pushed",
            "merge_request.draft",
        ),
    )
    drain()
    [mr] = _open_for(api, owner, p, "topic")
    assert (mr["title"], mr["target_branch"], mr["draft"]) == ("Draft: Pushed", "develop", True)


def test_without_create_no_merge_request_is_opened(api, make, settings, client, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    _new_branch_push(api, client, settings, owner, p, "topic", ("merge_request.title=Nothing",))
    drain()
    assert _open_for(api, owner, p, "topic") == []


def test_an_open_merge_request_is_updated_not_duplicated(api, world, db, settings, client, drain):
    owner, p, mr = world
    repo = store(settings).open(p.id)
    head = reloaded(db, mr).head_sha
    sha = write_commit(repo, {"n.txt": "n\n"}, branch="scratch", start=head, message="More")
    repo.references["refs/heads/scratch"].delete()
    force_push(
        client,
        api,
        owner,
        p,
        head,
        sha,
        "refs/heads/feature",
        options=("merge_request.create", "merge_request.title=Renamed", "merge_request.label=new"),
    )
    drain()
    [found] = _open_for(api, owner, p, "feature")
    assert (found["iid"], found["title"], found["labels"], found["sha"]) == (mr.iid, "Renamed", ["new"], sha)


def test_push_options_of_a_user_who_may_not_open_merge_requests_do_nothing(
    api, make, settings, client, drain
):
    owner = make.user()
    p = make.project_with_repository(owner=owner, merge_requests_access_level="disabled")
    _new_branch_push(api, client, settings, owner, p, "topic", ("merge_request.create",))
    drain()
    assert db_count_merge_requests(make, p) == 0


def db_count_merge_requests(make, p) -> int:
    return len(make.db.scalars(select(MergeRequest).where(MergeRequest.project_id == p.id)).all())


def test_merge_when_pipeline_succeeds_is_set_while_the_pipeline_runs(api, make, db, settings, client, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    make.commit(p, {".gitlab-ci.yml": "build:\n  script: [echo]\n"}, message="CI")
    _new_branch_push(
        api,
        client,
        settings,
        owner,
        p,
        "topic",
        ("merge_request.create", "merge_request.merge_when_pipeline_succeeds"),
    )
    drain()
    [mr] = _open_for(api, owner, p, "topic")
    assert mr["merge_when_pipeline_succeeds"] is True


def test_merge_when_pipeline_succeeds_is_set_before_any_pipeline_exists(api, make, settings, client, drain):
    # GitLab's push option sets it at once; the merge waits for a pipeline that succeeds.
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    _new_branch_push(
        api, client, settings, owner, p, "topic", ("merge_request.create", "merge_request.auto_merge")
    )
    drain()
    [mr] = _open_for(api, owner, p, "topic")
    assert (mr["state"], mr["merge_when_pipeline_succeeds"]) == ("opened", True)


def test_pushing_a_deleted_source_branch_again_is_noted_as_restored(api, world, db, settings, client, drain):
    owner, p, mr = world
    head = reloaded(db, mr).head_sha
    assert api(owner).delete(f"/projects/{p.id}/repository/branches/feature").status_code == 204
    drain()
    force_push(client, api, owner, p, ZERO, head, "refs/heads/feature")
    drain()
    assert system_notes(db, mr) == ["deleted source branch `feature`", "restored source branch `feature`"]


def test_an_empty_merge_request_is_not_merged_by_a_push_to_its_target(api, make, db, drain):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    main = str(store(make.settings).open(p.id).references["refs/heads/main"].target)
    make.branch(p, "empty", main)
    mr = make.merge_request(p, owner, source_branch="empty")
    push_commit(api, owner, p.id, "main", {"m.txt": "m\n"})
    drain()
    assert reloaded(db, mr).state == "opened"
