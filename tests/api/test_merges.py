"""Merging merge requests: each merge method with and without conflicts, squash, removing
the source branch, GitLab's refusals (401/405/406/409), protected target branches, the merge
ref, rebase, racing merges, merge when the pipeline succeeds with a real pipeline, and the
asynchronous mergeability check."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2
import pytest
from sqlalchemy import event, select, update

from kiln.db import transaction
from kiln.models import Event, MergeRequest, Note, ProtectedBranch, ResourceStateEvent
from kiln.models.base import utcnow
from kiln.models.ci import PENDING, RUNNING, SUCCESS
from kiln.models.jobs import Job
from kiln.models.namespaces import DEVELOPER, GUEST, REPORTER
from kiln.models.notes import MERGE_REQUEST
from kiln.services import merges, pipeline_processing, repositories
from tests.api.test_merge_request_diffs import push_commit
from tests.merge_requests import owned, system_notes
from tests.repositories import fsck_errors
from tests.statements import count
from tests.threads import STUCK_S, Blocked


def url(p: Any, mr: MergeRequest, rest: str = "/merge") -> str:
    return f"/projects/{p.id}/merge_requests/{mr.iid}{rest}"


def repo_of(settings: Any, p: Any) -> pygit2.Repository:
    return repositories.store(settings).open(p.id)


def tip(settings: Any, p: Any, branch: str) -> str | None:
    ref = repo_of(settings, p).references.get(f"refs/heads/{branch}")
    return str(ref.target) if ref is not None else None


def diverge(make: Any, p: Any, files: dict[str, str] | None = None) -> str:
    """A commit on main after the merge request left it."""
    return make.commit(p, files or {"elsewhere.txt": "main moved\n"}, branch="main", message="Main moves")


def assert_sound(settings: Any, p: Any) -> None:
    assert fsck_errors(Path(repo_of(settings, p).path)) == ""


# ----------------------------------------------------------------------------- merge methods


def test_merge_makes_gitlabs_merge_commit(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="feature", files={"f.txt": "f\n"}, title="Add f")
    before = diverge(make, p)
    head = mr.head_sha
    r = api(owner).put(url(p, mr))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["state"] == "merged"
    assert body["merged_by"]["id"] == owner.id
    assert body["merged_at"] is not None
    assert body["squash_commit_sha"] is None
    merged = tip(settings, p, "main")
    assert body["merge_commit_sha"] == merged
    commit = repo_of(settings, p)[merged].peel(pygit2.Commit)
    assert [str(x) for x in commit.parent_ids] == [before, head]
    path = api(owner).get(f"/projects/{p.id}").json()["path_with_namespace"]
    assert (
        commit.message == f"Merge branch 'feature' into 'main'\n\nAdd f\n\nSee merge request {path}!{mr.iid}"
    )
    assert commit.committer.email == owner.row.email
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.merged_by_id, row.merge_commit_sha, row.merge_status) == (
        "merged",
        owner.id,
        merged,
        "can_be_merged",
    )
    assert system_notes(db, mr) == ["merged"]
    states = db.scalars(
        select(ResourceStateEvent.state).where(
            ResourceStateEvent.target_type == MERGE_REQUEST, ResourceStateEvent.target_id == mr.id
        )
    ).all()
    assert states == ["merged"]
    actions = db.scalars(
        select(Event.action).where(Event.target_type == MERGE_REQUEST, Event.target_id == mr.id)
    ).all()
    assert actions == ["merged"]
    pushes = db.scalars(select(Event.data).where(Event.project_id == p.id, Event.action == "pushed")).all()
    # the first: the factory's initial commit on main
    assert [(d["ref"], d["before"], d["after"]) for d in pushes[1:]] == [("refs/heads/main", before, merged)]
    assert_sound(settings, p)


def test_merge_commit_message_is_kept_byte_for_byte(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    message = "Custom  merge\r\n\n  with spaces  \n\n"
    r = api(owner).put(url(p, mr), json={"merge_commit_message": message})
    assert r.status_code == 200, r.text
    assert repo_of(settings, p)[tip(settings, p, "main")].peel(pygit2.Commit).raw_message == message.encode()


def test_merge_with_conflicts_is_406_and_changes_nothing(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, files={"README.md": "mine\n"})
    before = diverge(make, p, {"README.md": "theirs\n"})
    lock = mr.lock_version
    r = api(owner).put(url(p, mr))
    assert (r.status_code, r.json()) == (406, {"message": "Branch cannot be merged"})
    assert tip(settings, p, "main") == before
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.lock_version, row.merge_commit_sha) == ("opened", lock, None)
    assert system_notes(db, mr) == []


@pytest.mark.parametrize("method", ["rebase_merge", "ff"])
def test_fast_forward_methods_refuse_a_diverged_source(api, make, settings, method):
    owner, p = owned(make, merge_method=method)
    mr = make.merge_request(p, owner)
    before = diverge(make, p)
    r = api(owner).put(url(p, mr))
    assert (r.status_code, r.json()) == (406, {"message": "Branch cannot be merged"})
    assert tip(settings, p, "main") == before


def test_rebase_merge_makes_a_merge_commit_when_ff_is_possible(api, make, settings):
    owner, p = owned(make, merge_method="rebase_merge")
    start = tip(settings, p, "main")
    mr = make.merge_request(p, owner)
    r = api(owner).put(url(p, mr))
    assert r.status_code == 200, r.text
    commit = repo_of(settings, p)[tip(settings, p, "main")].peel(pygit2.Commit)
    assert [str(x) for x in commit.parent_ids] == [start, mr.head_sha]
    assert r.json()["merge_commit_sha"] == str(commit.id)


def test_ff_moves_the_target_to_the_source_head(api, make, settings):
    owner, p = owned(make, merge_method="ff")
    mr = make.merge_request(p, owner)
    r = api(owner).put(url(p, mr))
    assert r.status_code == 200, r.text
    assert tip(settings, p, "main") == mr.head_sha
    # A fast-forward makes no merge commit: GitLab leaves merge_commit_sha empty and names the
    # head as the merged commit.
    assert (r.json()["merge_commit_sha"], r.json()["merged_commit_sha"]) == (None, mr.head_sha)
    assert_sound(settings, p)


# ----------------------------------------------------------------------------- squash


def two_commit_request(make: Any, p: Any, owner: Any, **fields: Any) -> MergeRequest:
    make.branch(p, "topic", tip_of(make, p))
    make.commit(p, {"one.txt": "1\n"}, branch="topic", message="One")
    make.commit(p, {"two.txt": "2\n"}, branch="topic", message="Two")
    return make.merge_request(p, owner, source_branch="topic", title="Both files", **fields)


def tip_of(make: Any, p: Any) -> str:
    return str(repositories.store(make.settings).open(p.id).references["refs/heads/main"].target)


@pytest.mark.parametrize("method", ["merge", "rebase_merge", "ff"])
def test_squash_makes_one_commit_with_each_method(api, make, settings, db, method):
    owner, p = owned(make, merge_method=method)
    author = make.user()
    make.member(p, author, DEVELOPER)
    start = tip(settings, p, "main")
    mr = two_commit_request(make, p, author)
    r = api(owner).put(url(p, mr), json={"squash": True, "squash_commit_message": "Squashed both"})
    assert r.status_code == 200, r.text
    body = r.json()
    repo = repo_of(settings, p)
    squashed = repo[body["squash_commit_sha"]].peel(pygit2.Commit)
    assert squashed.message == "Squashed both"
    assert [str(x) for x in squashed.parent_ids] == [start]
    assert squashed.author.email == author.row.email  # the merge request's author, as GitLab
    assert squashed.tree_id == repo[mr.head_sha].peel(pygit2.Commit).tree_id
    main = repo[tip(settings, p, "main")].peel(pygit2.Commit)
    if method == "ff":
        assert main.id == squashed.id
    else:
        assert [str(x) for x in main.parent_ids] == [start, str(squashed.id)]
    assert body["squash"] is True
    assert_sound(settings, p)


def test_squash_message_defaults_to_the_title(api, make, settings):
    owner, p = owned(make)
    mr = two_commit_request(make, p, owner, squash=True)
    r = api(owner).put(url(p, mr))
    assert r.status_code == 200, r.text
    assert repo_of(settings, p)[r.json()["squash_commit_sha"]].peel(pygit2.Commit).message == "Both files"


# ----------------------------------------------------------------------------- removing the source branch


@pytest.mark.parametrize(
    ("own", "asked", "removed"), [(False, True, True), (True, False, False), (True, None, True)]
)
def test_should_remove_source_branch_overrides_the_requests_own(api, make, settings, own, asked, removed):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="gone-or-not", force_remove_source_branch=own)
    body = {} if asked is None else {"should_remove_source_branch": asked}
    r = api(owner).put(url(p, mr), json=body)
    assert r.status_code == 200, r.text
    assert (tip(settings, p, "gone-or-not") is None) == removed


# ----------------------------------------------------------------------------- refusals


def test_who_may_not_merge_gets_401(api, make, settings):
    owner, p = owned(make)
    dev, reporter = make.user(), make.user()
    make.member(p, dev, DEVELOPER)
    make.member(p, reporter, REPORTER)
    mr = make.merge_request(p, owner)
    # main is protected as the instance protects default branches: Maintainers merge.
    for who in (dev, reporter):
        r = api(who).put(url(p, mr))
        assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


@pytest.mark.parametrize(
    ("level", "dev_may", "owner_may"), [(30, True, True), (40, False, True), (0, False, False)]
)
def test_protected_target_merge_levels(api, make, settings, db, level, dev_may, owner_may):
    owner, p = owned(make)
    dev = make.user()
    make.member(p, dev, DEVELOPER)
    with transaction(db):
        rule = db.scalar(select(ProtectedBranch).where(ProtectedBranch.project_id == p.id))
        rule.merge_access_level = level
    first = make.merge_request(p, owner)
    r = api(dev).put(url(p, first))
    assert r.status_code == (200 if dev_may else 401)
    second = make.merge_request(p, owner)
    r = api(owner).put(url(p, second))
    assert r.status_code == (200 if owner_may else 401)


def test_an_unprotected_target_lets_developers_merge(api, make, settings):
    owner, p = owned(make)
    dev = make.user()
    make.member(p, dev, DEVELOPER)
    make.branch(p, "dev-target", tip(settings, p, "main"))
    mr = make.merge_request(p, owner, target_branch="dev-target")
    assert api(dev).put(url(p, mr)).status_code == 200


def test_a_closed_request_is_405(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, state="closed")
    r = api(owner).put(url(p, mr))
    assert (r.status_code, r.json()) == (405, {"message": "405 Method Not Allowed"})


def test_a_merged_request_is_405(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    assert api(owner).put(url(p, mr)).status_code == 200
    assert api(owner).put(url(p, mr)).status_code == 405


def test_a_draft_is_405(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, title="Draft: not yet")
    assert api(owner).put(url(p, mr)).status_code == 405


def test_unresolved_discussions_are_405_when_the_project_requires_them_resolved(api, make, settings, db):
    owner, p = owned(make, only_allow_merge_if_all_discussions_are_resolved=True)
    mr = make.merge_request(p, owner)
    with transaction(db):
        note = Note(
            noteable_type=MERGE_REQUEST,
            noteable_id=mr.id,
            project_id=p.id,
            author_id=owner.id,
            body="please fix",
            type="DiscussionNote",
            discussion_id="a" * 40,
            resolvable=True,
        )
        db.add(note)
    assert api(owner).put(url(p, mr)).status_code == 405
    from datetime import UTC, datetime

    with transaction(db):
        note.resolved_at = datetime.now(UTC)
        note.resolved_by_id = owner.id
    assert api(owner).put(url(p, mr)).status_code == 200


def test_pipeline_must_succeed(api, make, settings, db):
    owner, p = owned(make, only_allow_merge_if_pipeline_succeeds=True)
    mr = make.merge_request(p, owner, source_branch="ci")
    assert api(owner).put(url(p, mr)).status_code == 405  # no pipeline at all
    pipeline = make.pipeline(p, ref="ci", sha=mr.head_sha, jobs=[{"name": "test"}])
    assert pipeline.status == PENDING
    assert api(owner).put(url(p, mr)).status_code == 405
    finish(db, pipeline, SUCCESS)
    assert api(owner).put(url(p, mr)).status_code == 200


def test_a_skipped_pipeline_counts_when_the_project_allows_it(api, make, settings, db):
    owner, p = owned(make, only_allow_merge_if_pipeline_succeeds=True, allow_merge_on_skipped_pipeline=True)
    mr = make.merge_request(p, owner, source_branch="ci")
    make.pipeline(p, ref="ci", sha=mr.head_sha, status="skipped", process=False)
    assert api(owner).put(url(p, mr)).status_code == 200


def test_a_sha_other_than_the_head_is_409(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    other = tip(settings, p, "main")
    r = api(owner).put(url(p, mr), json={"sha": other})
    assert (r.status_code, r.json()) == (
        409,
        {"message": f"SHA does not match HEAD of source branch: {mr.head_sha}"},
    )
    assert api(owner).put(url(p, mr), json={"sha": mr.head_sha}).status_code == 200


def test_missing_merge_request_is_404(api, make, settings):
    owner, p = owned(make)
    r = api(owner).put(f"/projects/{p.id}/merge_requests/999/merge")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})


def test_anonymous_merge_is_401(api, make, settings):
    owner, p = owned(make, visibility="public")
    mr = make.merge_request(p, owner)
    assert api().put(url(p, mr)).status_code == 401


# ----------------------------------------------------------------------------- racing merges


@pytest.mark.committing
def test_racing_merges_of_one_request_one_wins(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    before = tip(settings, p, "main")
    results: list[int] = []
    go = threading.Barrier(4)

    def merge_it(message: str) -> None:
        go.wait()
        results.append(api(owner).put(url(p, mr), json={"merge_commit_message": message}).status_code)

    threads = [threading.Thread(target=merge_it, args=(f"m{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results)[0] == 200
    assert results.count(200) == 1
    assert set(results) - {200} <= {405, 409}
    main = repo_of(settings, p)[tip(settings, p, "main")].peel(pygit2.Commit)
    assert [str(x) for x in main.parent_ids] == [before, mr.head_sha]
    db.expire_all()
    assert db.get(MergeRequest, mr.id).merge_commit_sha == str(main.id)
    assert_sound(settings, p)


# ----------------------------------------------------------------------------- merge ref


def test_merge_ref_is_the_would_be_merge(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    before = diverge(make, p)
    r = api(owner).get(url(p, mr, "/merge_ref"))
    assert r.status_code == 200, r.text
    sha = r.json()["commit_id"]
    repo = repo_of(settings, p)
    assert str(repo.references[f"refs/merge-requests/{mr.iid}/merge"].target) == sha
    assert [str(x) for x in repo[sha].peel(pygit2.Commit).parent_ids] == [before, mr.head_sha]
    assert api(owner).get(url(p, mr, "/merge_ref")).json() == {"commit_id": sha}  # kept while nothing moved
    assert tip(settings, p, "main") == before
    assert_sound(settings, p)


def test_merge_ref_of_a_conflict_is_400(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, files={"README.md": "mine\n"})
    diverge(make, p, {"README.md": "theirs\n"})
    r = api(owner).get(url(p, mr, "/merge_ref"))
    assert (r.status_code, r.json()) == (400, {"message": "Merge request is not mergeable"})


# ----------------------------------------------------------------------------- rebase


def test_rebase_replays_the_source_onto_the_target(api, make, settings, db, drain):
    owner, p = owned(make, merge_method="ff")
    mr = make.merge_request(p, owner, source_branch="behind")
    old_head = mr.head_sha
    main = diverge(make, p)
    r = api(owner).put(url(p, mr, "/rebase"))
    assert (r.status_code, r.json()) == (202, {"rebase_in_progress": False})
    new = tip(settings, p, "behind")
    repo = repo_of(settings, p)
    commit = repo[new].peel(pygit2.Commit)
    assert new != old_head
    assert [str(x) for x in commit.parent_ids] == [main]
    assert commit.message == repo[old_head].peel(pygit2.Commit).message
    drain()  # the push's refresh records the new version, as after any push
    db.expire_all()
    assert db.get(MergeRequest, mr.id).head_sha == new
    assert api(owner).put(url(p, mr)).status_code == 200  # now fast-forward is possible
    assert tip(settings, p, "main") == new
    assert_sound(settings, p)


def test_rebase_conflict_is_kept_as_merge_error(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="clash", files={"README.md": "mine\n"})
    diverge(make, p, {"README.md": "theirs\n"})
    head = tip(settings, p, "clash")
    r = api(owner).put(url(p, mr, "/rebase"))
    assert r.status_code == 202
    assert tip(settings, p, "clash") == head
    db.expire_all()
    assert db.get(MergeRequest, mr.id).merge_error.startswith("Rebase failed")


def test_rebase_needs_push_access_to_the_source(api, make, settings):
    owner, p = owned(make)
    reporter = make.user()
    make.member(p, reporter, REPORTER)
    mr = make.merge_request(p, owner)
    r = api(reporter).put(url(p, mr, "/rebase"))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


def test_rebase_with_skip_ci_pushes_with_ci_skip(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="skip")
    diverge(make, p)
    assert api(owner).put(url(p, mr, "/rebase"), json={"skip_ci": True}).status_code == 202
    pushes = db.scalars(select(Event.data).where(Event.project_id == p.id, Event.action == "pushed")).all()
    # the first: the factory's initial commit on main
    assert [(d["ref"], d["push_options"]) for d in pushes[1:]] == [("refs/heads/skip", ["ci.skip"])]


# ----------------------------------------------------------------------------- merge when the pipeline succeeds


def finish(db: Any, pipeline: Any, status: str) -> None:
    """Every job of the pipeline to `status`, through pipeline processing (the real path)."""
    with transaction(db):
        for job in pipeline_processing._latest(db, pipeline.id):
            if status == SUCCESS and job.status == PENDING:
                pipeline_processing.transition(db, job, RUNNING)
            pipeline_processing.transition(db, job, status)
        pipeline_processing.process(db, pipeline.id)


def test_merge_when_pipeline_succeeds_merges_once_it_does(api, make, settings, db, drain):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="auto", force_remove_source_branch=True)
    pipeline = make.pipeline(p, ref="auto", sha=mr.head_sha, jobs=[{"name": "test"}])
    r = api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True, "squash": True})
    assert r.status_code == 200, r.text
    assert (r.json()["state"], r.json()["merge_when_pipeline_succeeds"]) == ("opened", True)
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert row.merge_user_id == owner.id
    assert row.merge_params["sha"] == mr.head_sha
    assert row.merge_params["squash"] is True
    before = tip(settings, p, "main")
    finish(db, pipeline, SUCCESS)
    drain()
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert row.state == "merged"
    assert row.merged_by_id == owner.id
    main = repo_of(settings, p)[tip(settings, p, "main")].peel(pygit2.Commit)
    assert [str(x) for x in main.parent_ids] == [before, row.squash_commit_sha]
    assert row.merge_commit_sha == str(main.id)
    assert tip(settings, p, "auto") is None
    notes = system_notes(db, mr)
    # The merge commit's message names the merge request ("See merge request …!1").
    assert [n.split(" when ")[0] for n in notes] == [
        "enabled an automatic merge",
        "merged",
        f"mentioned in commit {row.merge_commit_sha}",
    ]
    assert_sound(settings, p)


def test_a_failed_pipeline_leaves_the_automatic_merge_set(api, make, settings, db, drain):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="red")
    pipeline = make.pipeline(p, ref="red", sha=mr.head_sha, jobs=[{"name": "test"}])
    assert api(owner).put(url(p, mr), json={"auto_merge": True}).status_code == 200
    finish(db, pipeline, "failed")
    drain()
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.merge_when_pipeline_succeeds) == ("opened", True)


def test_merge_when_pipeline_succeeds_without_a_pipeline_is_405(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    r = api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True})
    assert (r.status_code, r.json()) == (405, {"message": "405 Method Not Allowed"})


def test_merge_when_pipeline_succeeds_with_a_green_pipeline_merges_now(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="green")
    pipeline = make.pipeline(p, ref="green", sha=mr.head_sha, jobs=[{"name": "test"}])
    finish(db, pipeline, SUCCESS)
    r = api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True})
    assert (r.status_code, r.json()["state"]) == (200, "merged")


def test_cancel_merge_when_pipeline_succeeds(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="cancel")
    make.pipeline(p, ref="cancel", sha=mr.head_sha, jobs=[{"name": "test"}])
    cancel = url(p, mr, "/cancel_merge_when_pipeline_succeeds")
    r = api(owner).post(cancel)
    assert (r.status_code, r.json()) == (406, {"message": "406 Not Acceptable"})
    assert api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True}).status_code == 200
    r = api(owner).post(cancel)
    assert (r.status_code, r.json()) == (201, {"status": "success"})
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.merge_when_pipeline_succeeds, row.merge_user_id, row.merge_params) == (False, None, {})
    assert system_notes(db, mr)[-1] == "canceled the automatic merge"
    outsider = make.user()
    make.member(p, outsider, REPORTER)
    assert api(outsider).post(cancel).status_code == 401


def test_cancel_on_a_merged_request_is_405(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    api(owner).put(url(p, mr))
    assert api(owner).post(url(p, mr, "/cancel_merge_when_pipeline_succeeds")).status_code == 405


def test_cancel_auto_merge_for_a_push(api, make, settings, db):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="pushed")
    make.pipeline(p, ref="pushed", sha=mr.head_sha, jobs=[{"name": "test"}])
    api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True})
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    with transaction(db):
        assert merges.cancel_auto_merge(db, row, "the source branch was updated") is True
    assert system_notes(db, mr)[-1] == "aborted the automatic merge because the source branch was updated"
    with transaction(db):
        assert merges.cancel_auto_merge(db, row, "again") is False


# ----------------------------------------------------------------------------- the mergeability check


def test_the_check_job_finds_conflicts(api, make, settings, db, drain):
    owner, p = owned(make)
    good = make.merge_request(p, owner)
    bad = make.merge_request(p, owner, files={"README.md": "mine\n"})
    diverge(make, p, {"README.md": "theirs\n"})
    with transaction(db):
        merges.recheck_target(db, p.id, "main")
    db.expire_all()
    assert db.get(MergeRequest, good.id).merge_status == "unchecked"
    drain()
    db.expire_all()
    assert db.get(MergeRequest, good.id).merge_status == "can_be_merged"
    assert db.get(MergeRequest, bad.id).merge_status == "cannot_be_merged"


def test_a_merge_rechecks_the_other_requests_of_its_target(api, make, settings, db, drain):
    owner, p = owned(make)
    first = make.merge_request(p, owner, files={"README.md": "first\n"})
    second = make.merge_request(p, owner, files={"README.md": "second\n"})
    with transaction(db):
        merges.enqueue_check(db, db.get(MergeRequest, second.id))
    drain()
    db.expire_all()
    assert db.get(MergeRequest, second.id).merge_status == "can_be_merged"
    assert api(owner).put(url(p, first)).status_code == 200
    drain()
    db.expire_all()
    assert db.get(MergeRequest, second.id).merge_status == "cannot_be_merged"


# ----------------------------------------------------------------------------- seen by git


def test_a_merge_is_seen_by_git_clone(api, make, settings, tmp_path):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, files={"merged.txt": "hello\n"})
    merged = api(owner).put(url(p, mr)).json()["merge_commit_sha"]
    work = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", repo_of(settings, p).path, str(work)], check=True)
    head = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    assert head.stdout.strip() == merged
    assert (work / "merged.txt").read_text() == "hello\n"
    check = subprocess.run(
        ["git", "-C", str(work), "fsck", "--strict"], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr


# ----------------------------------------------------------------------------- forks and odd input


def test_a_merge_request_from_a_fork_merges_and_its_branch_is_removed_by_its_owner(api, make, settings, db):
    upstream_owner, forker = make.user(), make.user()
    upstream = make.project_with_repository(owner=upstream_owner, visibility="public")
    r = api(forker).post(f"/projects/{upstream.id}/fork", json={"path": "fork-m", "name": "fork-m"})
    assert r.status_code == 201, r.text
    fork_id = r.json()["id"]
    from kiln.models import Project

    fork = db.get(Project, fork_id)
    mr = make.merge_request(
        upstream, forker, source_project=fork, source_branch="fix", files={"fix.txt": "x\n"}
    )
    # The upstream's owner may not push to the fork: the branch stays.
    r = api(upstream_owner).put(url(upstream, mr), json={"should_remove_source_branch": True})
    assert r.status_code == 200, r.text
    assert repo_of(settings, upstream)[tip(settings, upstream, "main")].peel(pygit2.Commit).parent_ids[1] == (
        pygit2.Oid(hex=mr.head_sha)
    )
    assert tip(settings, fork, "fix") == mr.head_sha
    assert_sound(settings, upstream)


@pytest.mark.parametrize("message", ["with\\u0000nul", "\\udcff"])
def test_a_message_git_cannot_hold_is_400(api, make, settings, message):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    before = tip(settings, p, "main")
    raw = ('{"merge_commit_message": "' + message + '"}').encode()
    r = api(owner).put(url(p, mr), content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert tip(settings, p, "main") == before


def test_odd_parameters_never_fail(api, make, settings):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    for body in (
        {"sha": "x" * 10_000},
        {"squash": "maybe"},
        {"merge_when_pipeline_succeeds": [1]},
        {"sha": ""},
    ):
        assert api(owner).put(url(p, mr), json=body).status_code < 500
    assert api(owner).put(f"/projects/{p.id}/merge_requests/99999999999999999999/merge").status_code == 400
    assert api(owner).get(f"/projects/{p.id}/merge_requests/abc/merge_ref").status_code == 400


def test_merge_ref_reads_a_constant_number_of_statements(api, make, settings, runtime):
    owner, p = owned(make)
    small = make.merge_request(p, owner)
    two_commit_request(make, p, owner)
    big = make.merge_request(p, owner, source_branch="topic")
    few = count(runtime, lambda: api(owner).get(url(p, small, "/merge_ref")))
    assert count(runtime, lambda: api(owner).get(url(p, big, "/merge_ref"))) == few
    assert few <= 8


def test_an_automatic_merge_that_cannot_merge_any_more_is_aborted(api, make, settings, db, drain):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="late-clash", files={"README.md": "mine\n"})
    pipeline = make.pipeline(p, ref="late-clash", sha=mr.head_sha, jobs=[{"name": "test"}])
    assert api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True}).status_code == 200
    before = diverge(make, p, {"README.md": "theirs\n"})
    finish(db, pipeline, SUCCESS)
    drain()
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.merge_when_pipeline_succeeds) == ("opened", False)
    assert (
        system_notes(db, mr)[-1] == "aborted the automatic merge because the merge request cannot be merged"
    )
    assert tip(settings, p, "main") == before


def test_enable_auto_merge_without_a_pipeline_yet_merges_when_one_succeeds(api, make, settings, db, drain):
    """The push option's way: set first, the push's pipeline comes after."""
    from kiln.auth.actor import Actor
    from kiln.queries import users as user_finder

    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="pushed-option")
    with transaction(db):
        row = db.get(MergeRequest, mr.id)
        merges.enable_auto_merge(
            db, Actor(user=user_finder.row_by_id(db, owner.id), via="session", scopes=None), row
        )
    pipeline = make.pipeline(p, ref="pushed-option", sha=mr.head_sha, jobs=[{"name": "test"}])
    finish(db, pipeline, SUCCESS)
    drain()
    db.expire_all()
    assert db.get(MergeRequest, mr.id).state == "merged"


# ----------------------------------------------------------------------------- what races a merge


@contextmanager
def merger_held_at_its_checks(runtime: Any, blocked: Blocked) -> Iterator[None]:
    """Holds the first read of a merge request version from now on (the merge's checks,
    before it writes anything; the test does nothing until it is held) until `blocked` is
    released: the race's worst interleaving, made certain."""

    def hold(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM merge_request_diffs" in statement and not blocked.started.is_set():
            blocked.block()

    event.listen(runtime.engine, "before_cursor_execute", hold)
    try:
        yield
    finally:
        event.remove(runtime.engine, "before_cursor_execute", hold)


def merge_in_thread(api: Any, who: Any, path: str, results: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(api(who).put(path)), name="merger", daemon=True)
    thread.start()
    return thread


@pytest.mark.committing
def test_a_retarget_during_a_merge_is_not_merged_unchecked(api, make, settings, db, runtime):
    """A Developer may merge into an unprotected branch; retargeted to the Maintainers-only
    main while the merge is between its checks and its write, nothing is merged."""
    owner, p = owned(make)
    dev = make.user()
    make.member(p, dev, DEVELOPER)
    make.branch(p, "open-target", tip(settings, p, "main"))
    mr = make.merge_request(p, owner, target_branch="open-target")
    before = {b: tip(settings, p, b) for b in ("main", "open-target")}
    blocked, results = Blocked(), []
    with merger_held_at_its_checks(runtime, blocked):
        thread = merge_in_thread(api, dev, url(p, mr), results)
        assert blocked.started.wait(STUCK_S)
        r = api(owner).put(url(p, mr, ""), json={"target_branch": "main"})
        assert r.status_code == 200, r.text
        blocked.release.set()
        thread.join(STUCK_S)
    [answer] = results
    assert answer.status_code in (401, 409), answer.text
    assert {b: tip(settings, p, b) for b in ("main", "open-target")} == before
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.target_branch, row.merge_commit_sha) == ("opened", "main", None)
    assert_sound(settings, p)


@pytest.mark.committing
def test_a_push_to_the_source_during_a_merge_is_not_merged_unchecked(api, make, settings, db, runtime, drain):
    """The source gets a new head (its refresh recorded) while the merge is between its
    checks and its write: the merge is refused, not made of what nobody checked."""
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="moving")
    before = tip(settings, p, "main")
    blocked, results = Blocked(), []
    with merger_held_at_its_checks(runtime, blocked):
        thread = merge_in_thread(api, owner, url(p, mr), results)
        assert blocked.started.wait(STUCK_S)
        pushed = push_commit(api, owner, p.id, "moving", {"late.txt": "late\n"})
        drain()
        blocked.release.set()
        thread.join(STUCK_S)
    [answer] = results
    assert answer.status_code == 409, answer.text
    assert tip(settings, p, "main") == before
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.head_sha) == ("opened", pushed)
    assert api(owner).put(url(p, mr)).status_code == 200  # checked again, it merges
    assert_sound(settings, p)


def test_a_merge_already_merged_by_a_push_is_left_as_the_api_merged_it(api, make, settings, db, drain):
    """A push's refresh queued before an API merge commits finds the merge request merged:
    it neither marks it merged again nor writes a version, note or pipeline to it."""
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="both")
    push_commit(api, owner, p.id, "both", {"more.txt": "more\n"})  # its refresh not run yet
    r = api(owner).put(url(p, mr))
    assert r.status_code == 200, r.text
    merged = r.json()["merge_commit_sha"]
    notes = system_notes(db, mr)
    drain()
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.merge_commit_sha, row.merged_by_id, row.head_sha) == (
        "merged",
        merged,
        owner.id,
        mr.head_sha,
    )
    # Only the merge commit's mention of it ("See merge request …!1") is noted.
    assert system_notes(db, mr) == [*notes, f"mentioned in commit {merged}"]
    merges_recorded = db.scalars(
        select(Event.id).where(
            Event.target_type == MERGE_REQUEST, Event.target_id == mr.id, Event.action == "merged"
        )
    ).all()
    assert len(merges_recorded) == 1


def test_an_automatic_merge_whose_commit_fails_puts_the_branch_back(api, make, settings, db, drain, runtime):
    """The job's transaction fails to commit after the merge moved the target: the branch goes
    back, the merge request stays open, and the retry merges once (no second, empty merge)."""
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="auto-fail")
    pipeline = make.pipeline(p, ref="auto-fail", sha=mr.head_sha, jobs=[{"name": "test"}])
    assert api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True}).status_code == 200
    before = tip(settings, p, "main")
    failed: list[bool] = []

    def fail_once_moved(session: Any) -> None:
        if not failed and tip(settings, p, "main") != before:
            failed.append(True)
            raise RuntimeError("the commit fails")

    finish(db, pipeline, SUCCESS)
    event.listen(runtime.sessions, "before_commit", fail_once_moved)
    try:
        drain()
    finally:
        event.remove(runtime.sessions, "before_commit", fail_once_moved)
    assert failed == [True]
    assert tip(settings, p, "main") == before
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.state, row.merge_when_pipeline_succeeds) == ("opened", True)
    with transaction(db):
        db.execute(update(Job).where(Job.kind == merges.AUTO_MERGE).values(run_at=utcnow()))
    drain()
    db.expire_all()
    assert db.get(MergeRequest, mr.id).state == "merged"
    main = repo_of(settings, p)[tip(settings, p, "main")].peel(pygit2.Commit)
    assert [str(x) for x in main.parent_ids] == [before, mr.head_sha]
    assert_sound(settings, p)


# ----------------------------------------------------------------------------- nothing to merge


def test_a_request_without_commits_is_405(api, make, settings, db):
    owner, p = owned(make)
    make.branch(p, "same", tip(settings, p, "main"))
    mr = make.merge_request(p, owner, source_branch="same")
    before = tip(settings, p, "main")
    r = api(owner).put(url(p, mr))
    assert (r.status_code, r.json()) == (405, {"message": "405 Method Not Allowed"})
    assert tip(settings, p, "main") == before
    assert api(owner).get(url(p, mr, "/merge_ref")).status_code == 400


@pytest.mark.parametrize("method", ["merge", "rebase_merge", "ff"])
def test_a_head_already_in_the_target_is_405_not_a_merge_of_nothing(api, make, settings, db, method):
    owner, p = owned(make, merge_method=method)
    mr = make.merge_request(p, owner)
    make.commit(p, {"on-top.txt": "x\n"}, branch=mr.source_branch)
    make.branch(p, "main", tip(settings, p, mr.source_branch))  # main took the head, unrefreshed
    moved = tip(settings, p, "main")
    r = api(owner).put(url(p, mr))
    assert (r.status_code, r.json()) == (405, {"message": "405 Method Not Allowed"})
    assert tip(settings, p, "main") == moved
    db.expire_all()
    assert db.get(MergeRequest, mr.id).state == "opened"


# ----------------------------------------------------------------------------- rebase is a push


@pytest.mark.parametrize(("allow_force", "status"), [(False, 403), (True, 202)])
def test_rebase_is_a_force_push_a_protected_source_may_refuse(api, make, settings, db, allow_force, status):
    owner, p = owned(make)
    dev = make.user()
    make.member(p, dev, DEVELOPER)
    mr = make.merge_request(p, owner, source_branch="shielded")
    with transaction(db):
        db.add(
            ProtectedBranch(
                project_id=p.id,
                name="shielded",
                push_access_level=DEVELOPER,
                merge_access_level=DEVELOPER,
                allow_force_push=allow_force,
            )
        )
    diverge(make, p)
    head = tip(settings, p, "shielded")
    r = api(dev).put(url(p, mr, "/rebase"))
    assert r.status_code == status, r.text
    assert (tip(settings, p, "shielded") == head) == (status == 403)


def test_rebase_is_refreshed_as_a_push_new_version_and_automatic_merge_aborted(
    api, make, settings, db, drain
):
    owner, p = owned(make)
    mr = make.merge_request(p, owner, source_branch="rebased")
    old_head = mr.head_sha
    make.pipeline(p, ref="rebased", sha=mr.head_sha, jobs=[{"name": "test"}])
    assert api(owner).put(url(p, mr), json={"merge_when_pipeline_succeeds": True}).status_code == 200
    diverge(make, p)
    assert api(owner).put(url(p, mr, "/rebase")).status_code == 202
    new = tip(settings, p, "rebased")
    drain()
    db.expire_all()
    row = db.get(MergeRequest, mr.id)
    assert (row.head_sha, row.merge_when_pipeline_succeeds) == (new, False)
    versions = api(owner).get(url(p, mr, "/versions")).json()
    assert [v["head_commit_sha"] for v in versions] == [new, old_head]
    assert system_notes(db, mr)[-1] == "aborted the automatic merge because source branch was updated"
    actions = db.scalars(
        select(Event.action).where(Event.target_type == MERGE_REQUEST, Event.target_id == mr.id)
    ).all()
    assert actions == ["updated"]


# ----------------------------------------------------------------------------- who reads


def test_members_only_merge_requests_need_a_reporter(api, make, settings):
    owner, p = owned(make, visibility="public", merge_requests_access_level="private")
    guest, reporter, outsider = make.user(), make.user(), make.user()
    make.member(p, guest, GUEST)
    make.member(p, reporter, REPORTER)
    mr = make.merge_request(p, owner)
    refused = api(outsider).get(url(p, mr, "/merge_ref")).status_code
    assert refused in (403, 404)
    assert api(guest).get(url(p, mr, "/merge_ref")).status_code == refused  # as any non-member
    assert api(reporter).get(url(p, mr, "/merge_ref")).status_code == 200
