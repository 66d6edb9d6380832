"""Commits (spec part 1 "Commit", "Commit diff entry", "Commit comment", "Commit reference",
"Commits"; GitLab's documented behaviour where the spec says "not shown")."""

from __future__ import annotations

import base64
import itertools
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pygit2
import pytest

from kiln.models import Project
from kiln.models.namespaces import DEVELOPER, GUEST, MAINTAINER, REPORTER
from kiln.services.repositories import store
from tests.bodies import COMMIT_KEYS
from tests.factories.repositories import open_repository
from tests.repositories import fsck_errors, new_project
from tests.statements import count

_names = itertools.count(1)

PUSH_REFUSED = {"message": "403 Forbidden - You are not allowed to push into this branch"}
CHERRY_PICK_FAILED = (
    "Sorry, we cannot cherry-pick this commit automatically. This commit may already have been "
    "cherry-picked, or a more recent commit may have updated some of its content."
)
REVERT_FAILED = (
    "Sorry, we cannot revert this commit automatically. This commit may already have been "
    "reverted, or a more recent commit may have updated some of its content."
)


# ------------------------------------------------------------------ helpers


def commits_url(pid: int) -> str:
    return f"/projects/{pid}/repository/commits"


def commit(
    api: Any, who: Any, pid: int, actions: list[dict[str, Any]], *, message: str = "change", **fields: Any
) -> dict[str, Any]:
    body = {"branch": "main", "commit_message": message, "actions": actions, **fields}
    r = api(who).post(commits_url(pid), json=body)
    assert r.status_code == 201, r.text
    return r.json()


def create(path: str, content: str = "x\n") -> dict[str, Any]:
    return {"action": "create", "file_path": path, "content": content}


def update(path: str, content: str) -> dict[str, Any]:
    return {"action": "update", "file_path": path, "content": content}


def tip(settings: Any, pid: int, branch: str = "main") -> str:
    return str(open_repository(settings, pid).references[f"refs/heads/{branch}"].target)


def tree_of(settings: Any, pid: int, ref: str = "main") -> dict[str, tuple[int, bytes]]:
    """path → (mode, content) of every file at `ref`."""
    repo = open_repository(settings, pid)
    tree = repo.revparse_single(ref).peel(pygit2.Commit).tree
    out: dict[str, tuple[int, bytes]] = {}

    def walk(t: pygit2.Tree, prefix: str) -> None:
        for entry in t:
            if entry.type_str == "tree":
                walk(repo[entry.id].peel(pygit2.Tree), f"{prefix}{entry.name}/")
            else:
                out[f"{prefix}{entry.name}"] = (entry.filemode, repo[entry.id].data)

    walk(tree, "")
    return out


def fsck_clean(settings: Any, pid: int) -> None:
    assert fsck_errors(store(settings).path(pid)) == ""


def at(day: int, second: int = 0) -> datetime:
    return datetime(2020, 1, day, 0, 0, second, tzinfo=UTC)


def raw_commit(
    settings: Any,
    pid: int,
    *,
    parents: list[str],
    when: datetime,
    message: str,
    files: dict[str, str] | None = None,
    author: str = "Alice",
    branch: str | None = None,
) -> str:
    """A commit with chosen dates and authors, written straight into the repository."""
    repo = open_repository(settings, pid)
    index = pygit2.Index()
    if parents:
        index.read_tree(repo[parents[0]].peel(pygit2.Commit).tree)
    for path, content in (files or {}).items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(content.encode()), pygit2.enums.FileMode.BLOB))
    tree = index.write_tree(repo)
    sig = pygit2.Signature(author, f"{author.lower()}@example.com", int(when.timestamp()), 0)
    oid = repo.create_commit(None, sig, sig, message, tree, [pygit2.Oid(hex=p) for p in parents])
    if branch is not None:
        repo.references.create(f"refs/heads/{branch}", oid, force=True)
    return str(oid)


def ids(r: Any) -> list[str]:
    assert r.status_code == 200, r.text
    return [c["id"] for c in r.json()]


@pytest.fixture
def owner(make: Any) -> Any:
    return make.user(name="Owner Person")


@pytest.fixture
def graph(api: Any, make: Any, owner: Any, settings: Any) -> dict[str, Any]:
    """A project whose `merged` branch is A → B1 → B2 → M with side branch A → C1 merged in M,
    every commit one second apart on 2020-01-01."""
    p = new_project(api, make, owner, readme=False)
    pid = p["id"]
    a = raw_commit(settings, pid, parents=[], when=at(1, 1), message="A", files={"a.txt": "a\n"})
    b1 = raw_commit(settings, pid, parents=[a], when=at(1, 2), message="B1", files={"b.txt": "1\n"})
    c1 = raw_commit(
        settings, pid, parents=[a], when=at(1, 3), message="C1", files={"c.txt": "c\n"}, author="Bob"
    )
    b2 = raw_commit(settings, pid, parents=[b1], when=at(1, 4), message="B2", files={"b.txt": "2\n"})
    repo = open_repository(settings, pid)
    merged_tree = repo.merge_commits(b2, c1).write_tree(repo)
    sig = pygit2.Signature("Alice", "alice@example.com", int(at(1, 5).timestamp()), 0)
    m = str(repo.create_commit(None, sig, sig, "M", merged_tree, [pygit2.Oid(hex=b2), pygit2.Oid(hex=c1)]))
    make.branch(pid, "merged", m)
    make.branch(pid, "side", c1)
    make.branch(pid, "main", b1)
    return {"pid": pid, "A": a, "B1": b1, "C1": c1, "B2": b2, "M": m}


# ------------------------------------------------------------------ list


def test_list_shows_the_default_branch_newest_first(api, make, owner, settings):
    p = new_project(api, make, owner)
    first = tip(settings, p["id"])
    second = commit(api, owner, p["id"], [create("a.txt")], message="second")["id"]
    commit(api, owner, p["id"], [create("b.txt")], branch="other", start_branch="main")
    assert ids(api(owner).get(commits_url(p["id"]))) == [second, first]


def test_list_renders_the_commit_entity(api, make, owner, settings):
    p = new_project(api, make, owner)
    parent = tip(settings, p["id"])
    sha = raw_commit(
        settings,
        p["id"],
        parents=[parent],
        when=at(5),
        message="Title line\n\nBody text\n",
        files={"f.txt": "f\n"},
        branch="main",
    )
    r = api(owner).get(commits_url(p["id"]), params={"per_page": 1})
    assert r.status_code == 200
    [c] = r.json()
    assert list(c) == COMMIT_KEYS
    assert c == {
        "id": sha,
        "short_id": sha[:8],
        "created_at": "2020-01-05T00:00:00.000Z",
        "parent_ids": [parent],
        "title": "Title line",
        "message": "Title line\n\nBody text\n",
        "author_name": "Alice",
        "author_email": "alice@example.com",
        "authored_date": "2020-01-05T00:00:00.000Z",
        "committer_name": "Alice",
        "committer_email": "alice@example.com",
        "committed_date": "2020-01-05T00:00:00.000Z",
        "trailers": {},
        "extended_trailers": {},
        "web_url": f"http://kiln.test/{p['path_with_namespace']}/-/commit/{sha}",
    }


def test_list_ref_name_takes_a_branch_a_tag_or_a_sha(api, make, graph, owner):
    pid = graph["pid"]
    make.tag(pid, "v1", graph["B1"])
    assert ids(api(owner).get(commits_url(pid), params={"ref_name": "side"})) == [graph["C1"], graph["A"]]
    assert ids(api(owner).get(commits_url(pid), params={"ref_name": "v1"})) == [graph["B1"], graph["A"]]
    assert ids(api(owner).get(commits_url(pid), params={"ref_name": graph["B2"]})) == [
        graph["B2"],
        graph["B1"],
        graph["A"],
    ]


def test_list_ref_name_two_dot_range_is_what_the_second_has_and_the_first_lacks(api, graph, owner):
    pid = graph["pid"]
    r = api(owner).get(commits_url(pid), params={"ref_name": "main..merged"})
    assert ids(r) == [graph["M"], graph["B2"], graph["C1"]]


def test_list_ref_name_three_dot_range_is_the_symmetric_difference(api, graph, owner):
    pid = graph["pid"]
    r = api(owner).get(commits_url(pid), params={"ref_name": "side...main"})
    assert ids(r) == [graph["C1"], graph["B1"]]


def test_list_since_and_until_are_inclusive(api, make, owner, settings):
    p = new_project(api, make, owner, readme=False)
    pid = p["id"]
    d1 = raw_commit(settings, pid, parents=[], when=at(1), message="d1")
    d2 = raw_commit(settings, pid, parents=[d1], when=at(2), message="d2")
    d3 = raw_commit(settings, pid, parents=[d2], when=at(3), message="d3")
    raw_commit(settings, pid, parents=[d3], when=at(4), message="d4", branch="main")
    r = api(owner).get(
        commits_url(pid), params={"since": "2020-01-02T00:00:00Z", "until": "2020-01-03T00:00:00Z"}
    )
    assert ids(r) == [d3, d2]


@pytest.fixture
def dated(api: Any, make: Any, owner: Any, settings: Any) -> dict[str, Any]:
    """A project whose main is d1 → d2 → d3 → d4, committed at midnight UTC of 2020-01-01
    to 2020-01-04."""
    p = new_project(api, make, owner, readme=False)
    pid = p["id"]
    d1 = raw_commit(settings, pid, parents=[], when=at(1), message="d1")
    d2 = raw_commit(settings, pid, parents=[d1], when=at(2), message="d2")
    d3 = raw_commit(settings, pid, parents=[d2], when=at(3), message="d3")
    d4 = raw_commit(settings, pid, parents=[d3], when=at(4), message="d4", branch="main")
    return {"pid": pid, "d1": d1, "d2": d2, "d3": d3, "d4": d4}


def dated_ids(api: Any, owner: Any, dated: dict[str, Any], **bounds: str) -> list[str]:
    """The names (d1…d4) of the commits the list shows within the bounds, newest first."""
    names = {dated[n]: n for n in ("d1", "d2", "d3", "d4")}
    return [names[sha] for sha in ids(api(owner).get(commits_url(dated["pid"]), params=bounds))]


def test_list_since_includes_a_commit_dated_exactly_at_it(api, owner, dated):
    assert dated_ids(api, owner, dated, since="2020-01-02T00:00:00Z") == ["d4", "d3", "d2"]
    assert dated_ids(api, owner, dated, since="2020-01-02T00:00:01Z") == ["d4", "d3"]


def test_list_until_includes_a_commit_dated_exactly_at_it(api, owner, dated):
    assert dated_ids(api, owner, dated, until="2020-01-03T00:00:00Z") == ["d3", "d2", "d1"]
    assert dated_ids(api, owner, dated, until="2020-01-02T23:59:59Z") == ["d2", "d1"]


def test_list_bounds_in_fractions_of_a_second_compare_exactly(api, owner, dated):
    """A commit's date is whole seconds: 00:00:00 is before 00:00:00.5 and after 23:59:59.5."""
    assert dated_ids(api, owner, dated, since="2020-01-02T00:00:00.500Z") == ["d4", "d3"]
    assert dated_ids(api, owner, dated, until="2020-01-02T23:59:59.500Z") == ["d2", "d1"]
    assert dated_ids(api, owner, dated, until="2020-01-03T00:00:00.500Z") == ["d3", "d2", "d1"]


def test_list_since_equal_to_until_is_the_commits_of_that_second(api, owner, dated):
    bound = "2020-01-03T00:00:00Z"
    assert dated_ids(api, owner, dated, since=bound, until=bound) == ["d3"]


def test_list_since_after_until_is_empty(api, owner, dated):
    r = api(owner).get(
        commits_url(dated["pid"]), params={"since": "2020-01-03T00:00:00Z", "until": "2020-01-02T00:00:00Z"}
    )
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")


@pytest.mark.parametrize("since", ["2999-01-01T00:00:00Z", "2100-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_list_since_in_the_future_is_empty(api, owner, dated, since):
    r = api(owner).get(commits_url(dated["pid"]), params={"since": since})
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")


@pytest.mark.parametrize("until", ["1900-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "0001-01-01T00:00:00Z"])
def test_list_until_in_the_far_past_is_empty(api, owner, dated, until):
    r = api(owner).get(commits_url(dated["pid"]), params={"until": until})
    assert (r.status_code, r.json(), r.headers["X-Total"]) == (200, [], "0")


def test_list_since_in_the_far_past_and_until_in_the_future_bound_nothing(api, owner, dated):
    every = ["d4", "d3", "d2", "d1"]
    assert dated_ids(api, owner, dated, since="1900-01-01T00:00:00Z") == every
    assert dated_ids(api, owner, dated, until="9999-12-31T23:59:59Z") == every
    assert dated_ids(api, owner, dated, since="1970-01-01T00:00:00Z", until="2999-01-01T00:00:00Z") == every


@pytest.mark.parametrize(
    "since",
    [
        "2020-01-02T00:00:00Z",
        "2020-01-02T00:00:00.000Z",
        "2020-01-02T00:00:00+00:00",
        "2020-01-02T01:30:00+01:30",
        "2020-01-01T19:00:00-05:00",
        "2020-01-02T00:00:00",
        "2020-01-02 00:00:00",
        "2020-01-02",
        "20200102T000000Z",
    ],
)
def test_list_bounds_are_read_in_iso_8601_forms(api, owner, dated, since):
    """With or without seconds' fractions and a UTC offset (none is UTC), or a bare date
    (its midnight UTC): all name 2020-01-02 00:00:00 UTC here."""
    assert dated_ids(api, owner, dated, since=since) == ["d4", "d3", "d2"]


def test_list_bounds_are_the_committed_date_not_the_authored_one(api, make, owner, settings):
    """As `git log --since/--until` (GitLab's Gitaly) reads them."""
    p = new_project(api, make, owner, readme=False)
    repo = open_repository(settings, p["id"])
    author = pygit2.Signature("A", "a@example.com", int(at(1).timestamp()), 0)
    committer = pygit2.Signature("C", "c@example.com", int(at(3).timestamp()), 0)
    tree = pygit2.Index().write_tree(repo)
    sha = str(repo.create_commit("refs/heads/main", author, committer, "late", tree, []))
    assert ids(api(owner).get(commits_url(p["id"]), params={"since": "2020-01-02T00:00:00Z"})) == [sha]
    assert ids(api(owner).get(commits_url(p["id"]), params={"until": "2020-01-02T00:00:00Z"})) == []


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", ["yesterday-ish", "2020-13-01", "2020-01-02T25:00:00Z", "10000-01-01"])
def test_list_bound_that_is_not_a_date_is_400(api, make, owner, name, value):
    p = new_project(api, make, owner)
    r = api(owner).get(commits_url(p["id"]), params={name: value})
    assert (r.status_code, r.json()) == (400, {"error": f"{name} is invalid"})


def test_list_bounds_given_blank_bound_nothing(api, owner, dated):
    assert dated_ids(api, owner, dated, since="", until="") == ["d4", "d3", "d2", "d1"]


def test_list_path_limits_history_to_commits_touching_it(api, make, owner, settings):
    p = new_project(api, make, owner)
    pid = p["id"]
    a1 = commit(api, owner, pid, [create("docs/a.md", "1\n")])["id"]
    commit(api, owner, pid, [create("b.md", "1\n")])
    a2 = commit(api, owner, pid, [update("docs/a.md", "2\n")])["id"]
    assert ids(api(owner).get(commits_url(pid), params={"path": "docs/a.md"})) == [a2, a1]
    assert ids(api(owner).get(commits_url(pid), params={"path": "docs"})) == [a2, a1]


def test_list_totals_follow_the_branch_as_it_moves(api, make, owner):
    p = new_project(api, make, owner)
    pid = p["id"]
    commit(api, owner, pid, [create("a.md", "1\n")])
    commit(api, owner, pid, [create("b.md")])
    of_path = {"path": "a.md", "per_page": 1}
    every = {"per_page": 1}
    assert api(owner).get(commits_url(pid), params=of_path).headers["X-Total"] == "1"
    assert api(owner).get(commits_url(pid), params=every).headers["X-Total"] == "3"
    commit(api, owner, pid, [update("a.md", "2\n")])
    assert api(owner).get(commits_url(pid), params=of_path).headers["X-Total"] == "2"
    assert api(owner).get(commits_url(pid), params=every).headers["X-Total"] == "4"


def test_list_all_walks_every_ref(api, graph, owner):
    r = api(owner).get(commits_url(graph["pid"]), params={"all": "true"})
    assert ids(r) == [graph["M"], graph["B2"], graph["C1"], graph["B1"], graph["A"]]


def test_list_first_parent_follows_only_first_parents_of_merges(api, graph, owner):
    r = api(owner).get(commits_url(graph["pid"]), params={"ref_name": "merged", "first_parent": "True"})
    assert ids(r) == [graph["M"], graph["B2"], graph["B1"], graph["A"]]


def test_list_order_default_is_by_date_and_topo_keeps_lines_of_history_together(api, graph, owner):
    pid = graph["pid"]
    default = api(owner).get(commits_url(pid), params={"ref_name": "merged"})
    topo = api(owner).get(commits_url(pid), params={"ref_name": "merged", "order": "topo"})
    assert ids(default) == [graph["M"], graph["B2"], graph["C1"], graph["B1"], graph["A"]]
    assert ids(topo) == [graph["M"], graph["C1"], graph["B2"], graph["B1"], graph["A"]]


def test_list_order_other_than_default_or_topo_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).get(commits_url(p["id"]), params={"order": "date"})
    assert (r.status_code, r.json()) == (400, {"error": "order does not have a valid value"})


def test_list_author_filters_by_author(api, graph, owner):
    r = api(owner).get(commits_url(graph["pid"]), params={"ref_name": "merged", "author": "Bob"})
    assert ids(r) == [graph["C1"]]


def test_list_with_stats_adds_stats_to_each_commit(api, make, owner):
    p = new_project(api, make, owner)
    commit(api, owner, p["id"], [create("a.txt", "1\n2\n3\n")])
    commit(api, owner, p["id"], [update("a.txt", "1\nTWO\n3\n4\n")])
    r = api(owner).get(commits_url(p["id"]), params={"with_stats": "true", "per_page": 2})
    assert r.status_code == 200
    assert [c["stats"] for c in r.json()] == [
        {"additions": 2, "deletions": 1, "total": 3},
        {"additions": 3, "deletions": 0, "total": 3},
    ]
    assert list(r.json()[0]) == [*COMMIT_KEYS, "stats"]
    plain = api(owner).get(commits_url(p["id"]))
    assert "stats" not in plain.json()[0]


def test_list_trailers_parses_git_trailers_on_request(api, make, owner):
    p = new_project(api, make, owner)
    message = "Fix it\n\nBody.\n\nSigned-off-by: A <a@example.com>\nReviewed-by: C\nSigned-off-by: B <b@example.com>"
    commit(api, owner, p["id"], [create("t.txt")], message=message)
    parsed = api(owner).get(commits_url(p["id"]), params={"trailers": "true", "per_page": 1}).json()[0]
    assert (parsed["trailers"], parsed["extended_trailers"]) == (
        {"Signed-off-by": "B <b@example.com>", "Reviewed-by": "C"},
        {"Signed-off-by": ["A <a@example.com>", "B <b@example.com>"], "Reviewed-by": ["C"]},
    )
    plain = api(owner).get(commits_url(p["id"]), params={"per_page": 1}).json()[0]
    assert (plain["trailers"], plain["extended_trailers"]) == ({}, {})


def test_list_is_paginated_with_links(api, graph, owner):
    r = api(owner).get(commits_url(graph["pid"]), params={"ref_name": "merged", "per_page": 2, "page": 2})
    assert ids(r) == [graph["C1"], graph["B1"]]
    h = r.headers
    assert (
        h["X-Page"],
        h["X-Per-Page"],
        h["X-Next-Page"],
        h["X-Prev-Page"],
        h["X-Total"],
        h["X-Total-Pages"],
    ) == (
        "2",
        "2",
        "3",
        "1",
        "5",
        "3",
    )
    assert (
        f'<http://kiln.test/api/v4/projects/{graph["pid"]}/repository/commits?page=3&per_page=2&ref_name=merged>; rel="next"'
        in h["Link"]
    )


def test_list_over_the_total_limit_has_no_total_even_from_its_last_page(api, make, owner, monkeypatch):
    monkeypatch.setattr("kiln.services.commits.TOTAL_LIMIT", 3)
    p = new_project(api, make, owner)
    for n in range(6):
        commit(api, owner, p["id"], [create(f"f{n}.txt")])
    last = api(owner).get(commits_url(p["id"]), params={"per_page": 2, "page": 4})
    first = api(owner).get(commits_url(p["id"]), params={"per_page": 2})
    assert len(last.json()) == 1
    assert [("X-Total" in r.headers, "X-Total-Pages" in r.headers) for r in (last, first)] == [
        (False, False)
    ] * 2


def test_list_of_a_path_pages_past_the_total_limit(api, make, owner, monkeypatch):
    monkeypatch.setattr("kiln.services.commits.TOTAL_LIMIT", 3)
    p = new_project(api, make, owner)
    made = [commit(api, owner, p["id"], [create(f"d/f{n}.txt")])["id"] for n in range(6)]
    for extra in ({}, {"all": "true"}):
        r = api(owner).get(commits_url(p["id"]), params={"path": "d", "per_page": 2, "page": 2, **extra})
        assert (ids(r), r.headers["X-Next-Page"], "X-Total" in r.headers) == (made[3:1:-1], "3", False)
        r = api(owner).get(commits_url(p["id"]), params={"path": "d", "per_page": 2, "page": 3, **extra})
        assert (ids(r), r.headers["X-Next-Page"]) == (made[1::-1], "")


def test_list_unknown_ref_name_is_an_empty_list(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).get(commits_url(p["id"]), params={"ref_name": "no-such-branch"})
    assert (r.status_code, r.json()) == (200, [])


def test_list_of_an_empty_repository_is_an_empty_list(api, make, owner):
    p = new_project(api, make, owner, readme=False)
    r = api(owner).get(commits_url(p["id"]))
    assert (r.status_code, r.json()) == (200, [])


def test_list_of_a_project_without_repository_is_404(api, make):
    u = make.user()
    project = make.project(owner=u)
    r = api(u).get(commits_url(project.id))
    assert (r.status_code, r.json()) == (404, {"message": "404 Repository Not Found"})


def test_list_ref_name_that_is_an_option_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).get(commits_url(p["id"]), params={"ref_name": "--output=/tmp/x"})
    assert (r.status_code, r.json()) == (400, {"message": "ref_name is invalid"})


def test_reads_of_a_public_project_need_no_authentication(api, make, owner):
    p = new_project(api, make, owner, visibility="public")
    r = api().get(commits_url(p["id"]))
    assert (r.status_code, len(r.json())) == (200, 1)


def test_reads_of_a_private_project_are_404_to_outsiders(api, owner, make):
    p = new_project(api, make, owner)
    assert api().get(commits_url(p["id"])).json() == {"message": "404 Project Not Found"}
    r = api(make.user()).get(commits_url(p["id"]))
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})


def test_reads_are_403_to_guests_of_a_private_project(api, owner, make, db):
    p = new_project(api, make, owner)
    guest = make.user()
    make.member(db.get(Project, p["id"]), guest, GUEST)
    r = api(guest).get(commits_url(p["id"]))
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})


# ------------------------------------------------------------------ single commit


def test_get_commit_by_sha_answers_the_detail_with_stats(api, make, owner):
    p = new_project(api, make, owner)
    created = commit(api, owner, p["id"], [create("a.txt", "1\n2\n")], message="Add a")
    r = api(owner).get(f"{commits_url(p['id'])}/{created['id']}")
    assert r.status_code == 200
    body = r.json()
    assert list(body) == [*COMMIT_KEYS, "stats", "status", "project_id", "last_pipeline"]
    assert body == created
    assert (body["stats"], body["status"], body["project_id"], body["last_pipeline"]) == (
        {"additions": 2, "deletions": 0, "total": 2},
        None,
        p["id"],
        None,
    )


def test_get_commit_takes_a_branch_tag_or_short_sha(api, make, owner, settings):
    p = new_project(api, make, owner)
    sha = commit(api, owner, p["id"], [create("a.txt")], branch="feature/x", start_branch="main")["id"]
    make.tag(p, "v1.0", sha)
    base = commits_url(p["id"])
    for name in ("feature%2Fx", "v1.0", sha[:8]):
        r = api(owner).get(f"{base}/{name}")
        assert (r.status_code, r.json()["id"]) == (200, sha), name


def test_get_commit_stats_false_leaves_stats_out(api, make, owner, settings):
    p = new_project(api, make, owner)
    r = api(owner).get(f"{commits_url(p['id'])}/main", params={"stats": "false"})
    assert r.status_code == 200
    assert list(r.json()) == [*COMMIT_KEYS, "status", "project_id", "last_pipeline"]


def test_get_unknown_commit_is_404(api, make, owner):
    p = new_project(api, make, owner)
    for sha in ("0" * 40, "no-such-ref"):
        r = api(owner).get(f"{commits_url(p['id'])}/{sha}")
        assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


# ------------------------------------------------------------------ refs


def test_refs_lists_branches_then_tags_holding_the_commit(api, make, graph, owner):
    pid = graph["pid"]
    make.tag(pid, "v2", graph["M"])
    make.tag(pid, "v1", graph["A"])
    r = api(owner).get(f"{commits_url(pid)}/{graph['C1']}/refs")
    assert (r.status_code, r.json()) == (
        200,
        [
            {"type": "branch", "name": "merged"},
            {"type": "branch", "name": "side"},
            {"type": "tag", "name": "v2"},
        ],
    )
    assert r.headers["X-Total"] == "3"


def test_refs_type_narrows_to_branches_or_tags(api, make, graph, owner):
    pid = graph["pid"]
    make.tag(pid, "v1", graph["A"])
    url = f"{commits_url(pid)}/{graph['A']}/refs"
    assert api(owner).get(url, params={"type": "tag"}).json() == [{"type": "tag", "name": "v1"}]
    assert api(owner).get(url, params={"type": "branch"}).json() == [
        {"type": "branch", "name": n} for n in ("main", "merged", "side")
    ]
    r = api(owner).get(url, params={"type": "note"})
    assert (r.status_code, r.json()) == (400, {"error": "type does not have a valid value"})


def test_refs_are_paginated(api, graph, owner):
    r = api(owner).get(f"{commits_url(graph['pid'])}/{graph['A']}/refs", params={"per_page": 2, "page": 2})
    assert r.json() == [{"type": "branch", "name": "side"}]
    assert (r.headers["X-Total"], r.headers["X-Total-Pages"], r.headers["X-Prev-Page"]) == ("3", "2", "1")


# ------------------------------------------------------------------ diff


def test_diff_lists_changed_files_with_modes_and_flags(api, make, owner):
    p = new_project(api, make, owner)
    pid = p["id"]
    commit(api, owner, pid, [create("old.txt", "same\ncontent\nhere\n"), create("gone.txt", "bye\n")])
    c = commit(
        api,
        owner,
        pid,
        [
            {"action": "move", "file_path": "new.txt", "previous_path": "old.txt"},
            {"action": "delete", "file_path": "gone.txt"},
            create("run.sh", "#!/bin/sh\n"),
            {"action": "chmod", "file_path": "README.md", "execute_filemode": True},
        ],
    )
    r = api(owner).get(f"{commits_url(pid)}/{c['id']}/diff")
    assert r.status_code == 200
    by_path = {d["new_path"]: d for d in r.json()}
    assert list(by_path["run.sh"]) == [
        "diff",
        "collapsed",
        "too_large",
        "new_path",
        "old_path",
        "a_mode",
        "b_mode",
        "new_file",
        "renamed_file",
        "deleted_file",
        "generated_file",
    ]
    assert by_path["run.sh"] == {
        "diff": "@@ -0,0 +1 @@\n+#!/bin/sh\n",
        "collapsed": False,
        "too_large": False,
        "new_path": "run.sh",
        "old_path": "run.sh",
        "a_mode": "0",
        "b_mode": "100644",
        "new_file": True,
        "renamed_file": False,
        "deleted_file": False,
        "generated_file": False,
    }
    gone = by_path["gone.txt"]
    assert (gone["diff"], gone["a_mode"], gone["b_mode"], gone["deleted_file"], gone["new_file"]) == (
        "@@ -1 +0,0 @@\n-bye\n",
        "100644",
        "0",
        True,
        False,
    )
    moved = by_path["new.txt"]
    assert (moved["old_path"], moved["renamed_file"], moved["diff"], moved["a_mode"], moved["b_mode"]) == (
        "old.txt",
        True,
        "",
        "100644",
        "100644",
    )
    chmod = by_path["README.md"]
    assert (chmod["a_mode"], chmod["b_mode"], chmod["diff"], chmod["new_file"]) == (
        "100644",
        "100755",
        "",
        False,
    )
    assert (len(r.json()), r.headers["X-Total"]) == (4, "4")


def test_diff_of_a_root_commit_adds_every_file(api, make, owner, settings):
    p = new_project(api, make, owner)
    root = tip(settings, p["id"])
    r = api(owner).get(f"{commits_url(p['id'])}/{root}/diff")
    assert r.status_code == 200
    [entry] = r.json()
    assert (entry["new_path"], entry["new_file"], entry["a_mode"], entry["diff"]) == (
        "README.md",
        True,
        "0",
        f"@@ -0,0 +1 @@\n+# {p['name']}\n",
    )


def test_diff_unidiff_adds_file_headers(api, make, owner):
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create("a.txt", "1\n")])
    r = api(owner).get(f"{commits_url(p['id'])}/{c['id']}/diff", params={"unidiff": "true"})
    assert r.json()[0]["diff"] == "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+1\n"


def test_diff_is_paginated(api, make, owner):
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create(f"f{n}.txt") for n in range(3)])
    r = api(owner).get(f"{commits_url(p['id'])}/{c['id']}/diff", params={"per_page": 2})
    assert [d["new_path"] for d in r.json()] == ["f0.txt", "f1.txt"]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")


def test_diff_of_unknown_commit_is_404(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).get(f"{commits_url(p['id'])}/{'f' * 40}/diff")
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


# ------------------------------------------------------------------ create


def test_create_applies_all_five_actions_in_one_commit(api, make, owner, settings):
    p = new_project(api, make, owner)
    pid = p["id"]
    commit(
        api,
        owner,
        pid,
        [create("keep.txt", "keep\n"), create("drop.txt", "drop\n"), create("mv.txt", "mv\n")],
    )
    c = commit(
        api,
        owner,
        pid,
        [
            create("dir/new.txt", "new\n"),
            update("keep.txt", "kept\n"),
            {"action": "delete", "file_path": "drop.txt"},
            {"action": "move", "file_path": "moved/mv.txt", "previous_path": "mv.txt"},
            {"action": "chmod", "file_path": "keep.txt", "execute_filemode": True},
        ],
        message="Five actions",
    )
    assert (c["message"], tip(settings, pid)) == ("Five actions", c["id"])
    assert tree_of(settings, pid) == {
        "README.md": (0o100644, f"# {p['name']}\n".encode()),
        "dir/new.txt": (0o100644, b"new\n"),
        "keep.txt": (0o100755, b"kept\n"),
        "moved/mv.txt": (0o100644, b"mv\n"),
    }
    fsck_clean(settings, pid)


def test_create_answers_201_with_the_commit_detail_and_stats(api, make, owner, settings):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]),
        json={"branch": "main", "commit_message": "Add\n\nbody", "actions": [create("a.txt", "1\n2\n")]},
    )
    assert r.status_code == 201
    body = r.json()
    assert list(body) == [*COMMIT_KEYS, "stats", "status", "project_id", "last_pipeline"]
    assert (body["title"], body["message"], body["parent_ids"]) == (
        "Add",
        "Add\n\nbody",
        [str(open_repository(settings, p["id"]).revparse_single("main~1").id)],
    )
    assert (body["author_name"], body["committer_name"], body["author_email"]) == (
        "Owner Person",
        "Owner Person",
        owner.email,
    )
    assert (body["stats"], body["status"], body["last_pipeline"], body["project_id"]) == (
        {"additions": 2, "deletions": 0, "total": 2},
        None,
        None,
        p["id"],
    )


def test_create_stats_false_leaves_stats_out(api, make, owner):
    p = new_project(api, make, owner)
    body = commit(api, owner, p["id"], [create("a.txt")], stats=False)
    assert list(body) == [*COMMIT_KEYS, "status", "project_id", "last_pipeline"]


def test_create_accepts_form_encoded_actions(api, make, owner, settings):
    p = new_project(api, make, owner)
    form = [
        ("branch", "main"),
        ("commit_message", "form"),
        ("actions[][action]", "create"),
        ("actions[][file_path]", "one.txt"),
        ("actions[][content]", "1\n"),
        ("actions[][action]", "create"),
        ("actions[][file_path]", "two.txt"),
        ("actions[][content]", "Mgo="),
        ("actions[][encoding]", "base64"),
    ]
    r = api(owner).post(
        commits_url(p["id"]),
        content=urlencode(form),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 201, r.text
    files = tree_of(settings, p["id"])
    assert (files["one.txt"][1], files["two.txt"][1]) == (b"1\n", b"2\n")


def test_create_base64_content_is_decoded(api, make, owner, settings):
    p = new_project(api, make, owner)
    data = bytes(range(256))
    action = {**create("bin.dat"), "content": base64.b64encode(data).decode(), "encoding": "base64"}
    commit(api, owner, p["id"], [action])
    assert tree_of(settings, p["id"])["bin.dat"][1] == data


def test_create_author_name_and_email_set_the_author_not_the_committer(api, make, owner):
    p = new_project(api, make, owner)
    c = commit(
        api, owner, p["id"], [create("a.txt")], author_name="Jane Doe", author_email="jane@example.com"
    )
    assert (c["author_name"], c["author_email"], c["committer_name"], c["committer_email"]) == (
        "Jane Doe",
        "jane@example.com",
        "Owner Person",
        owner.email,
    )


def test_create_keeps_the_commit_message_byte_for_byte(api, make, owner, settings):
    p = new_project(api, make, owner)
    message = "  Subject with spaces  \n\n\tindented body\r\nlast line without newline"
    c = commit(api, owner, p["id"], [create("a.txt")], message=message)
    assert c["message"] == message
    assert open_repository(settings, p["id"])[c["id"]].peel(pygit2.Commit).raw_message == message.encode()


def test_create_missing_file_path_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]),
        json={"branch": "main", "commit_message": "m", "actions": [{"action": "create"}]},
    )
    assert (r.status_code, r.json()) == (400, {"error": "actions[0][file_path] is missing"})


def test_create_unknown_action_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]),
        json={
            "branch": "main",
            "commit_message": "m",
            "actions": [create("a"), {"action": "copy", "file_path": "b"}],
        },
    )
    assert (r.status_code, r.json()) == (400, {"error": "actions[1][action] does not have a valid value"})


def test_create_action_fields_required_by_action_are_checked(api, make, owner):
    p = new_project(api, make, owner)
    actions = [
        {"action": "move", "file_path": "b"},
        {"action": "update", "file_path": "c"},
        {"action": "chmod", "file_path": "d"},
        {"action": "create", "file_path": "e"},
        {"action": "delete", "file_path": "README.md"},
    ]
    r = api(owner).post(
        commits_url(p["id"]), json={"branch": "main", "commit_message": "m", "actions": actions}
    )
    assert (r.status_code, r.json()) == (
        400,
        {
            "error": "actions[0][previous_path] is missing, actions[1][content] is missing, "
            "actions[2][execute_filemode] is missing, actions[3][content] is missing"
        },
    )


def test_create_without_required_fields_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(commits_url(p["id"]), json={})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "branch is missing, commit_message is missing, actions is missing"},
    )


def test_create_start_branch_and_start_sha_are_mutually_exclusive(api, make, owner, settings):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]),
        json={
            "branch": "new",
            "commit_message": "m",
            "actions": [create("a")],
            "start_branch": "main",
            "start_sha": tip(settings, p["id"]),
        },
    )
    assert (r.status_code, r.json()) == (400, {"error": "start_branch, start_sha are mutually exclusive"})


def test_create_on_a_missing_branch_without_start_is_400(api, make, owner, settings):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]), json={"branch": "nope", "commit_message": "m", "actions": [create("a")]}
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You can only create or edit files when you are on a branch"},
    )
    assert "refs/heads/nope" not in open_repository(settings, p["id"]).references


def test_create_with_start_branch_creates_the_branch_from_it(api, make, owner, settings):
    p = new_project(api, make, owner)
    base = tip(settings, p["id"])
    c = commit(api, owner, p["id"], [create("f.txt")], branch="feature", start_branch="main")
    assert (c["parent_ids"], tip(settings, p["id"], "feature"), tip(settings, p["id"])) == (
        [base],
        c["id"],
        base,
    )
    fsck_clean(settings, p["id"])


def test_create_with_start_sha_creates_the_branch_from_that_commit(api, make, owner, settings):
    p = new_project(api, make, owner)
    root = tip(settings, p["id"])
    commit(api, owner, p["id"], [create("later.txt")])
    c = commit(api, owner, p["id"], [create("f.txt")], branch="from-root", start_sha=root)
    assert c["parent_ids"] == [root]
    assert set(tree_of(settings, p["id"], "from-root")) == {"README.md", "f.txt"}


def test_create_start_sha_unknown_or_malformed_is_400(api, make, owner):
    p = new_project(api, make, owner)
    url = commits_url(p["id"])
    body = {"branch": "x", "commit_message": "m", "actions": [create("a")]}
    r = api(owner).post(url, json={**body, "start_sha": "a" * 40})
    assert (r.status_code, r.json()) == (400, {"message": f"Cannot find start_sha '{'a' * 40}'"})
    r = api(owner).post(url, json={**body, "start_sha": "main"})
    assert (r.status_code, r.json()) == (400, {"message": "Invalid start_sha 'main'"})


def test_create_new_branch_that_already_exists_is_400_without_force(api, make, owner, settings):
    p = new_project(api, make, owner)
    commit(api, owner, p["id"], [create("f.txt")], branch="feature", start_branch="main")
    before = tip(settings, p["id"], "feature")
    r = api(owner).post(
        commits_url(p["id"]),
        json={"branch": "feature", "start_branch": "main", "commit_message": "m", "actions": [create("g")]},
    )
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "A branch called 'feature' already exists. Switch to that branch in order to make changes"
        },
    )
    assert tip(settings, p["id"], "feature") == before


def test_create_force_rebuilds_the_branch_on_the_start(api, make, owner, settings):
    p = new_project(api, make, owner)
    base = tip(settings, p["id"])
    commit(api, owner, p["id"], [create("old.txt")], branch="feature", start_branch="main")
    c = commit(api, owner, p["id"], [create("new.txt")], branch="feature", start_branch="main", force=True)
    assert (c["parent_ids"], tip(settings, p["id"], "feature")) == ([base], c["id"])
    assert set(tree_of(settings, p["id"], "feature")) == {"README.md", "new.txt"}
    fsck_clean(settings, p["id"])


def test_create_invalid_new_branch_name_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(p["id"]),
        json={"branch": "bad..name", "start_branch": "main", "commit_message": "m", "actions": [create("a")]},
    )
    assert (r.status_code, r.json()) == (
        400,
        {
            "message": "Something went wrong when we tried to create 'bad..name' for you: Branch name is invalid"
        },
    )


def test_create_existing_file_and_missing_file_are_400(api, make, owner):
    p = new_project(api, make, owner)
    url = commits_url(p["id"])
    r = api(owner).post(url, json={"branch": "main", "commit_message": "m", "actions": [create("README.md")]})
    assert (r.status_code, r.json()) == (400, {"message": "A file with this name already exists"})
    r = api(owner).post(
        url, json={"branch": "main", "commit_message": "m", "actions": [update("nope.txt", "x")]}
    )
    assert (r.status_code, r.json()) == (400, {"message": "A file with this name doesn't exist"})


def test_create_with_a_stale_last_commit_id_is_400(api, make, owner, settings):
    p = new_project(api, make, owner)
    first = commit(api, owner, p["id"], [create("a.txt", "1\n")])["id"]
    commit(api, owner, p["id"], [update("a.txt", "2\n")])
    r = api(owner).post(
        commits_url(p["id"]),
        json={
            "branch": "main",
            "commit_message": "m",
            "actions": [{**update("a.txt", "3\n"), "last_commit_id": first}],
        },
    )
    assert (r.status_code, r.json()) == (
        400,
        {"message": "You are attempting to update a file that has changed since you started editing it."},
    )


def test_create_racing_another_update_of_the_branch_is_400(api, make, owner, settings):
    p = new_project(api, make, owner)
    before = tip(settings, p["id"])
    # A push in progress holds git's lock on the branch.
    lock = store(settings).path(p["id"]) / "refs" / "heads" / "main.lock"
    lock.write_text("")
    try:
        r = api(owner).post(
            commits_url(p["id"]), json={"branch": "main", "commit_message": "m", "actions": [create("a.txt")]}
        )
    finally:
        lock.unlink()
    assert (r.status_code, r.json()) == (
        400,
        {"message": "Could not update branch main. Please refresh and try again."},
    )
    assert tip(settings, p["id"]) == before
    fsck_clean(settings, p["id"])


def test_create_on_an_empty_repository_creates_the_branch_and_makes_it_default(api, make, owner, settings):
    p = new_project(api, make, owner, readme=False)
    c = commit(api, owner, p["id"], [create("a.txt")], branch="trunk")
    assert c["parent_ids"] == []
    assert api(owner).get(f"/projects/{p['id']}").json()["default_branch"] == "trunk"
    assert ids(api(owner).get(commits_url(p["id"]))) == [c["id"]]
    rules = api(owner).get(f"/projects/{p['id']}/protected_branches").json()
    assert [rule["name"] for rule in rules] == ["trunk"]
    fsck_clean(settings, p["id"])


def test_create_records_a_push_event(api, make, owner, db, settings):
    from sqlalchemy import select

    from kiln.models import Event

    p = new_project(api, make, owner)
    before = tip(settings, p["id"])
    c = commit(api, owner, p["id"], [create("a.txt")])
    event = db.scalars(select(Event).where(Event.project_id == p["id"]).order_by(Event.id.desc())).first()
    assert (event.action, event.author_id, event.data["ref"], event.data["before"], event.data["after"]) == (
        "pushed",
        owner.id,
        "refs/heads/main",
        before,
        c["id"],
    )


def test_create_needs_push_access_to_the_branch(api, owner, make, db, settings):
    p = new_project(api, make, owner)
    project = db.get(Project, p["id"])
    reporter, developer = make.user(), make.user()
    make.member(project, reporter, REPORTER)
    make.member(project, developer, DEVELOPER)
    body = {"branch": "main", "commit_message": "m", "actions": [create("a.txt")]}
    r = api(reporter).post(commits_url(p["id"]), json=body)
    assert (r.status_code, r.json()) == (403, PUSH_REFUSED)
    # The default branch is protected (Maintainers push); a new branch is not.
    r = api(developer).post(commits_url(p["id"]), json=body)
    assert (r.status_code, r.json()) == (403, PUSH_REFUSED)
    r = api(developer).post(commits_url(p["id"]), json={**body, "branch": "dev", "start_branch": "main"})
    assert r.status_code == 201


def test_create_needs_authentication(api, make, owner):
    p = new_project(api, make, owner, visibility="public")
    r = api().post(
        commits_url(p["id"]), json={"branch": "main", "commit_message": "m", "actions": [create("a")]}
    )
    assert (r.status_code, r.json()) == (401, {"message": "401 Unauthorized"})


def _fork(api: Any, make: Any, owner: Any, forker: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    source = new_project(api, make, owner, visibility="public")
    r = api(forker).post(f"/projects/{source['id']}/fork", json={})
    assert r.status_code == 201, r.text
    return source, r.json()


def test_create_start_project_takes_the_start_from_the_fork_source(api, owner, make, settings):
    forker = make.user()
    source, fork = _fork(api, make, owner, forker)
    upstream = commit(api, owner, source["id"], [create("upstream.txt", "up\n")])["id"]
    assert "upstream.txt" not in tree_of(settings, fork["id"])
    c = commit(
        api,
        forker,
        fork["id"],
        [create("mine.txt")],
        branch="sync",
        start_branch="main",
        start_project=source["id"],
    )
    assert (c["parent_ids"], tip(settings, fork["id"], "sync")) == ([upstream], c["id"])
    assert set(tree_of(settings, fork["id"], "sync")) == {"README.md", "upstream.txt", "mine.txt"}
    fsck_clean(settings, fork["id"])


def test_create_start_project_with_start_sha_and_a_path_ident(api, owner, make, settings):
    forker = make.user()
    source, fork = _fork(api, make, owner, forker)
    upstream = commit(api, owner, source["id"], [create("u.txt")])["id"]
    commit(api, owner, source["id"], [create("later.txt")])
    c = commit(
        api,
        forker,
        fork["id"],
        [create("m.txt")],
        branch="pick",
        start_sha=upstream,
        start_project=source["path_with_namespace"],
    )
    assert c["parent_ids"] == [upstream]
    fsck_clean(settings, fork["id"])


def test_create_start_project_outside_the_fork_network_is_403(api, owner, make):
    other = new_project(api, make, owner, visibility="public")
    mine = new_project(api, make, owner)
    r = api(owner).post(
        commits_url(mine["id"]),
        json={
            "branch": "x",
            "start_branch": "main",
            "start_project": other["id"],
            "commit_message": "m",
            "actions": [create("a")],
        },
    )
    assert (r.status_code, r.json()) == (
        403,
        {
            "message": f"403 Forbidden - Project is not included in the fork network for {other['name_with_namespace']}"
        },
    )


# ------------------------------------------------------------------ comments


def _commented(api: Any, make: Any, owner: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create("a.txt", "one\ntwo\n")], branch="topic", start_branch="main")
    return p, c


def test_comment_on_a_line_needs_full_sha_valid_path_and_line_and_type_new(api, make, owner):
    p, c = _commented(api, make, owner)
    r = api(owner).post(
        f"{commits_url(p['id'])}/{c['id']}/comments",
        json={"note": "Nice line", "path": "a.txt", "line": 2, "line_type": "new"},
    )
    assert r.status_code == 201
    body = r.json()
    assert list(body) == ["note", "path", "line", "line_type", "author", "created_at"]
    assert (body["note"], body["path"], body["line"], body["line_type"]) == ("Nice line", "a.txt", 2, "new")
    assert body["author"] | {"created_at": None} == {
        "id": owner.id,
        "username": owner.username,
        "name": "Owner Person",
        "state": "active",
        "locked": False,
        "avatar_url": None,
        "web_url": f"http://kiln.test/{owner.username}",
        "created_at": None,
    }
    assert (body["author"]["created_at"][-1], body["created_at"][-1]) == ("Z", "Z")


def test_comment_on_a_line_takes_the_full_sha_in_capitals_too(api, make, owner):
    p, c = _commented(api, make, owner)
    r = api(owner).post(
        f"{commits_url(p['id'])}/{c['id'].upper()}/comments",
        json={"note": "n", "path": "a.txt", "line": 2, "line_type": "new"},
    )
    assert (r.status_code, r.json()["path"], r.json()["line"]) == (201, "a.txt", 2)


def test_comment_line_type_defaults_to_new(api, make, owner):
    p, c = _commented(api, make, owner)
    r = api(owner).post(
        f"{commits_url(p['id'])}/{c['id']}/comments", json={"note": "n", "path": "a.txt", "line": 1}
    )
    assert (r.status_code, r.json()["path"], r.json()["line"], r.json()["line_type"]) == (
        201,
        "a.txt",
        1,
        "new",
    )


@pytest.mark.parametrize(
    ("sha", "fields"),
    [
        ("topic", {"path": "a.txt", "line": 2, "line_type": "new"}),  # a branch name
        ("short", {"path": "a.txt", "line": 2, "line_type": "new"}),  # an abbreviated SHA
        ("full", {"path": "a.txt", "line": 9, "line_type": "new"}),  # no such line
        ("full", {"path": "b.txt", "line": 1, "line_type": "new"}),  # no such path
        ("full", {"path": "a.txt", "line": 2, "line_type": "old"}),  # not a new line
    ],
)
def test_comment_that_cannot_be_placed_on_a_line_is_a_commit_comment(api, make, owner, sha, fields):
    p, c = _commented(api, make, owner)
    ref = {"full": c["id"], "short": c["id"][:10]}.get(sha, sha)
    r = api(owner).post(f"{commits_url(p['id'])}/{ref}/comments", json={"note": "general", **fields})
    assert r.status_code == 201
    assert (r.json()["note"], r.json()["path"], r.json()["line"], r.json()["line_type"]) == (
        "general",
        None,
        None,
        None,
    )
    listed = api(owner).get(f"{commits_url(p['id'])}/{c['id']}/comments").json()
    assert [n["note"] for n in listed] == ["general"]


def test_comment_path_without_line_is_400(api, make, owner):
    p, c = _commented(api, make, owner)
    r = api(owner).post(f"{commits_url(p['id'])}/{c['id']}/comments", json={"note": "n", "path": "a.txt"})
    assert (r.status_code, r.json()) == (400, {"error": "line is missing"})


def test_comment_without_note_is_400(api, make, owner):
    p, c = _commented(api, make, owner)
    url = f"{commits_url(p['id'])}/{c['id']}/comments"
    r = api(owner).post(url, json={})
    assert (r.status_code, r.json()) == (400, {"error": "note is missing"})
    r = api(owner).post(url, json={"note": "  "})
    assert (r.status_code, r.json()) == (400, {"message": {"note": ["can't be blank"]}})


def test_comments_are_listed_oldest_first_and_paginated(api, owner, make, db):
    p, c = _commented(api, make, owner)
    other = make.user()
    make.member(db.get(Project, p["id"]), other, REPORTER)
    url = f"{commits_url(p['id'])}/{c['id']}/comments"
    for n, who in enumerate([owner, other, owner]):
        assert api(who).post(url, json={"note": f"n{n}"}).status_code == 201
    r = api(owner).get(url, params={"per_page": 2})
    assert r.status_code == 200
    assert [(n["note"], n["author"]["id"]) for n in r.json()] == [("n0", owner.id), ("n1", other.id)]
    assert (r.headers["X-Total"], r.headers["X-Next-Page"]) == ("3", "2")
    # A branch name reaches the comments of its tip commit.
    assert [n["note"] for n in api(owner).get(f"{commits_url(p['id'])}/topic/comments").json()] == [
        "n0",
        "n1",
        "n2",
    ]


def test_comment_on_unknown_commit_is_404(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(f"{commits_url(p['id'])}/{'a' * 40}/comments", json={"note": "n"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


# ------------------------------------------------------------------ cherry-pick


def _picked(api: Any, make: Any, owner: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A project whose `feature` branch has one commit (by Jane Doe) that main lacks."""
    p = new_project(api, make, owner)
    c = commit(
        api,
        owner,
        p["id"],
        [create("feature.txt", "f\n")],
        branch="feature",
        start_branch="main",
        message="Add feature\n\nWith a body",
        author_name="Jane Doe",
        author_email="jane@example.com",
    )
    return p, c


def test_cherry_pick_applies_the_change_and_names_the_picked_commit(api, owner, make, db, settings):
    p, c = _picked(api, make, owner)
    maintainer = make.user(name="Mai Ntainer")
    make.member(db.get(Project, p["id"]), maintainer, MAINTAINER)
    before = tip(settings, p["id"])
    r = api(maintainer).post(f"{commits_url(p['id'])}/{c['id']}/cherry_pick", json={"branch": "main"})
    assert r.status_code == 201
    body = r.json()
    assert list(body) == COMMIT_KEYS
    assert body["message"] == f"Add feature\n\nWith a body\n\n(cherry picked from commit {c['id']})"
    assert body["title"] == "Add feature"
    assert (body["author_name"], body["author_email"], body["committer_name"], body["committer_email"]) == (
        "Jane Doe",
        "jane@example.com",
        "Mai Ntainer",
        maintainer.email,
    )
    assert (body["parent_ids"], tip(settings, p["id"])) == ([before], body["id"])
    assert tree_of(settings, p["id"])["feature.txt"] == (0o100644, b"f\n")
    fsck_clean(settings, p["id"])


def test_cherry_pick_message_strips_trailing_newlines_before_the_note(api, make, owner, settings):
    p = new_project(api, make, owner)
    sha = raw_commit(
        settings,
        p["id"],
        parents=[tip(settings, p["id"])],
        when=at(3),
        message="Add x\n",
        files={"x.txt": "x\n"},
        branch="side",
    )
    r = api(owner).post(f"{commits_url(p['id'])}/{sha}/cherry_pick", json={"branch": "main"})
    assert (r.status_code, r.json()["message"]) == (201, f"Add x\n\n(cherry picked from commit {sha})")


def test_cherry_pick_with_a_message_uses_it(api, make, owner):
    p, c = _picked(api, make, owner)
    r = api(owner).post(
        f"{commits_url(p['id'])}/{c['id']}/cherry_pick", json={"branch": "main", "message": "Custom"}
    )
    assert (r.status_code, r.json()["message"]) == (201, "Custom")


def test_cherry_pick_twice_is_400_empty(api, make, owner, settings):
    p, c = _picked(api, make, owner)
    url = f"{commits_url(p['id'])}/{c['id']}/cherry_pick"
    assert api(owner).post(url, json={"branch": "main"}).status_code == 201
    before = tip(settings, p["id"])
    r = api(owner).post(url, json={"branch": "main"})
    assert (r.status_code, r.json()) == (400, {"message": CHERRY_PICK_FAILED, "error_code": "empty"})
    assert tip(settings, p["id"]) == before


def test_cherry_pick_that_conflicts_is_400_conflict(api, make, owner, settings):
    p = new_project(api, make, owner)
    commit(api, owner, p["id"], [create("f.txt", "base\n")])
    commit(api, owner, p["id"], [update("f.txt", "other\n")], branch="other", start_branch="main")
    change = commit(api, owner, p["id"], [update("f.txt", "main\n")])
    before = tip(settings, p["id"], "other")
    r = api(owner).post(f"{commits_url(p['id'])}/{change['id']}/cherry_pick", json={"branch": "other"})
    assert (r.status_code, r.json()) == (400, {"message": CHERRY_PICK_FAILED, "error_code": "conflict"})
    assert tip(settings, p["id"], "other") == before
    fsck_clean(settings, p["id"])


def test_cherry_pick_dry_run_changes_nothing(api, make, owner, settings):
    p, c = _picked(api, make, owner)
    before = tip(settings, p["id"])
    url = f"{commits_url(p['id'])}/{c['id']}/cherry_pick"
    r = api(owner).post(url, json={"branch": "main", "dry_run": True})
    assert (r.status_code, r.json(), tip(settings, p["id"])) == (200, {"dry_run": "success"}, before)
    r = api(owner).post(url, json={"branch": "feature", "dry_run": True})
    assert (r.status_code, r.json()) == (
        400,
        {"message": CHERRY_PICK_FAILED, "error_code": "empty", "dry_run": "error"},
    )


def test_cherry_pick_onto_unknown_branch_is_404(api, make, owner):
    p, c = _picked(api, make, owner)
    r = api(owner).post(f"{commits_url(p['id'])}/{c['id']}/cherry_pick", json={"branch": "nope"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Branch Not Found"})


def test_cherry_pick_of_unknown_commit_is_404(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(f"{commits_url(p['id'])}/{'1' * 40}/cherry_pick", json={"branch": "main"})
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


def test_cherry_pick_needs_a_branch(api, make, owner):
    p, c = _picked(api, make, owner)
    url = f"{commits_url(p['id'])}/{c['id']}/cherry_pick"
    assert api(owner).post(url, json={}).json() == {"error": "branch is missing"}
    r = api(owner).post(url, json={"branch": ""})
    assert (r.status_code, r.json()) == (400, {"error": "branch is empty"})


def test_cherry_pick_needs_push_access_to_the_branch(api, owner, make, db):
    p, c = _picked(api, make, owner)
    developer = make.user()
    make.member(db.get(Project, p["id"]), developer, DEVELOPER)
    r = api(developer).post(f"{commits_url(p['id'])}/{c['id']}/cherry_pick", json={"branch": "main"})
    assert (r.status_code, r.json()) == (403, PUSH_REFUSED)


# ------------------------------------------------------------------ revert


def test_revert_undoes_the_change_with_the_revert_message(api, owner, make, db, settings):
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create("x.txt", "x\n")], message="  Add x  \n\nBody\n")
    reverter = make.user(name="Re Verter")
    make.member(db.get(Project, p["id"]), reverter, MAINTAINER)
    r = api(reverter).post(f"{commits_url(p['id'])}/{c['id']}/revert", json={"branch": "main"})
    assert r.status_code == 201
    body = r.json()
    assert list(body) == COMMIT_KEYS
    assert body["message"] == f'Revert "Add x"\n\nThis reverts commit {c["id"]}'
    assert (body["author_name"], body["committer_name"], body["parent_ids"]) == (
        "Re Verter",
        "Re Verter",
        [c["id"]],
    )
    assert "x.txt" not in tree_of(settings, p["id"])
    fsck_clean(settings, p["id"])


def test_revert_twice_is_400_empty(api, make, owner, settings):
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create("x.txt")])
    url = f"{commits_url(p['id'])}/{c['id']}/revert"
    assert api(owner).post(url, json={"branch": "main"}).status_code == 201
    before = tip(settings, p["id"])
    r = api(owner).post(url, json={"branch": "main"})
    assert (r.status_code, r.json()) == (400, {"message": REVERT_FAILED, "error_code": "empty"})
    assert tip(settings, p["id"]) == before


def test_revert_that_conflicts_is_400_conflict(api, make, owner, settings):
    p = new_project(api, make, owner)
    commit(api, owner, p["id"], [create("f.txt", "1\n")])
    change = commit(api, owner, p["id"], [update("f.txt", "2\n")])
    commit(api, owner, p["id"], [update("f.txt", "3\n")])
    r = api(owner).post(f"{commits_url(p['id'])}/{change['id']}/revert", json={"branch": "main"})
    assert (r.status_code, r.json()) == (400, {"message": REVERT_FAILED, "error_code": "conflict"})
    fsck_clean(settings, p["id"])


def test_revert_dry_run_changes_nothing(api, make, owner, settings):
    p = new_project(api, make, owner)
    c = commit(api, owner, p["id"], [create("x.txt")])
    r = api(owner).post(
        f"{commits_url(p['id'])}/{c['id']}/revert", json={"branch": "main", "dry_run": "true"}
    )
    assert (r.status_code, r.json(), tip(settings, p["id"])) == (200, {"dry_run": "success"}, c["id"])


def test_revert_onto_invalid_branch_name_is_400(api, make, owner):
    p = new_project(api, make, owner)
    r = api(owner).post(f"{commits_url(p['id'])}/main/revert", json={"branch": "a..b"})
    assert (r.status_code, r.json()) == (400, {"message": "The branch refname is invalid"})


# ------------------------------------------------------------------ sequence


def test_sequence_counts_the_commits_of_its_history(api, graph, owner):
    url = f"{commits_url(graph['pid'])}/merged/sequence"
    assert (api(owner).get(url).status_code, api(owner).get(url).json()) == (200, {"count": 5})
    assert api(owner).get(url, params={"first_parent": "true"}).json() == {"count": 4}
    r = api(owner).get(f"{commits_url(graph['pid'])}/nope/sequence")
    assert (r.status_code, r.json()) == (404, {"message": "404 Commit Not Found"})


def test_comment_list_costs_the_same_for_few_and_many_authors(api, owner, make, db, runtime):
    p, c = _commented(api, make, owner)
    url = f"{commits_url(p['id'])}/{c['id']}/comments"

    def comment_as_new_members(n: int) -> None:
        for _ in range(n):
            u = make.user()
            make.member(db.get(Project, p["id"]), u, REPORTER)
            assert api(u).post(url, json={"note": "n"}).status_code == 201

    comment_as_new_members(2)
    few = count(runtime, lambda: api(owner).get(url))
    comment_as_new_members(8)
    assert count(runtime, lambda: api(owner).get(url)) == few
