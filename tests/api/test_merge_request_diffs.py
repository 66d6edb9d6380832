"""Merge request diff versions: one per push that moves the source branch, newest first, each
with the commits it held and its diff from the merge base, readable after a force-push and
for a merge request from a fork; who may read them; what a page costs."""

from __future__ import annotations

import hashlib
import struct

import pytest

from kiln.models.namespaces import DEVELOPER, GUEST
from kiln.services import instance_settings
from kiln.services.repositories import store
from tests.factories.repositories import write_commit
from tests.merge_requests import fork_id
from tests.statements import count

ZERO = "0" * 40


def versions_path(p, mr) -> str:
    return f"/projects/{p.id}/merge_requests/{mr.iid}/versions"


def push_commit(api, who, pid, branch, files: dict[str, str], message: str = "change"):
    """A commit through the API: recorded as a push, as `git push` is."""
    actions = [{"action": "create", "file_path": path, "content": content} for path, content in files.items()]
    r = api(who).post(
        f"/projects/{pid}/repository/commits",
        json={"branch": branch, "commit_message": message, "actions": actions},
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


@pytest.fixture
def world(make):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    mr = make.merge_request(p, owner, source_branch="feature", files={"a.txt": "one\n"})
    return owner, p, mr


def mr_commit_title(api, who, p, mr) -> str:
    """The title of the one commit the factory made on the source branch (its first version's)."""
    [v] = api(who).get(versions_path(p, mr)).json()[-1:]
    return api(who).get(f"{versions_path(p, mr)}/{v['id']}").json()["commits"][0]["title"]


def test_a_new_merge_request_has_one_version(api, world, settings):
    owner, p, mr = world
    r = api(owner).get(versions_path(p, mr))
    assert r.status_code == 200, r.text
    [v] = r.json()
    repo = store(settings).open(p.id)
    main = str(repo.references["refs/heads/main"].target)
    head = str(repo.references["refs/heads/feature"].target)
    assert set(v) == {
        "id",
        "head_commit_sha",
        "base_commit_sha",
        "start_commit_sha",
        "created_at",
        "merge_request_id",
        "state",
        "real_size",
        "patch_id_sha",
    }
    assert (v["head_commit_sha"], v["base_commit_sha"], v["start_commit_sha"]) == (head, main, main)
    assert (v["merge_request_id"], v["state"], v["real_size"], v["patch_id_sha"]) == (
        mr.id,
        "collected",
        "1",
        None,
    )
    assert v["created_at"].endswith("Z")


def test_one_version_holds_its_commits_newest_first_and_its_diff(api, world, drain):
    owner, p, mr = world
    second = push_commit(api, owner, p.id, "feature", {"b.txt": "two\n"}, message="Second\n\nbody")
    drain()
    [v] = [v for v in api(owner).get(versions_path(p, mr)).json() if v["head_commit_sha"] == second]
    r = api(owner).get(f"{versions_path(p, mr)}/{v['id']}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [c["title"] for c in body["commits"]] == ["Second", mr_commit_title(api, owner, p, mr)]
    first = body["commits"][0]
    assert first["id"] == second
    assert (first["short_id"], first["message"]) == (second[:8], "Second\n\nbody")
    assert first["parent_ids"] == [body["commits"][1]["id"]]
    assert first["web_url"].endswith(f"/-/commit/{second}")
    assert first["created_at"] == first["committed_date"]
    assert {"author_name", "author_email", "authored_date", "committer_name", "committer_email"} <= set(first)
    diffs = {d["new_path"]: d for d in body["diffs"]}
    assert set(diffs) == {"a.txt", "b.txt"}
    assert diffs["b.txt"] == {
        "old_path": "b.txt",
        "new_path": "b.txt",
        "a_mode": "0",
        "b_mode": "100644",
        "diff": "@@ -0,0 +1 @@\n+two\n",
        "new_file": True,
        "renamed_file": False,
        "deleted_file": False,
        "generated_file": False,
        "collapsed": False,
        "too_large": False,
    }
    assert (body["real_size"], body["state"]) == ("2", "collected")


def test_each_push_adds_a_version_newest_first(api, world, drain):
    owner, p, mr = world
    push_commit(api, owner, p.id, "feature", {"b.txt": "two\n"})
    drain()
    push_commit(api, owner, p.id, "feature", {"c.txt": "three\n"})
    drain()
    listed = api(owner).get(versions_path(p, mr)).json()
    assert len(listed) == 3
    assert [v["id"] for v in listed] == sorted((v["id"] for v in listed), reverse=True)
    assert [v["real_size"] for v in listed] == ["3", "2", "1"]


def test_a_push_to_another_branch_adds_no_version(api, world, drain):
    owner, p, mr = world
    push_commit(api, owner, p.id, "main", {"m.txt": "x\n"})
    drain()
    [v] = api(owner).get(versions_path(p, mr)).json()
    assert v["real_size"] == "1"


def test_versions_paginate(api, world, drain):
    owner, p, mr = world
    for n in range(2):
        push_commit(api, owner, p.id, "feature", {f"n{n}.txt": "x\n"})
        drain()
    r = api(owner).get(versions_path(p, mr), params={"per_page": 2})
    assert len(r.json()) == 2
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")


def test_an_old_version_stays_readable_after_a_force_push(api, world, drain, settings, client):
    owner, p, mr = world
    old = api(owner).get(versions_path(p, mr)).json()[0]
    repo = store(settings).open(p.id)
    main = str(repo.references["refs/heads/main"].target)
    rewritten = write_commit(repo, {"z.txt": "z\n"}, branch="scratch", start=main, message="Rewritten")
    repo.references["refs/heads/scratch"].delete()
    force_push(client, api, owner, p, old["head_commit_sha"], rewritten, "refs/heads/feature")
    drain()
    listed = api(owner).get(versions_path(p, mr)).json()
    assert [v["head_commit_sha"] for v in listed] == [rewritten, old["head_commit_sha"]]
    r = api(owner).get(f"{versions_path(p, mr)}/{old['id']}")
    assert r.status_code == 200
    assert [d["new_path"] for d in r.json()["diffs"]] == ["a.txt"]
    kept = repo.references.get(f"refs/keep-around/{old['head_commit_sha']}")
    assert str(kept.target) == old["head_commit_sha"]
    new = api(owner).get(f"{versions_path(p, mr)}/{listed[0]['id']}").json()
    assert ([c["title"] for c in new["commits"]], [d["new_path"] for d in new["diffs"]]) == (
        ["Rewritten"],
        ["z.txt"],
    )


def force_push(client, api, user, p, old: str, new: str, ref: str, options: tuple[str, ...] = ()):
    """A ref update over smart HTTP (the objects are in the repository already)."""
    from tests.api.test_git_http import RECEIVE_REQUEST, basic, pkt_lines, push_request

    path = api(user).get(f"/projects/{p.id}").json()["path_with_namespace"]
    header = b"PACK" + struct.pack(">II", 2, 0)
    empty_pack = header + hashlib.sha1(header).digest()
    body = push_request((old, new, ref), caps="report-status", options=options) + empty_pack
    r = client.post(
        f"/{path}.git/git-receive-pack", content=body, headers={**RECEIVE_REQUEST, **basic("x", user.token)}
    )
    assert r.status_code == 200, r.text
    assert pkt_lines(r.content)[:2] == [b"unpack ok\n", f"ok {ref}\n".encode()], r.content
    return r


def test_a_deleted_source_branch_keeps_the_versions(api, world, drain, settings):
    owner, p, mr = world
    r = api(owner).delete(f"/projects/{p.id}/repository/branches/feature")
    assert r.status_code == 204, r.text
    drain()
    [v] = api(owner).get(versions_path(p, mr)).json()
    r = api(owner).get(f"{versions_path(p, mr)}/{v['id']}")
    assert r.status_code == 200, r.text
    assert [d["new_path"] for d in r.json()["diffs"]] == ["a.txt"]
    assert [c["title"] for c in r.json()["commits"]] == [mr_commit_title(api, owner, p, mr)]


def test_a_fork_merge_request_has_versions_in_the_target(api, make, drain, settings):
    owner = make.user()
    forker = make.user()
    upstream = make.project_with_repository(owner=owner, visibility="public")
    fork = fork_id(api, forker, upstream)
    drain()
    mr = make.merge_request(upstream, forker, source_project=fork, source_branch="topic")
    push_commit(api, forker, fork, "topic", {"f.txt": "fork\n"})
    drain()
    listed = api(forker).get(versions_path(upstream, mr)).json()
    assert len(listed) == 2
    head = str(store(settings).open(fork).references["refs/heads/topic"].target)
    assert listed[0]["head_commit_sha"] == head
    one = api(forker).get(f"{versions_path(upstream, mr)}/{listed[0]['id']}").json()
    first = api(forker).get(f"{versions_path(upstream, mr)}/{listed[1]['id']}").json()
    [made] = [d["new_path"] for d in first["diffs"]]  # the factory's commit
    assert (sorted(d["new_path"] for d in one["diffs"]), len(one["commits"])) == (sorted([made, "f.txt"]), 2)
    assert one["commits"][0]["id"] == head
    # The fork's head is kept in the target repository.
    assert store(settings).open(upstream.id).get(head) is not None


def test_another_merge_requests_version_is_not_found(api, world, make):
    owner, p, mr = world
    other = make.merge_request(p, owner)
    [v] = api(owner).get(versions_path(p, other)).json()
    r = api(owner).get(f"{versions_path(p, mr)}/{v['id']}")
    assert (r.status_code, r.json()) == (404, {"message": "404 Not found"})
    r = api(owner).get(f"{versions_path(p, mr)}/999999")
    assert r.status_code == 404


def test_versions_of_a_missing_merge_request_are_not_found(api, world):
    owner, p, _ = world
    r = api(owner).get(f"/projects/{p.id}/merge_requests/999/versions")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Request Not Found"})


def test_versions_are_hidden_from_non_members_of_a_private_project(api, world, make):
    _, p, mr = world
    r = api(make.user()).get(versions_path(p, mr))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    assert api().get(versions_path(p, mr)).status_code == 404


def test_members_who_read_merge_requests_read_versions(api, make):
    owner = make.user()
    dev = make.user()
    p = make.project_with_repository(owner=owner, members={dev: DEVELOPER})
    mr = make.merge_request(p, owner)
    assert api(dev).get(versions_path(p, mr)).status_code == 200


def test_guests_of_a_private_project_may_not_read_versions(api, make):
    owner = make.user()
    guest = make.user()
    p = make.project_with_repository(owner=owner, members={guest: GUEST})
    mr = make.merge_request(p, owner)
    assert api(guest).get(versions_path(p, mr)).status_code in (403, 404)


def test_a_version_past_the_file_limit_reads_n_plus(api, make, db):
    owner = make.user()
    p = make.project_with_repository(owner=owner)
    instance_settings.update(db, {"diff_max_files": 2})
    mr = make.merge_request(p, owner, files={f"f{n}.txt": f"{n}\n" for n in range(3)})
    [v] = api(owner).get(versions_path(p, mr)).json()
    assert (v["real_size"], v["state"]) == ("2+", "overflow")
    one = api(owner).get(f"{versions_path(p, mr)}/{v['id']}").json()
    assert [d["new_path"] for d in one["diffs"]] == ["f0.txt", "f1.txt"]


def test_the_versions_list_costs_the_same_for_one_version_as_for_many(api, world, runtime, drain):
    owner, p, mr = world

    def call():
        return api(owner).get(versions_path(p, mr))

    one = count(runtime, call)
    for n in range(4):
        push_commit(api, owner, p.id, "feature", {f"s{n}.txt": "x\n"})
        drain()
    assert len(call().json()) == 5
    assert count(runtime, call) == one


def test_one_version_costs_the_same_for_few_commits_as_for_many(api, world, runtime, drain):
    owner, p, mr = world
    [v] = api(owner).get(versions_path(p, mr)).json()

    def call_for(version_id):
        return lambda: api(owner).get(f"{versions_path(p, mr)}/{version_id}")

    few = count(runtime, call_for(v["id"]))
    for n in range(4):
        push_commit(api, owner, p.id, "feature", {f"s{n}.txt": "x\n"})
        drain()
    latest = api(owner).get(versions_path(p, mr)).json()[0]
    assert count(runtime, call_for(latest["id"])) == few


def test_odd_version_ids_are_refused_or_not_found(api, world):
    owner, p, mr = world
    assert api(owner).get(f"{versions_path(p, mr)}/{2**63 - 1}").status_code == 404
    assert api(owner).get(f"/projects/{p.id}/merge_requests/{2**63 - 1}/versions").status_code == 404
    assert api(owner).get(f"{versions_path(p, mr)}/abc").status_code == 400
