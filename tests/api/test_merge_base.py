"""GET /projects/:id/repository/merge_base (GitLab's documented merge base of refs): the best
common ancestor as a commit, with GitLab's 400s and 404s."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pygit2
import pytest

from kiln.models import Project
from tests.bodies import COMMIT_KEYS
from tests.factories.repositories import open_repository, write_commit
from tests.repositories import new_project
from tests.statements import count


def merge_base(api: Any, who: Any, pid: int, *refs: str, **params: Any) -> Any:
    query: list[tuple[str, Any]] = [("refs[]", ref) for ref in refs] + list(params.items())
    return api(who).get(f"/projects/{pid}/repository/merge_base", params=query)


def moment(n: int) -> datetime:
    return datetime(2021, 3, 1, 0, 0, n, tzinfo=UTC)


@pytest.fixture
def owner(make: Any) -> Any:
    return make.user()


@pytest.fixture
def forked(api: Any, make: Any, owner: Any, settings: Any) -> dict[str, Any]:
    """The history of git's merge-base manual: r2 → r1 → a1 (branch a), r1 → b1 (branch b),
    r2 → c1 (branch c), and an unrelated root on branch orphan; tag v1 (annotated) on b1."""
    p = new_project(api, make, owner, readme=False)
    repo = open_repository(settings, p["id"])
    r2 = write_commit(repo, {"f": "0\n"}, branch="main", when=moment(1))
    r1 = write_commit(repo, {"f": "1\n"}, branch="main", when=moment(2))
    a1 = write_commit(repo, {"a": "a\n"}, branch="a", start=r1, when=moment(3))
    b1 = write_commit(repo, {"b": "b\n"}, branch="b", start=r1, when=moment(4))
    c1 = write_commit(repo, {"c": "c\n"}, branch="c", start=r2, when=moment(5))
    orphan = write_commit(repo, {"o": "o\n"}, branch="orphan", parents=[], when=moment(6))
    tagger = pygit2.Signature("T", "t@example.com", int(moment(7).timestamp()), 0)
    repo.create_tag("v1", pygit2.Oid(hex=b1), pygit2.enums.ObjectType.COMMIT, tagger, "v1\n")
    return {"pid": p["id"], "r2": r2, "r1": r1, "a1": a1, "b1": b1, "c1": c1, "orphan": orphan}


def test_the_merge_base_of_two_branches_is_their_common_ancestor_as_a_commit(api, owner, forked):
    r = merge_base(api, owner, forked["pid"], "a", "b")
    assert r.status_code == 200, r.text
    body = r.json()
    assert list(body) == COMMIT_KEYS
    assert (body["id"], body["parent_ids"]) == (forked["r1"], [forked["r2"]])


def test_refs_may_be_tags_commit_ids_and_short_ids(api, owner, forked):
    assert merge_base(api, owner, forked["pid"], "v1", forked["a1"]).json()["id"] == forked["r1"]
    assert merge_base(api, owner, forked["pid"], forked["a1"][:8], "c").json()["id"] == forked["r2"]


def test_the_base_of_a_ref_and_its_descendant_is_the_ref(api, owner, forked):
    assert merge_base(api, owner, forked["pid"], "main", "a").json()["id"] == forked["r1"]
    assert merge_base(api, owner, forked["pid"], "a", "a").json()["id"] == forked["a1"]


def test_more_refs_find_the_base_of_the_first_and_a_merge_of_the_others(api, owner, forked):
    """As `git merge-base first other…`: a and a merge of b and c share r1 (the base of all
    three alone would be r2); c and a merge of a and b share only r2."""
    assert merge_base(api, owner, forked["pid"], "a", "b", "c").json()["id"] == forked["r1"]
    assert merge_base(api, owner, forked["pid"], "c", "a", "b").json()["id"] == forked["r2"]


def test_refs_may_be_one_comma_separated_value(api, owner, forked):
    r = api(owner).get(f"/projects/{forked['pid']}/repository/merge_base", params={"refs": "a, b"})
    assert (r.status_code, r.json()["id"]) == (200, forked["r1"])


@pytest.mark.parametrize("refs", [["a"], ["a,"], []])
def test_fewer_than_two_refs_is_400(api, owner, forked, refs):
    query = [("refs[]", ref) for ref in refs] or [("refs", "")]
    r = api(owner).get(f"/projects/{forked['pid']}/repository/merge_base", params=query)
    assert (r.status_code, r.json()) == (400, {"message": "Provide at least 2 refs"})


def test_no_refs_is_400_refs_is_missing(api, owner, forked):
    r = api(owner).get(f"/projects/{forked['pid']}/repository/merge_base")
    assert (r.status_code, r.json()) == (400, {"error": "refs is missing"})


def test_an_unknown_ref_is_400_naming_it(api, owner, forked):
    r = merge_base(api, owner, forked["pid"], forked["a1"], "missing")
    assert (r.status_code, r.json()) == (400, {"message": "Could not find ref: missing"})


def test_unknown_refs_are_400_naming_each_once(api, owner, forked):
    r = merge_base(api, owner, forked["pid"], "nope", "a", "gone", "nope", "0" * 40)
    assert (r.status_code, r.json()) == (400, {"message": f"Could not find refs: nope, gone, {'0' * 40}"})


def test_an_empty_value_names_no_ref_and_an_empty_name_between_commas_no_commit(api, owner, forked):
    """Split as Ruby splits: nothing from an empty value, an empty name between commas."""
    r = merge_base(api, owner, forked["pid"], "a", "")
    assert (r.status_code, r.json()) == (400, {"message": "Provide at least 2 refs"})
    r = api(owner).get(f"/projects/{forked['pid']}/repository/merge_base", params={"refs": "a,,b"})
    assert (r.status_code, r.json()) == (400, {"message": "Could not find ref: "})


def test_refs_without_common_history_are_404_merge_base_not_found(api, owner, forked):
    r = merge_base(api, owner, forked["pid"], "a", "orphan")
    assert (r.status_code, r.json()) == (404, {"message": "404 Merge Base Not Found"})


def test_refs_of_an_empty_repository_are_unknown(api, make, owner):
    p = new_project(api, make, owner, readme=False)
    r = merge_base(api, owner, p["id"], "main", "other")
    assert (r.status_code, r.json()) == (400, {"message": "Could not find refs: main, other"})


def test_anonymous_reads_the_merge_base_of_a_public_project(api, make, owner, settings):
    p = new_project(api, make, owner, visibility="public")
    sha = api(owner).get(f"/projects/{p['id']}/repository/commits").json()[0]["id"]
    r = merge_base(api, None, p["id"], "main", sha)
    assert (r.status_code, r.json()["id"]) == (200, sha)


def test_a_private_project_is_404_to_outsiders_and_403_to_guests(api, make, db, owner, forked):
    r = merge_base(api, None, forked["pid"], "a", "b")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    r = merge_base(api, make.user(), forked["pid"], "a", "b")
    assert (r.status_code, r.json()) == (404, {"message": "404 Project Not Found"})
    guest = make.user()
    make.member(db.get(Project, forked["pid"]), guest, 10)
    r = merge_base(api, guest, forked["pid"], "a", "b")
    assert (r.status_code, r.json()) == (403, {"message": "403 Forbidden"})
    reporter = make.user()
    make.member(db.get(Project, forked["pid"]), reporter, 20)
    assert merge_base(api, reporter, forked["pid"], "a", "b").json()["id"] == forked["r1"]


def test_the_merge_base_costs_the_token_and_the_subject(api, owner, forked, runtime):
    path = f"/projects/{forked['pid']}/repository/merge_base?refs[]=a&refs[]=b&refs[]=c"
    assert count(runtime, lambda: api(owner).get(path)) == 2
