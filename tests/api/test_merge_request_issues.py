"""Merge requests and the issues they close or name, as GitLab reads them: the closing pattern
in a merge request's title, description and commit messages (…/closes_issues), every issue it
names (…/related_issues), the issues a merge into the default branch closes, and, from the
issue's side, merge_requests_count, …/closed_by and …/related_merge_requests; each for what
the caller may read, at a constant statement count."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select, update

from kiln.db import transaction
from kiln.models import Event, Issue, Project, ResourceStateEvent
from kiln.models.namespaces import GUEST, REPORTER
from kiln.models.notes import ISSUE
from kiln.services import merge_requests as mr_service
from tests.merge_requests import owned, system_notes
from tests.statements import count

BASE = "http://kiln.test"


def mr_url(p: Any, mr: Any, rest: str) -> str:
    return f"/projects/{p.id}/merge_requests/{mr.iid}/{rest}"


def issue_url(p: Any, issue: Any, rest: str) -> str:
    return f"/projects/{p.id}/issues/{issue.iid}/{rest}"


def full_path(api: Any, user: Any, p: Any) -> str:
    return api(user).get(f"/projects/{p.id}").json()["path_with_namespace"]


def ids(r: Any) -> list[int]:
    assert r.status_code == 200, r.text
    return [item["id"] for item in r.json()]


def fresh(db: Any, issue: Any) -> Issue:
    db.expire_all()
    found = db.get(Issue, issue.id)
    assert found is not None
    return found


# ----------------------------------------------------------------------------- the closing pattern


def test_the_closing_pattern_reads_gitlabs_words_lists_and_urls_outside_code():
    texts = [
        "Closes #1, #2 and grp/proj#3",
        f"fixes: {BASE}/grp/other/-/issues/4 and issue #5",
        "Resolving issues #6, #7",
        "Implemented #8",
        "CLOSES #20",
        "see #21",
        "`Closes #22`",
        "Closes https://elsewhere.example/grp/proj/-/issues/23",
    ]
    assert mr_service.closing_keys(texts, BASE) == [
        ("", 1),
        ("", 2),
        ("grp/proj", 3),
        ("grp/other", 4),
        ("", 5),
        ("", 6),
        ("", 7),
        ("", 8),
    ]


def test_every_issue_named_is_a_mention():
    text = f"Closes #1, see grp/proj#3 and {BASE}/grp/other/issues/4; `#9` is code"
    assert mr_service.mentioned_keys([text], BASE) == [("", 1), ("grp/proj", 3), ("grp/other", 4)]


def test_text_built_to_make_the_pattern_backtrack_is_read_in_linear_time():
    hostile = [
        "Closes #1" + " " * 100_000 + "x",
        "Closes " + "#1 " * 30_000 + "and",
        "Closes " + ", " * 50_000,
        "Fixes #1" + ", and" * 20_000,
        "Closes http://" + "a" * 50_000,
    ]
    started = time.monotonic()
    mr_service.closing_keys(hostile, BASE)
    assert time.monotonic() - started < 5


# ----------------------------------------------------------------------------- closes_issues, related_issues


def test_closes_issues_lists_the_issues_the_merge_request_closes(api, make):
    owner, p = owned(make)
    other = make.project(owner=owner)
    path, other_path = full_path(api, owner, p), full_path(api, owner, other)
    one, two, three, four, code = (make.issue(p, owner) for _ in range(5))
    elsewhere = make.issue(other, owner)
    description = (
        f"Closes #{one.iid}, #{two.iid} and {other_path}#{elsewhere.iid}\n\n"
        f"Fixes {BASE}/{path}/-/issues/{three.iid}\n\nsee #{four.iid}\n\n`Closes #{code.iid}`"
    )
    mr = make.merge_request(p, owner, description=description)
    r = api(owner).get(mr_url(p, mr, "closes_issues"))
    assert ids(r) == [one.id, two.id, elsewhere.id, three.id]
    body = r.json()
    assert body[0]["iid"] == one.iid
    assert body[0]["references"]["short"] == f"#{one.iid}"
    assert r.headers["X-Total"] == "4"


def test_related_issues_lists_every_issue_the_merge_request_names(api, make):
    owner, p = owned(make)
    one, two, code = (make.issue(p, owner) for _ in range(3))
    mr = make.merge_request(
        p, owner, title=f"Fixes #{one.iid}", description=f"Relates to #{two.iid}, not `#{code.iid}`"
    )
    assert ids(api(owner).get(mr_url(p, mr, "related_issues"))) == [one.id, two.id]
    assert ids(api(owner).get(mr_url(p, mr, "closes_issues"))) == [one.id]


def test_the_closing_pattern_reads_the_commit_messages_too(api, make):
    owner, p = owned(make)
    issue = make.issue(p, owner)
    base = make.commit(p, {"base.txt": "base\n"})
    make.commit(p, {"x.txt": "x\n"}, branch="fix", start=base, message=f"Fix it\n\nCloses #{issue.iid}")
    mr = make.merge_request(p, owner, source_branch="fix", title="A fix")
    assert ids(api(owner).get(mr_url(p, mr, "closes_issues"))) == [issue.id]


def test_a_merge_request_into_another_branch_closes_nothing(api, make):
    owner, p = owned(make)
    make.branch(p, "stable", make.commit(p, {"base.txt": "base\n"}))
    issue = make.issue(p, owner)
    mr = make.merge_request(p, owner, target_branch="stable", description=f"Closes #{issue.iid}")
    assert ids(api(owner).get(mr_url(p, mr, "closes_issues"))) == []
    assert ids(api(owner).get(mr_url(p, mr, "related_issues"))) == [issue.id]


def test_issues_the_caller_may_not_read_are_left_out(api, make):
    owner, p = owned(make, visibility="public")
    secret = make.project(owner=owner)
    secret_path = full_path(api, owner, secret)
    hidden = make.issue(secret, owner)
    confidential = make.issue(p, owner, confidential=True)
    open_one = make.issue(p, owner)
    mr = make.merge_request(
        p,
        owner,
        description=f"Closes #{open_one.iid}, #{confidential.iid} and {secret_path}#{hidden.iid}, #999",
    )
    stranger = make.user()
    assert ids(api(owner).get(mr_url(p, mr, "closes_issues"))) == [open_one.id, confidential.id, hidden.id]
    assert ids(api(stranger).get(mr_url(p, mr, "closes_issues"))) == [open_one.id]
    assert ids(api(stranger).get(mr_url(p, mr, "related_issues"))) == [open_one.id]


def test_a_merge_request_hidden_from_the_caller_is_404(api, make):
    owner, p = owned(make)
    mr = make.merge_request(p, owner)
    r = api(make.user()).get(mr_url(p, mr, "closes_issues"))
    assert r.status_code == 404
    assert r.json() == {"message": "404 Project Not Found"}


def test_closes_issues_costs_the_same_for_one_issue_as_for_many(api, make, runtime):
    """One statement per kind of reference (projects, issues), then the page's rows."""
    owner, p = owned(make)
    other = make.project(owner=owner)
    other_path = full_path(api, owner, other)
    first, first_elsewhere = make.issue(p, owner), make.issue(other, owner)
    mr = make.merge_request(p, owner, description=f"Closes #{first.iid}, {other_path}#{first_elsewhere.iid}")

    def call() -> Any:
        return api(owner).get(mr_url(p, mr, "closes_issues"))

    one = count(runtime, call)
    many = [make.issue(p, owner, labels=[make.label(project=p)], assignees=[make.user()]) for _ in range(5)]
    refs = ", ".join(f"#{i.iid}" for i in many)
    refs += ", " + ", ".join(f"{other_path}#{make.issue(other, owner).iid}" for _ in range(3))
    with transaction(make.db):
        make.db.execute(
            update(type(mr))
            .where(type(mr).id == mr.id)
            .values(description=f"Closes #{first.iid}, {other_path}#{first_elsewhere.iid}, {refs}")
        )
    assert len(call().json()) == 10
    assert count(runtime, call) == one


# ----------------------------------------------------------------------------- merging closes them


def merge(api: Any, user: Any, p: Any, mr: Any) -> dict[str, Any]:
    r = api(user).put(mr_url(p, mr, "merge"))
    assert r.status_code == 200, r.text
    return r.json()


def test_a_merge_into_the_default_branch_closes_the_issues_via_the_merge_request(api, make, db):
    owner, p = owned(make)
    issue, kept = make.issue(p, owner), make.issue(p, owner)
    mr = make.merge_request(p, owner, description=f"Closes #{issue.iid}; see #{kept.iid}")
    merge(api, owner, p, mr)
    closed = fresh(db, issue)
    assert closed.state == "closed"
    assert closed.closed_by_id == owner.id
    assert system_notes(db, issue)[-1] == f"closed via merge request !{mr.iid}"
    states = db.scalars(
        select(ResourceStateEvent.state).where(
            ResourceStateEvent.target_type == ISSUE, ResourceStateEvent.target_id == issue.id
        )
    ).all()
    assert states == ["closed"]
    hooks = db.scalars(
        select(Event.data).where(
            Event.target_type == "Issue", Event.target_id == issue.id, Event.action == "closed"
        )
    ).all()
    assert [h["hook_action"] for h in hooks] == ["close"]
    assert fresh(db, kept).state == "opened"
    body = api(owner).get(f"/projects/{p.id}/issues/{issue.iid}").json()
    assert body["state"] == "closed"
    assert body["closed_by"]["id"] == owner.id


def test_a_merge_closes_an_issue_of_another_project_naming_the_merge_request_in_full(api, make, db):
    owner, p = owned(make)
    other = make.project(owner=owner)
    issue = make.issue(other, owner)
    mr = make.merge_request(p, owner, description=f"Closes {full_path(api, owner, other)}#{issue.iid}")
    merge(api, owner, p, mr)
    assert fresh(db, issue).state == "closed"
    assert system_notes(db, issue)[-1] == f"closed via merge request {full_path(api, owner, p)}!{mr.iid}"


def test_an_issue_the_merging_user_may_not_update_stays_open(api, make, db):
    owner, p = owned(make)
    other_owner = make.user()
    other = make.project(owner=other_owner, visibility="public")
    issue = make.issue(other, other_owner)
    mr = make.merge_request(p, owner, description=f"Closes {full_path(api, owner, other)}#{issue.iid}")
    assert ids(api(owner).get(mr_url(p, mr, "closes_issues"))) == [issue.id]
    merge(api, owner, p, mr)
    assert fresh(db, issue).state == "opened"
    assert system_notes(db, issue) == []


def test_autoclose_referenced_issues_off_leaves_them_open(api, make, db):
    owner, p = owned(make)
    with transaction(db):
        db.execute(update(Project).where(Project.id == p.id).values(autoclose_referenced_issues=False))
    issue = make.issue(p, owner)
    mr = make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    merge(api, owner, p, mr)
    assert fresh(db, issue).state == "opened"


def test_a_merge_into_another_branch_leaves_them_open(api, make, db):
    owner, p = owned(make)
    make.branch(p, "stable", make.commit(p, {"base.txt": "base\n"}))
    issue = make.issue(p, owner)
    mr = make.merge_request(p, owner, target_branch="stable", description=f"Closes #{issue.iid}")
    merge(api, owner, p, mr)
    assert fresh(db, issue).state == "opened"


def test_an_issue_closed_already_gets_no_second_note(api, make, db):
    owner, p = owned(make)
    issue = make.issue(p, owner, state="closed")
    mr = make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    merge(api, owner, p, mr)
    assert system_notes(db, issue) == []


# ----------------------------------------------------------------------------- from the issue's side


def test_merge_requests_count_counts_the_merge_requests_closing_the_issue(api, make):
    owner, p = owned(make)
    issue, other = make.issue(p, owner), make.issue(p, owner)
    make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    make.merge_request(p, owner, title=f"Fix #{issue.iid}")
    make.merge_request(p, owner, description=f"Mentions #{issue.iid} and #{other.iid}")
    make.merge_request(p, owner, description=f"Closes #{issue.iid}", state="closed")
    assert api(owner).get(f"/projects/{p.id}/issues/{issue.iid}").json()["merge_requests_count"] == 2
    listed = {i["iid"]: i["merge_requests_count"] for i in api(owner).get(f"/projects/{p.id}/issues").json()}
    assert listed == {issue.iid: 2, other.iid: 0}


def test_closed_by_lists_the_projects_merge_requests_closing_the_issue(api, make):
    owner, p = owned(make)
    issue = make.issue(p, owner)
    first = make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    make.merge_request(p, owner, description=f"See #{issue.iid}")
    second = make.merge_request(p, owner, title=f"Resolves #{issue.iid}")
    r = api(owner).get(issue_url(p, issue, "closed_by"))
    assert ids(r) == [second.id, first.id]
    assert r.json()[0]["iid"] == second.iid
    assert r.json()[0]["references"]["short"] == f"!{second.iid}"


def test_related_merge_requests_lists_those_naming_or_closing_the_issue(api, make):
    owner, p = owned(make)
    other = make.project_with_repository(owner=owner)
    issue = make.issue(p, owner)
    path = full_path(api, owner, p)
    closing = make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    naming = make.merge_request(p, owner, description=f"See #{issue.iid}")
    make.merge_request(p, owner, description=f"See #{issue.iid}0 and `#{issue.iid}`")
    from_other = make.merge_request(other, owner, description=f"Follows {path}#{issue.iid}")
    same_iid_elsewhere = make.merge_request(other, owner, description=f"Closes #{issue.iid}")
    found = ids(api(owner).get(issue_url(p, issue, "related_merge_requests")))
    assert sorted(found) == sorted([closing.id, naming.id, from_other.id])
    assert same_iid_elsewhere.id not in found
    assert ids(api(owner).get(issue_url(p, issue, "closed_by"))) == [closing.id]


def test_merge_requests_the_caller_may_not_read_are_left_out(api, make):
    owner, p = owned(make, visibility="public")
    secret = make.project_with_repository(owner=owner)
    issue = make.issue(p, owner)
    path = full_path(api, owner, p)
    public_mr = make.merge_request(p, owner, description=f"Closes #{issue.iid}")
    make.merge_request(secret, owner, description=f"Closes {path}#{issue.iid}")
    stranger = make.user()
    assert ids(api(stranger).get(issue_url(p, issue, "related_merge_requests"))) == [public_mr.id]
    body = api(stranger).get(f"/projects/{p.id}/issues/{issue.iid}").json()
    assert body["merge_requests_count"] == 1
    assert api(owner).get(f"/projects/{p.id}/issues/{issue.iid}").json()["merge_requests_count"] == 2
    assert ids(api().get(issue_url(p, issue, "closed_by"))) == [public_mr.id]
    assert [i["merge_requests_count"] for i in api().get(f"/projects/{p.id}/issues").json()] == [1]


def test_a_guest_of_a_private_project_sees_no_merge_requests(api, make):
    owner = make.user()
    guest = make.user()
    reporter = make.user()
    p2 = make.project_with_repository(owner=owner, members={guest: GUEST, reporter: REPORTER})
    issue = make.issue(p2, owner)
    make.merge_request(p2, owner, description=f"Closes #{issue.iid}")
    assert ids(api(guest).get(issue_url(p2, issue, "closed_by"))) == []
    assert len(ids(api(reporter).get(issue_url(p2, issue, "closed_by")))) == 1


def test_the_issue_side_costs_the_same_for_one_merge_request_as_for_many(api, make, runtime):
    owner, p = owned(make)
    issues = [make.issue(p, owner) for _ in range(3)]
    make.merge_request(p, owner, description=f"Closes #{issues[0].iid}")

    calls = [
        lambda: api(owner).get(issue_url(p, issues[0], "closed_by")),
        lambda: api(owner).get(issue_url(p, issues[0], "related_merge_requests")),
        lambda: api(owner).get(f"/projects/{p.id}/issues"),
        lambda: api(owner).get(f"/projects/{p.id}/issues/{issues[0].iid}"),
    ]
    before = [count(runtime, call) for call in calls]
    for i in range(6):
        make.merge_request(
            p,
            owner,
            labels=[make.label(project=p)],
            assignees=[make.user()],
            description=f"Closes #{issues[i % 3].iid}",
        )
    for _ in range(5):
        issues.append(make.issue(p, owner))
    assert len(calls[0]().json()) == 3
    assert [count(runtime, call) for call in calls] == before


def test_a_hidden_issue_is_404(api, make):
    owner, p = owned(make)
    issue = make.issue(p, owner)
    r = api(make.user()).get(issue_url(p, issue, "closed_by"))
    assert r.status_code == 404
